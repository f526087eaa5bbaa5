//! In-repo MCP (Model Context Protocol) test servers.
//!
//! The crate serves one MCP connection of the *handshake era* (protocol revisions
//! 2024-11-05 … 2025-11-25: JSON-RPC 2.0 over newline-delimited JSON) on any pair of
//! [`tokio::io::AsyncRead`] / [`tokio::io::AsyncWrite`] streams. It is used by the
//! client's tests (over [`tokio::io::duplex`]), by the interop harness (through the two
//! binaries `mcp-echo-server` and `mcp-chaos-server`, which serve on stdin/stdout) and by
//! the CLI demo, which embeds a server in-process.
//!
//! Entry point: [`serve`] with a [`ServerConfig`] (or [`serve_with`], sharing a [`ListenBus`]
//! between connections); it returns how the connection
//! [`Ended`]. Requests are handled concurrently (one task per request, one writer), so a
//! slow tool call does not block others and progress notifications interleave with other
//! answers. The tool, resource and prompt catalogue is documented on [`ServerConfig`].
//!
//! [`http::serve`] serves the same connections over Streamable HTTP and the legacy HTTP+SSE
//! transport, one [`serve`] per HTTP session, with HTTP chaos ([`http::Fault`]); the binaries
//! do so with `--http ADDR`.
//!
//! By default the server speaks only the handshake era. [`ServerConfig::era`] makes it a modern
//! (2026-07-28: stateless, `server/discover`, per-request `_meta`, MRTR) or a dual-era server,
//! and [`ServerConfig::probe`] says how a handshake-era server reacts to the modern probe
//! `server/discover`, so that a client's era negotiation can be tested against each kind.
//!
//! The server speaks only the protocol; it never prints to stdout except through the
//! writer it was given. Diagnostics go through [`tracing`].

mod bus;
mod catalog;
pub mod cli;
mod config;
mod conformance;
mod connection;
pub mod http;
mod listen;
mod methods;
mod modern;
mod protocol;
mod rpc;
mod server;
mod tasks;
mod tools;

pub use bus::{ListenBus, ListenEvent};
pub use config::{
    Era, HOSTILE_TEXT, Handshake, Linger, ListenEnd, ListenHonor, Probe, Served, ServerConfig,
};
pub use listen::SUBSCRIPTION_ID;
pub use protocol::{
    LATEST_PROTOCOL_VERSION, LOGGER_NAME, MODERN_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS,
    codes,
};
pub use server::{Ended, serve, serve_with};
