//! [`Fault`]: how an HTTP server misbehaves, and its command-line names.

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
}

impl Fault {
    /// Every fault's name, as `--http-chaos` takes it (`:ARG` where one is needed).
    pub const NAMES: [&'static str; 17] = [
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
            _ => return None,
        })
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            assert_eq!(Fault::from_name(&f.name()), Some(f), "{}", f.name());
        }
        for bad in [
            "slow",
            "status:200",
            "redirect:302",
            "never:1",
            "nope",
            "big-json:x",
        ] {
            assert_eq!(Fault::from_name(bad), None, "{bad}");
        }
    }
}
