//! What a method handler produces: a [`Reply`], or an [`RpcError`] to answer with.
//!
//! A leaf: the connection, the catalogue, the tools and both eras' methods speak it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::protocol::codes;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            e["data"] = d.clone();
        }
        e
    }

    /// Read a JSON-RPC error object sent by the client.
    pub(crate) fn from_json(v: &Value) -> Self {
        Self {
            code: v.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_owned(),
            data: v.get("data").cloned(),
        }
    }
}

/// What a method handler produced.
pub(crate) enum Reply {
    /// Answer with this result.
    Result(Value),
    /// Answer with this result, then stop the server after the delay (`exit_after`).
    ResultThenExit(Value, Duration),
    /// The tool wrote its answer itself (raw bytes, a stalled frame): nothing more to send.
    Answered,
}

pub(crate) type Handled = Result<Reply, RpcError>;
