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

mod catalog;
pub mod cli;
mod config;
pub mod http;
mod listen;
mod modern;
mod server;
mod tools;

pub use config::{
    Era, HOSTILE_TEXT, Handshake, Linger, ListenEnd, ListenHonor, Probe, Served, ServerConfig,
};
pub use listen::{ListenBus, ListenEvent, SUBSCRIPTION_ID};
pub use server::{Ended, serve, serve_with};

/// Protocol revisions this server accepts and echoes back in `initialize`, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The revision answered when the client asks for one this server does not know.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Revisions of the modern (stateless, 2026-07-28) era this server supports by default
/// (see [`ServerConfig::modern_versions`]).
pub const MODERN_PROTOCOL_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The `logger` name used in every `notifications/message` this server sends.
pub const LOGGER_NAME: &str = "testserver";

/// JSON-RPC error codes this server answers with.
pub mod codes {
    /// The client sent a line that is not JSON (answered with `id: null`).
    pub const PARSE_ERROR: i64 = -32700;
    /// The client sent JSON that is not a JSON-RPC message (or a batch).
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad parameters: unknown tool or prompt, missing prompt argument, bad cursor, bad level.
    pub const INVALID_PARAMS: i64 = -32602;
    /// `resources/read` of a URI this server does not have.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// `initialize` refused on purpose (`--handshake error`).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Modern era: an HTTP header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) does not
    /// match the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// Modern era: the request needs a client capability it did not declare.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// Modern era: the protocol version is not supported (`data: {supported, requested}`);
    /// also a modern-only server's answer to `initialize`.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}
