//! The JSON-RPC error codes this client sends, reads or makes up, in one place.
//!
//! Three families: the codes of JSON-RPC 2.0 itself; the codes the MCP specification names
//! (both eras); and the codes this implementation makes up for answers a transport synthesises
//! (in JSON-RPC's range for server errors, −32000 … −32099, never sent by a server of ours).
//! This module holds numbers only: what a code *means* for a call is decided by the table
//! (`spec/`), not here.

/// JSON-RPC: the text is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a valid request object (also: a duplicate id of a request in
/// progress).
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the method does not exist or is not offered (a server that serves no listen
/// answers `subscriptions/listen` so; the client answers a server request it does not handle so).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: invalid method parameters (an unknown tool, a listen filter the server will not
/// take, an undeclared elicitation mode).
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: an internal error (a handler that panicked or could not encode its answer).
pub const INTERNAL_ERROR: i64 = -32603;
/// JSON-RPC's generic server error, the first of the implementation-defined range: the client
/// is too busy to take one more server request.
pub const SERVER_ERROR: i64 = -32000;

/// MCP: the resource named by `resources/read` does not exist.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// MCP 2026-07-28: the server does not speak the request's protocol version; `data.supported`
/// lists the versions it does.
pub const UNSUPPORTED_VERSION: i64 = -32022;
/// MCP 2026-07-28: an HTTP server found that the request's headers do not match its body.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the server needs a client capability the request did not declare.
pub const MISSING_CAPABILITY: i64 = -32021;

/// Made up by the HTTP transport when the server refused a modern POST with a non-2xx status
/// and no JSON-RPC response in the body (or answered 2xx with something that is neither JSON
/// nor SSE). Its `data.httpStatus` holds the status.
pub const HTTP_REFUSED: i64 = -32099;
/// Made up by the HTTP transport when a modern request's SSE response stream ended or broke
/// before the response: the request is lost (2026-07-28 has no resumption) and is sent again
/// under a new id (the `can_reissue` row, bounded by `Config::max_reissues`). A server that
/// sends this code itself gets the same treatment.
pub const STREAM_LOST: i64 = -32098;
/// Made up by the HTTP transport, when the client can authorize (OAuth is configured), for a
/// request the server refused with 401, or with 403 and an `insufficient_scope` challenge. Its
/// `data` holds `httpStatus` and `wwwAuthenticate`. A server that sends this code itself is
/// treated the same way (and an authorization is asked for, within the budget).
pub const AUTH_REQUIRED: i64 = -32097;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_distinct() {
        let mut all = [
            PARSE_ERROR,
            INVALID_REQUEST,
            METHOD_NOT_FOUND,
            INVALID_PARAMS,
            INTERNAL_ERROR,
            SERVER_ERROR,
            RESOURCE_NOT_FOUND,
            UNSUPPORTED_VERSION,
            HEADER_MISMATCH,
            MISSING_CAPABILITY,
            HTTP_REFUSED,
            STREAM_LOST,
            AUTH_REQUIRED,
        ];
        all.sort_unstable();
        assert!(all.windows(2).all(|w| w[0] != w[1]));
    }
}
