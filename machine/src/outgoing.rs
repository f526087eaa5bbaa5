//! What the machine hands a transport to send: a frame's bytes ([`Outgoing`]) and its typed
//! [`Head`], built where the bytes are built, so that no transport reads the JSON again to
//! learn what it is.

use std::borrow::Cow;

use serde_json::Value;

use crate::headers::{self, PROTOCOL_VERSION_META};
use crate::request::RequestId;

/// What kind of JSON-RPC message a frame the machine wrote is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// A request (a caller's call, `initialize`, `server/discover`, a listen, a restore): it
    /// has an id and a method, and the server answers it.
    Request {
        /// Its id.
        id: RequestId,
        /// A request of the machine's own (the handshake, a session restore, a listen, the
        /// `tools/list` of a relist): no caller reads its answer, so a transport that keeps
        /// something of such answers (the tool catalog) must read it itself. `false` for a
        /// caller's request.
        own: bool,
    },
    /// A notification: a method, no id, no answer.
    Notification,
    /// A response to a server request (a result or an error): an id the server chose, no
    /// method.
    Response,
}

/// What a transport needs to know of a frame the machine wrote, known when the machine wrote
/// it: its kind and id, its method, whether it is of the modern era (2026-07-28) and what its
/// standard headers mirror, and the request a cancellation names. Every field says what the
/// bytes say; none is extra information.
///
/// Not a parse of the frame, and not all of it: the params themselves (a `tools/call`'s
/// arguments, for its `Mcp-Param-*` headers) are only in the bytes. Small on purpose (it
/// travels inside every [`crate::Action::Send`]): what only a modern frame has is boxed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Head {
    /// Request (with its id), notification or response.
    pub kind: FrameKind,
    /// The method of a request or a notification; `None` for a response.
    pub method: Option<Cow<'static, str>>,
    /// What a frame of the modern era (2026-07-28) says of itself: `Some` exactly when its
    /// `params._meta` names a protocol version ([`headers::is_modern`]); `None` for the
    /// handshake era's frames and for responses.
    pub modern: Option<Box<Modern>>,
    /// For a `notifications/cancelled`: the request it names (`params.requestId`, when an
    /// integer that a request id of this client can be). `None` for every other frame.
    pub cancels: Option<RequestId>,
}

impl Head {
    /// The head of a frame of `kind` and `method` whose params are `params` as written.
    pub(crate) fn new(kind: FrameKind, method: &str, params: Option<&Value>) -> Head {
        let version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(PROTOCOL_VERSION_META))
            .and_then(Value::as_str);
        let modern = version.map(|version| {
            let name = headers::name_field(method)
                .and_then(|field| params?.get(field)?.as_str())
                .map(str::to_owned);
            Box::new(Modern {
                version: known(version, &crate::protocol::MODERN_PROTOCOL_VERSIONS),
                name,
            })
        });
        let cancels = (method == CANCELLED)
            .then(|| params?.get("requestId")?.as_u64())
            .flatten();
        Head {
            kind,
            method: Some(known(method, &METHODS)),
            modern,
            cancels,
        }
    }

    /// The head of a response.
    pub(crate) fn response() -> Head {
        Head {
            kind: FrameKind::Response,
            method: None,
            modern: None,
            cancels: None,
        }
    }

    /// Marks a request as the machine's own (see [`FrameKind::Request`]).
    pub(crate) fn mark_own(&mut self) {
        if let FrameKind::Request { own, .. } = &mut self.kind {
            *own = true;
        }
    }

    /// Whether it is a request of the machine's own (see [`FrameKind::Request`]).
    pub fn own(&self) -> bool {
        matches!(self.kind, FrameKind::Request { own: true, .. })
    }

    /// The protocol version a modern frame's `_meta` names.
    pub fn version(&self) -> Option<&str> {
        Some(&self.modern.as_ref()?.version)
    }

    /// What a modern frame's `Mcp-Name` header carries.
    pub fn name(&self) -> Option<&str> {
        self.modern.as_ref()?.name.as_deref()
    }

    /// The id of a request.
    pub fn request(&self) -> Option<RequestId> {
        match self.kind {
            FrameKind::Request { id, .. } => Some(id),
            FrameKind::Notification | FrameKind::Response => None,
        }
    }

    /// Whether it is of the modern era (2026-07-28): its `_meta` names a protocol version.
    pub fn is_modern(&self) -> bool {
        self.modern.is_some()
    }
}

/// What a modern (2026-07-28) frame's standard headers mirror, beside its method.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Modern {
    /// The protocol version its `params._meta` names (the `_meta` key
    /// [`headers::PROTOCOL_VERSION_META`], a string): its `MCP-Protocol-Version` header.
    pub version: Cow<'static, str>,
    /// What its `Mcp-Name` header carries: the string `params.name` of `tools/call` and
    /// `prompts/get`, `params.uri` of `resources/read` (see [`headers::name_field`]); `None`
    /// for other methods, or when that member is not a string.
    pub name: Option<String>,
}

/// `notifications/cancelled`.
const CANCELLED: &str = "notifications/cancelled";

/// The methods the machine writes often, kept without a copy.
const METHODS: [&str; 23] = [
    "tools/call",
    "tools/list",
    "initialize",
    "notifications/initialized",
    CANCELLED,
    "ping",
    "server/discover",
    "subscriptions/listen",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/get",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "notifications/progress",
    "notifications/roots/list_changed",
    "tasks/get",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
];

/// `s` without a copy when it is one of `known`, else a copy.
fn known<const N: usize>(s: &str, known: &[&'static str; N]) -> Cow<'static, str> {
    match known.iter().find(|k| **k == s) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(s.to_owned()),
    }
}

/// A frame the machine wrote: the JSON bytes that go on the wire (no newline) and their
/// [`Head`]. Derefs to the bytes, so it reads as the `Vec<u8>` it was before the head came.
///
/// Not a general JSON-RPC message type: only the machine builds one (a transport given bare
/// bytes has no head to trust).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outgoing {
    /// What the bytes are.
    pub head: Head,
    /// The JSON bytes (no newline), exactly as they go on the wire.
    pub bytes: Vec<u8>,
}

impl std::ops::Deref for Outgoing {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::ops::DerefMut for Outgoing {
    /// The bytes, to change in place (tests that tamper with a recorded frame); the head is
    /// left as it was.
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

impl AsRef<[u8]> for Outgoing {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl From<Outgoing> for Vec<u8> {
    /// The bytes; the head is dropped.
    fn from(frame: Outgoing) -> Vec<u8> {
        frame.bytes
    }
}
