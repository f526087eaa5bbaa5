//! [`RequestLog`]: every request an HTTP test server's origins saw, so that a test can check
//! what reached where (a secret sent to another origin, a document fetched that must not be,
//! how many resumptions a client made).

use std::sync::{Arc, Mutex};

use super::session::lock;

/// The most requests a log keeps (later ones are counted, not kept).
pub const KEPT_REQUESTS: usize = 10_000;

/// The most body bytes kept per request (bodies are kept on the other origin only).
pub const KEPT_BODY_BYTES: usize = 64 << 10;

/// Which listener of a server saw a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The MCP endpoint's listener.
    Main,
    /// The second listener ([`super::HttpConfig::other_origin`]): "another origin" the
    /// authorization faults point a client at.
    Other,
}

/// One request as an origin saw it: not a parsed message, only what came on the wire.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Which listener.
    pub origin: Origin,
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target: path and query.
    pub target: String,
    /// The headers, names in lower case, values as lossy UTF-8, in order.
    pub headers: Vec<(String, String)>,
    /// The body's first [`KEPT_BODY_BYTES`] bytes (the other origin only; empty on the main
    /// one, whose bodies are the MCP messages).
    pub body: Vec<u8>,
}

impl Seen {
    /// The path of the target (without its query).
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether `needle` appears anywhere in this request: target, header values, body.
    pub fn contains(&self, needle: &str) -> bool {
        self.target.contains(needle)
            || self.headers.iter().any(|(_, v)| v.contains(needle))
            || String::from_utf8_lossy(&self.body).contains(needle)
    }
}

#[derive(Debug, Default)]
struct Inner {
    kept: Vec<Seen>,
    total: usize,
}

/// What the origins of one server saw, shared with the test (clones share it). Bounded: the
/// first [`KEPT_REQUESTS`] requests are kept, later ones only counted.
#[derive(Debug, Clone, Default)]
pub struct RequestLog(Arc<Mutex<Inner>>);

impl RequestLog {
    /// Records one request.
    pub(super) fn push(&self, seen: Seen) {
        let mut inner = lock(&self.0);
        inner.total += 1;
        if inner.kept.len() < KEPT_REQUESTS {
            inner.kept.push(seen);
        }
    }

    /// The requests kept so far, in the order they came.
    pub fn all(&self) -> Vec<Seen> {
        lock(&self.0).kept.clone()
    }

    /// How many requests came (kept or not).
    pub fn total(&self) -> usize {
        lock(&self.0).total
    }

    /// The requests kept that `origin` saw.
    pub fn at(&self, origin: Origin) -> Vec<Seen> {
        lock(&self.0)
            .kept
            .iter()
            .filter(|s| s.origin == origin)
            .cloned()
            .collect()
    }
}

/// The headers of a request as [`Seen`] keeps them.
pub(super) fn headers_of(headers: &hyper::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(n: usize) -> Seen {
        Seen {
            origin: Origin::Main,
            method: "GET".into(),
            target: format!("/x/{n}?q=1"),
            headers: vec![("authorization".into(), "Bearer s3cret".into())],
            body: b"code=abc".to_vec(),
        }
    }

    #[test]
    fn the_log_is_bounded_and_counts_everything() {
        let log = RequestLog::default();
        for n in 0..KEPT_REQUESTS + 5 {
            log.push(seen(n));
        }
        assert_eq!(log.all().len(), KEPT_REQUESTS);
        assert_eq!(log.total(), KEPT_REQUESTS + 5);
        assert!(log.at(Origin::Other).is_empty());
        let first = &log.all()[0];
        assert_eq!(first.path(), "/x/0");
        assert_eq!(first.header("authorization"), Some("Bearer s3cret"));
        assert!(first.contains("s3cret") && first.contains("code=abc") && first.contains("q=1"));
        assert!(!first.contains("nothing"));
    }
}
