//! [`Fault`]: how an HTTP server misbehaves, and its command-line names; [`AuthKind`]: how
//! its authorization misleads a client (the `auth:KIND` fault).

use std::time::Duration;

/// One way the HTTP transports misbehave (`--http-chaos NAME[:ARG]`).
///
/// Unless said otherwise a fault hits POSTs carrying a request other than `initialize` (so
/// that a session is set up first), at most [`super::HttpConfig::fault_times`] of them; later
/// requests are served properly, so that a client's recovery can be tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// `slow:MS`: the request reaches the server `MS` ms late (the answer is as late).
    Slow(Duration),
    /// `never`: the POST is never answered (no status line, the connection stays open).
    Never,
    /// `drop-stream[:N]`: the answer's SSE stream starts with a priming event (an event id,
    /// `retry: 100`) and `N` whole events (default 0), then the connection is cut in the middle
    /// of the next event. The events are kept: a `GET` with `Last-Event-ID` replays those after
    /// it (resumption).
    DropStream(u32),
    /// `drop-stream-no-ids`: like [`Fault::DropStream`] without event ids: nothing can be
    /// resumed, the answer is lost.
    DropStreamNoIds,
    /// `close-stream`: the answer's SSE stream sends its priming event (an event id,
    /// `retry: 100`) and ends cleanly, as a server polling with SEP-1699 does; the answer is kept
    /// for a `GET` with `Last-Event-ID`.
    CloseStream,
    /// `expire-404`: the session expires at this request, which is answered `404`, like every
    /// later request carrying its id (the client must initialize a new session).
    Expire404,
    /// `expire-400`: like [`Fault::Expire404`] with `400` and a JSON-RPC error "unknown
    /// session" (what some servers answer).
    Expire400,
    /// `get-405`: every `GET` (standalone stream, resumption) is answered `405`; not counted.
    Get405,
    /// `status:CODE`: the POST is answered with this status (e.g. 500, 503) and a text body.
    Status(u16),
    /// `big-json:BYTES`: a JSON answer (`application/json`) of `BYTES` bytes.
    BigJson(usize),
    /// `big-event:BYTES`: an SSE answer whose one event carries `BYTES` bytes of data.
    BigEvent(usize),
    /// `garbage-sse`: the SSE answer starts with well-framed garbage (data that is not JSON, a
    /// JSON text broken over two events, an unknown event type, a line without a colon, a
    /// comment), then the real answer.
    GarbageSse,
    /// `broken-sse`: the SSE answer starts with broken framing (bytes that are not UTF-8, a
    /// field line without its end), then the real answer.
    BrokenSse,
    /// `html`: `200` with a `text/html` body instead of an answer.
    Html,
    /// `endless-sse`: an SSE stream of keep-alive comments that never ends and never answers.
    EndlessSse,
    /// `redirect:CODE`: a `307` or `308` to the same path on another origin.
    Redirect(u16),
    /// `close-after-headers`: `200` with `Content-Length: 4096`, then the connection closes.
    CloseAfterHeaders,
    /// `keepalive-flood:BYTES`: the SSE answer starts with `BYTES` bytes of `: keepalive`
    /// comments (each ended by an empty line), then the real answer.
    KeepaliveFlood(usize),
    /// `lenient-sse`: the SSE answer starts with framing the WHATWG event-stream rules accept
    /// although it is unusual (a byte order mark, a line without a colon, an unknown field,
    /// `retry: abc`, a message split over repeated `data:` fields, lines ended by a lone CR,
    /// `data:` without its space), then the real answer.
    LenientSse,
    /// `retry-zero`: the SSE answer is a priming event (an event id, `retry: 0`) and one log
    /// notification (progress, so worth resuming), then the connection is cut: the answer
    /// never comes. Every `GET` (the standalone stream and every
    /// resumption, with `Last-Event-ID` or not) is answered the same way, not counted.
    RetryZero,
    /// `stuck-notification[:all]`: the `POST` of `notifications/initialized` (with `all`: of
    /// every notification) is handed to the session and never answered; not counted.
    StuckNotification {
        /// Every notification, not only `notifications/initialized`.
        all: bool,
    },
    /// `get-never`: the standalone `GET` stream (no `Last-Event-ID`) is accepted and never
    /// answered (no status line); not counted.
    GetNever,
    /// `empty-200`: `200` with `Content-Type: application/json` and an empty body.
    Empty200,
    /// `sse-as-json`: the real answer framed as an SSE event, served as `application/json`.
    SseAsJson,
    /// `big-header:BYTES`: the real answer with one more header line of about `BYTES` bytes.
    BigHeader(usize),
    /// `expire-loop`: every session (counted at its `initialize`) is dropped right after its
    /// handshake: any later request carrying its id is answered `404`.
    ExpireLoop,
    /// `auth:KIND`: every request to the MCP endpoint without the token this server issued is
    /// answered `401` with a `WWW-Authenticate: Bearer` challenge, and the authorization
    /// documents mislead as [`AuthKind`] says; not counted.
    Auth(AuthKind),
}

/// How the authorization of an `auth:KIND` server misleads a client. The server runs a second
/// origin (another listener, [`super::HttpConfig::other_origin`]) that records what reaches
/// it; "the other origin" below is its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthKind {
    /// `file-endpoint`: the authorization server metadata names `file:///etc/passwd` as the
    /// authorization endpoint (what a client must never open).
    FileEndpoint,
    /// `private-metadata`: the challenge's `resource_metadata` is in another address class
    /// than the endpoint: the other origin when it is (loopback, private or link-local where
    /// the endpoint is not), else `http://169.254.169.254/…` (the cloud metadata address).
    PrivateMetadata,
    /// `http-issuer`: the resource metadata names an `http://` issuer that is not on
    /// loopback: the other origin when it is not on loopback, else
    /// `http://hostile-issuer.invalid`.
    HttpIssuer,
    /// `huge-metadata`: the resource metadata is a JSON document of 64 MiB (streamed, no
    /// `Content-Length`).
    HugeMetadata,
    /// `slow-metadata`: the resource metadata is never answered (no status line).
    SlowMetadata,
    /// `redirect-metadata`: the resource metadata answers `302` to the other origin.
    RedirectMetadata,
    /// `expires-max`: a whole grant flow that works (metadata, registration, an authorization
    /// endpoint that redirects at once, a token endpoint) but whose tokens say
    /// `expires_in: 18446744073709551615`; the MCP endpoint serves a request carrying it.
    ExpiresMax,
    /// `password-url`: the challenge names no metadata and none is found at the well-known
    /// places (`404`): for an endpoint URL carrying `user:password@`, whose errors name it.
    PasswordUrl,
    /// `grant`: a whole grant flow that works, tokens valid for an hour: the baseline of the
    /// others (and the server of what a client's own side must survive: its login listener,
    /// its token store).
    Grant,
}

impl AuthKind {
    /// Every kind with its name, as `auth:KIND` takes it.
    pub const ALL: [(AuthKind, &'static str); 9] = [
        (AuthKind::FileEndpoint, "file-endpoint"),
        (AuthKind::PrivateMetadata, "private-metadata"),
        (AuthKind::HttpIssuer, "http-issuer"),
        (AuthKind::HugeMetadata, "huge-metadata"),
        (AuthKind::SlowMetadata, "slow-metadata"),
        (AuthKind::RedirectMetadata, "redirect-metadata"),
        (AuthKind::ExpiresMax, "expires-max"),
        (AuthKind::PasswordUrl, "password-url"),
        (AuthKind::Grant, "grant"),
    ];

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<AuthKind> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    /// This kind's name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("?", |(_, n)| n)
    }
}

impl Fault {
    /// Every fault's name, as `--http-chaos` takes it (`:ARG` where one is needed).
    pub const NAMES: [&'static str; 27] = [
        "slow:MS",
        "never",
        "drop-stream[:N]",
        "drop-stream-no-ids",
        "close-stream",
        "expire-404",
        "expire-400",
        "get-405",
        "status:CODE",
        "big-json:BYTES",
        "big-event:BYTES",
        "garbage-sse",
        "broken-sse",
        "html",
        "endless-sse",
        "redirect:CODE",
        "close-after-headers",
        "keepalive-flood:BYTES",
        "lenient-sse",
        "retry-zero",
        "stuck-notification[:all]",
        "get-never",
        "empty-200",
        "sse-as-json",
        "big-header:BYTES",
        "expire-loop",
        "auth:KIND",
    ];

    /// The fault called `name` (see [`Fault::NAMES`]), e.g. `slow:300` or `status:503`.
    pub fn from_name(name: &str) -> Option<Fault> {
        let (head, arg) = match name.split_once(':') {
            Some((h, a)) => (h, Some(a)),
            None => (name, None),
        };
        let num = || arg.and_then(|a| a.parse::<u64>().ok());
        let size = || num().and_then(|n| usize::try_from(n).ok());
        let status =
            |ok: fn(u16) -> bool| num().and_then(|n| u16::try_from(n).ok()).filter(|c| ok(*c));
        Some(match (head, arg) {
            ("slow", Some(_)) => Fault::Slow(Duration::from_millis(num()?)),
            ("never", None) => Fault::Never,
            ("drop-stream", None) => Fault::DropStream(0),
            ("drop-stream", Some(_)) => Fault::DropStream(u32::try_from(num()?).ok()?),
            ("drop-stream-no-ids", None) => Fault::DropStreamNoIds,
            ("close-stream", None) => Fault::CloseStream,
            ("html", None) => Fault::Html,
            ("expire-404", None) => Fault::Expire404,
            ("expire-400", None) => Fault::Expire400,
            ("get-405", None) => Fault::Get405,
            ("status", Some(_)) => Fault::Status(status(|c| (400..600).contains(&c))?),
            ("big-json", Some(_)) => Fault::BigJson(size()?),
            ("big-event", Some(_)) => Fault::BigEvent(size()?),
            ("garbage-sse", None) => Fault::GarbageSse,
            ("broken-sse", None) => Fault::BrokenSse,
            ("endless-sse", None) => Fault::EndlessSse,
            ("redirect", Some(_)) => Fault::Redirect(status(|c| c == 307 || c == 308)?),
            ("close-after-headers", None) => Fault::CloseAfterHeaders,
            ("keepalive-flood", Some(_)) => Fault::KeepaliveFlood(size()?),
            ("lenient-sse", None) => Fault::LenientSse,
            ("retry-zero", None) => Fault::RetryZero,
            ("stuck-notification", None) => Fault::StuckNotification { all: false },
            ("stuck-notification", Some("all")) => Fault::StuckNotification { all: true },
            ("get-never", None) => Fault::GetNever,
            ("empty-200", None) => Fault::Empty200,
            ("sse-as-json", None) => Fault::SseAsJson,
            ("big-header", Some(_)) => Fault::BigHeader(size()?),
            ("expire-loop", None) => Fault::ExpireLoop,
            ("auth", Some(kind)) => Fault::Auth(AuthKind::from_name(kind)?),
            _ => return None,
        })
    }

    /// Whether this fault hits requests one by one (counted by
    /// [`super::HttpConfig::fault_times`]); the others hit every `GET`
    /// (`get-405`, `get-never`), notifications (`stuck-notification`), sessions at their
    /// `initialize` (`expire-loop`, counted there) or everything (`auth:KIND`).
    pub fn per_request(self) -> bool {
        !matches!(
            self,
            Fault::Get405
                | Fault::GetNever
                | Fault::StuckNotification { .. }
                | Fault::ExpireLoop
                | Fault::Auth(_)
        )
    }

    /// The command-line name of this fault, with its argument.
    pub fn name(self) -> String {
        match self {
            Fault::Slow(d) => format!("slow:{}", d.as_millis()),
            Fault::Never => "never".into(),
            Fault::DropStream(0) => "drop-stream".into(),
            Fault::DropStream(n) => format!("drop-stream:{n}"),
            Fault::DropStreamNoIds => "drop-stream-no-ids".into(),
            Fault::CloseStream => "close-stream".into(),
            Fault::Html => "html".into(),
            Fault::Expire404 => "expire-404".into(),
            Fault::Expire400 => "expire-400".into(),
            Fault::Get405 => "get-405".into(),
            Fault::Status(c) => format!("status:{c}"),
            Fault::BigJson(n) => format!("big-json:{n}"),
            Fault::BigEvent(n) => format!("big-event:{n}"),
            Fault::GarbageSse => "garbage-sse".into(),
            Fault::BrokenSse => "broken-sse".into(),
            Fault::EndlessSse => "endless-sse".into(),
            Fault::Redirect(c) => format!("redirect:{c}"),
            Fault::CloseAfterHeaders => "close-after-headers".into(),
            Fault::KeepaliveFlood(n) => format!("keepalive-flood:{n}"),
            Fault::LenientSse => "lenient-sse".into(),
            Fault::RetryZero => "retry-zero".into(),
            Fault::StuckNotification { all: false } => "stuck-notification".into(),
            Fault::StuckNotification { all: true } => "stuck-notification:all".into(),
            Fault::GetNever => "get-never".into(),
            Fault::Empty200 => "empty-200".into(),
            Fault::SseAsJson => "sse-as-json".into(),
            Fault::BigHeader(n) => format!("big-header:{n}"),
            Fault::ExpireLoop => "expire-loop".into(),
            Fault::Auth(kind) => format!("auth:{}", kind.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_parses() {
        for listed in Fault::NAMES {
            let code = if listed.starts_with("redirect") {
                "307"
            } else {
                "503"
            };
            let sample = listed
                .replace("[:N]", "")
                .replace("[:all]", "")
                .replace("MS", "5")
                .replace("CODE", code)
                .replace("BYTES", "10")
                .replace("KIND", "expires-max");
            assert!(Fault::from_name(&sample).is_some(), "{listed}: {sample}");
        }
        for (kind, name) in AuthKind::ALL {
            assert_eq!(AuthKind::from_name(name), Some(kind));
            assert_eq!(kind.name(), name);
        }
    }

    #[test]
    fn names_round_trip() {
        for f in [
            Fault::Slow(Duration::from_millis(300)),
            Fault::Never,
            Fault::DropStream(0),
            Fault::DropStream(2),
            Fault::DropStreamNoIds,
            Fault::CloseStream,
            Fault::Html,
            Fault::Expire404,
            Fault::Expire400,
            Fault::Get405,
            Fault::Status(503),
            Fault::BigJson(10),
            Fault::BigEvent(10),
            Fault::GarbageSse,
            Fault::BrokenSse,
            Fault::EndlessSse,
            Fault::Redirect(307),
            Fault::CloseAfterHeaders,
            Fault::KeepaliveFlood(17 << 20),
            Fault::LenientSse,
            Fault::RetryZero,
            Fault::StuckNotification { all: false },
            Fault::StuckNotification { all: true },
            Fault::GetNever,
            Fault::Empty200,
            Fault::SseAsJson,
            Fault::BigHeader(1 << 20),
            Fault::ExpireLoop,
        ]
        .into_iter()
        .chain(AuthKind::ALL.map(|(k, _)| Fault::Auth(k)))
        {
            assert_eq!(Fault::from_name(&f.name()), Some(f), "{}", f.name());
        }
        for bad in [
            "slow",
            "status:200",
            "redirect:302",
            "never:1",
            "nope",
            "big-json:x",
            "keepalive-flood",
            "stuck-notification:some",
            "auth",
            "auth:nope",
            "retry-zero:1",
        ] {
            assert_eq!(Fault::from_name(bad), None, "{bad}");
        }
    }
}
