//! In-repo MCP (Model Context Protocol) test servers.
//!
//! The crate serves one MCP connection of the *handshake era* (protocol revisions
//! 2024-11-05 … 2025-11-25: JSON-RPC 2.0 over newline-delimited JSON) on any pair of
//! [`tokio::io::AsyncRead`] / [`tokio::io::AsyncWrite`] streams. It is used by the
//! client's tests (over [`tokio::io::duplex`]), by the interop harness (through the two
//! binaries `mcp-echo-server` and `mcp-chaos-server`, which serve on stdin/stdout) and by
//! the CLI demo, which embeds a server in-process.
//!
//! Entry point: [`serve`] with a [`ServerConfig`]; it returns how the connection
//! [`Ended`]. Requests are handled concurrently (one task per request, one writer), so a
//! slow tool call does not block others and progress notifications interleave with other
//! answers. The tool, resource and prompt catalogue is documented on [`ServerConfig`].
//!
//! [`http::serve`] serves the same connections over Streamable HTTP and the legacy HTTP+SSE
//! transport, one [`serve`] per HTTP session, with HTTP chaos ([`http::Fault`]); the binaries
//! do so with `--http ADDR`.
//!
//! The server speaks only the protocol; it never prints to stdout except through the
//! writer it was given. Diagnostics go through [`tracing`].

mod catalog;
pub mod cli;
mod config;
pub mod http;
mod server;
mod tools;

pub use config::{HOSTILE_TEXT, Handshake, Linger, ServerConfig};
pub use server::{Ended, serve};

/// Protocol revisions this server accepts and echoes back in `initialize`, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The revision answered when the client asks for one this server does not know.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

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
}
