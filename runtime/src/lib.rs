//! The tokio side of the MCP client: the connection driver, the transports and the typed
//! [`Client`] API. This is the crate applications depend on.
//!
//! The connection lifecycle (connecting, handshake, ready, backoff, closing) is not decided
//! here: it is the table of `spec/transitions.toml`, generated into [`mcp_machine`] and
//! model-checked. This crate runs that machine on tokio: a [`Client`] handle sends commands
//! to one driver task, which feeds the machine and carries out its actions over a transport
//! (a child process over stdio, or any byte stream).
//!
//! Guarantees a caller can rely on: every call gets exactly one answer (a result or an
//! [`Error`]); every call has a timeout (30 s by default); dropping a call's future cancels
//! it on the wire; a crashed server is respawned with exponential backoff; [`Client::stop`]
//! answers every call in flight and returns within about 100 ms even when the server hangs.
//!
//! [`trace`] checks that a run of the runtime is a behaviour of the machine: record it with
//! [`ClientBuilder::record_trace`], replay it with [`trace::replay`].
//!
//! ```no_run
//! # async fn demo() -> mcp_runtime::Result<()> {
//! use mcp_runtime::ClientBuilder;
//! let client = ClientBuilder::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"])
//!     .connect()
//!     .await?;
//! for tool in client.list_all_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("echo", serde_json::json!({"message": "hi"})).await?;
//! println!("{}", result.text());
//! client.stop().await;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod client;
mod driver;
mod error;
mod feed;
mod handler;
mod requests;
mod state;
pub mod trace;
pub mod transport;
pub mod types;

pub use crate::client::{
    Client, ClientBuilder, MIN_BACKOFF, PROGRESS_CHANNEL_CAPACITY, RequestOptions,
};
pub use crate::error::{ConnectError, Error, PaginationStop, Result};
pub use crate::feed::{Feed, FeedLimits};
pub use crate::handler::{ClientHandler, HandlerFuture, Handlers, Provides, RequestContext, Roots};
pub use crate::requests::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult,
    FormElicitation, ListRootsResult, MessageContent, ModelPreferences, Role, Root,
    SamplingMessage, UrlElicitation,
};
pub use crate::state::{ConnState, Transition};
pub use crate::types::{
    CompleteRef, ListCapability, LoggingLevel, Notification, Progress, ResourcesCapability,
    ServerCapabilities, ServerInfo, ServerNotification,
};
pub use mcp_machine::{Failure, IoCause, RpcError, TransportError};

/// A feed of server notifications: see [`Client::notifications`].
pub type Notifications = Feed<Notification>;

/// A feed of connection transitions: see [`Client::transitions`].
pub type Transitions = Feed<Transition>;
