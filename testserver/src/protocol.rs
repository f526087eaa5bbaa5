//! The protocol's names as this server knows them: the revisions it speaks, the `_meta` keys
//! and the discovery method of the modern era, how a `dual` server tells a modern request from a
//! handshake-era one, and the JSON-RPC error codes it answers with.
//!
//! A leaf: every other module of the crate may use it, and it uses none of them.

use serde_json::Value;

/// Protocol revisions this server accepts and echoes back in `initialize`, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The revision answered when the client asks for one this server does not know.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Revisions of the modern (stateless, 2026-07-28) era this server supports by default
/// (see [`crate::ServerConfig::modern_versions`]).
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

/// The modern era's discovery method.
pub(crate) const DISCOVER: &str = "server/discover";
/// `_meta` key of the request's protocol version.
pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities.
pub(crate) const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's name and version.
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Result `_meta` key of the server's name and version.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Whether a request of the `dual` era takes the modern path: `server/discover`, or any request
/// whose `params._meta` names a protocol version.
pub(crate) fn is_modern_request(method: &str, params: &Value) -> bool {
    method == DISCOVER || meta(params).is_some_and(|m| m.get(META_VERSION).is_some())
}

/// `params._meta`, when it is an object.
pub(crate) fn meta(params: &Value) -> Option<&Value> {
    params.get("_meta").filter(|m| m.is_object())
}
