//! The tokio side of the MCP client: the connection driver, the transports and the typed
//! [`Client`] API. This is the crate applications depend on.
//!
//! The connection lifecycle (connecting, handshake, ready, backoff, closing) is not decided
//! here: it is the table of `spec/` (one file per concern), generated into [`mcp_machine`] and
//! model-checked. This crate runs that machine on tokio: a [`Client`] handle sends commands
//! to one driver task, which feeds the machine and carries out its actions over a transport
//! (a child process over stdio, any byte stream, Streamable HTTP or legacy HTTP+SSE:
//! [`ClientBuilder::http`] picks between the last two by itself).
//!
//! Guarantees a caller can rely on: every call gets exactly one answer (a result or an
//! [`Error`]); every call has a timeout (30 s by default); dropping a call's future cancels
//! it on the wire; a crashed server is respawned with exponential backoff; [`Client::stop`]
//! answers every call in flight and returns within about 100 ms even when the server hangs;
//! over HTTP, an expired session is initialized again at once, and a call the server refused
//! for it is sent again once on the new session.
//!
//! [`trace`] checks that a run of the runtime is a behaviour of the machine: record it with
//! [`ClientBuilder::record_trace`], replay it with [`trace::replay`].
//!
//! # Quick start
//!
//! Connect to a stdio server, list its tools, call one, stop. (The same code is README's
//! "Library quick start"; `tests/readme.rs` keeps the two equal.)
//!
//! ```no_run
//! use mcp_runtime::ClientBuilder;
//! use serde_json::json;
//!
//! async fn run() -> mcp_runtime::Result<()> {
//!     let client = ClientBuilder::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"])
//!         .client_info("my-host", "1.0.0")
//!         .connect()
//!         .await?; // Err(Error::Connect(..)) says why, with the server's stderr
//!     for tool in client.list_all_tools().await? {
//!         println!("{}: {}", tool.name, tool.description.unwrap_or_default());
//!     }
//!     // Exactly one answer: the result, or an Error (a timeout after 30 s by default, the
//!     // connection lost, the server's error).
//!     let result = client.call_tool("get-sum", json!({"a": 2, "b": 3})).await?;
//!     println!("{}", result.text());
//!     client.stop().await; // every call in flight is answered at once
//!     client.closed().await; // the server process is shut down and reaped
//!     Ok(())
//! }
//! ```
//!
//! # A fuller host
//!
//! Roots and sampling answered for the server, a long call with its progress, and the
//! connection's transitions:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use mcp_runtime::{ClientBuilder, CreateMessageResult, Handlers, RequestOptions, Root, Roots};
//! use serde_json::json;
//!
//! async fn run() -> mcp_runtime::Result<()> {
//!     let roots = Roots::new([Root::new("file:///work").named("work")]);
//!     let handlers = Handlers::new()
//!         .roots(roots.clone())
//!         .sampling(|params, _cx| async move {
//!             let asked = params.messages.len();
//!             Ok(CreateMessageResult::text("my-model", format!("read {asked} messages")))
//!         });
//!     let builder = ClientBuilder::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"])
//!         .client_info("my-host", "1.0.0")
//!         .env("LOG_LEVEL", "info")
//!         .handler(handlers);
//!     let mut transitions = builder.transitions(); // from the very first one
//!     let client = builder.connect().await?; // Err(Error::Connect(..)) says why, with stderr
//!     for tool in client.list_all_tools().await? {
//!         println!("{}: {}", tool.name, tool.description.unwrap_or_default());
//!     }
//!     let (options, mut progress) = RequestOptions::new()
//!         .timeout(Duration::from_secs(60))
//!         .progress_channel();
//!     let call = client.call_tool_with(
//!         "trigger-long-running-operation",
//!         json!({"duration": 2, "steps": 4}),
//!         options,
//!     );
//!     tokio::pin!(call);
//!     let result = loop {
//!         tokio::select! {
//!             biased; // progress first: every notification is in the channel before the result
//!             Some(p) = progress.recv() => println!("progress {}/{:?}", p.progress, p.total),
//!             result = &mut call => break result?,
//!         }
//!     };
//!     println!("{}", result.text());
//!     roots.update(|r| r.push(Root::new("file:///home/me/notes"))); // the server is told
//!     while let Some(t) = transitions.try_recv() {
//!         println!("{} -> {} ({})", t.from(), t.to(), t.event());
//!     }
//!     client.stop().await; // every call in flight is answered at once
//!     client.closed().await; // the server process is shut down and reaped
//!     Ok(())
//! }
//! ```
//!
//! # Many servers
//!
//! A supervised group from a host's `mcpServers` file (see [`group`]; README's "Many
//! servers" is this example, `tests/readme.rs` keeps the two equal):
//!
//! ```no_run
//! use mcp_runtime::group::{ClientGroup, GroupConfig};
//! use serde_json::json;
//!
//! async fn run() -> Result<(), Box<dyn std::error::Error>> {
//!     // Claude Desktop, Cursor, Claude Code (`mcpServers`) or VS Code (`servers`) files.
//!     let config = GroupConfig::load("claude_desktop_config.json")?;
//!     let group = ClientGroup::builder()
//!         .configure(|_, b| b.wait_for_ready(true)) // calls wait for their server's handshake
//!         .start_config(&config) // all at once; one that fails keeps retrying on its own
//!         .await?;
//!     for tool in &group.view().tools {
//!         println!("{} ({} on {})", tool.name, tool.original, tool.server);
//!     }
//!     let result = group.call_tool("get-sum", json!({"a": 2, "b": 3})).await?; // routed
//!     println!("{}", result.text());
//!     group.apply(&GroupConfig::load("claude_desktop_config.json")?).await?; // a reload
//!     group.stop().await; // every server in parallel, every child reaped
//!     Ok(())
//! }
//! ```
//!
//! # What to expect
//!
//! - Calls in flight when the connection drops fail with [`Error::ConnectionLost`] and are not
//!   retried: the server may or may not have run them, and only the caller knows whether
//!   running one twice is safe. Calls made while reconnecting fail at once with
//!   [`Error::Unavailable`] (with when the next attempt is due); [`Client::ready`] waits.
//! - After a reconnect the client restores the session (the logging level, then every
//!   acknowledged subscription) before any other call is sent; a server that runs requests
//!   concurrently may still answer a later call first.
//! - A stdio server's stderr is never an error signal: each line is a `tracing` event
//!   ([`transport::SERVER_STDERR_TARGET`]), and the last lines are kept for
//!   [`ConnectError::stderr_tail`] and [`Client::server_stderr`].
//! - [`Client::call_tool`] checks a result's `structuredContent` against the `outputSchema`
//!   its tool declared in the client's latest tool listing (JSON Schema 2020-12 unless
//!   `$schema` says otherwise; no `$ref` is ever fetched): a mismatch is
//!   [`Error::OutputSchemaMismatch`], with the result inside. A tool never listed is not
//!   checked; [`ClientBuilder::validate_output`] turns the check off.
//! - With [`ClientBuilder::tasks`], a tool call the server runs as a task (the 2025-11-25
//!   tasks utility or the 2026-07-28 extension) is polled to its end inside
//!   [`Client::call_tool`]; unlike a plain call, it survives a reconnect (the task lives on the
//!   server) and is answered by the next connection. [`Client::call_tool_as_task`] gives a
//!   handle on it. See `docs/guide/tasks.md`.
//! - POSIX only (Linux, macOS): the stdio transport uses process groups and signals.
#![warn(missing_docs)]

pub mod auth;
mod cache;
mod client;
mod client_tasks;
mod command;
mod driver;
mod error;
mod feed;
pub mod group;
mod handler;
mod live_lists;
#[cfg(feature = "otel")]
pub mod otel;
mod output_schema;
mod quiet;
mod requests;
mod shown;
mod state;
mod task_handle;
mod tasks;
mod tool_catalog;
pub mod trace;
pub mod transport;
pub mod types;

pub use crate::cache::{CacheConfig, CacheStats};
pub use crate::client::Client;
pub use crate::client::builder::{ClientBuilder, MIN_BACKOFF};
pub use crate::client::options::{PROGRESS_CHANNEL_CAPACITY, RequestOptions};
pub use crate::client_tasks::MAX_CLIENT_TASKS;
pub use crate::error::{ConnectError, Error, PaginationStop, Result};
pub use crate::feed::{Feed, FeedLimits};
pub use crate::group::{ClientGroup, GroupBuilder, GroupError};
pub use crate::handler::{ClientHandler, HandlerFuture, Handlers, Provides, RequestContext, Roots};
pub use crate::live_lists::{
    CHANGE_FEED_LIMITS, DEFAULT_DEBOUNCE, DEFAULT_MIN_INTERVAL, ListChange, ListKind, ListStats,
    Lists, LiveListOptions, LiveLists, LiveStats,
};
pub use crate::requests::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult,
    FormElicitation, ListRootsResult, MessageContent, ModelPreferences, Role, Root,
    SamplingMessage, UrlElicitation,
};
pub use crate::state::{ConnState, Transition};
pub use crate::task_handle::TaskHandle;
pub use crate::tasks::{TaskOptions, TaskSupport};
pub use crate::tool_catalog::{MAX_HEADER_TOOLS, ToolCatalog};
pub use crate::types::{
    CallToolResult, CompleteRef, Content, GetPromptResult, ListCapability, LoggingLevel,
    Notification, Progress, Prompt, ReadResourceResult, Resource, ResourceTemplate,
    ResourcesCapability, ServerCapabilities, ServerInfo, ServerNotification, Tool,
};
pub use mcp_machine::codes;
pub use mcp_machine::{
    Era, EraMode, Failure, IoCause, ListenFilter, ListenStatus, MODERN_PROTOCOL_VERSIONS, RpcError,
    SUPPORTED_PROTOCOL_VERSIONS, TaskState, TaskStatus, TransportError,
};

/// A feed of server notifications: see [`Client::notifications`].
pub type Notifications = Feed<Notification>;

/// A feed of connection transitions: see [`Client::transitions`].
pub type Transitions = Feed<Transition>;
