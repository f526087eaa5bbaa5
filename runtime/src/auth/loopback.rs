//! A [`UserAgent`] for programs on the user's machine (RFC 8252 §7.3): the redirect comes back
//! to a one-shot listener bound to `127.0.0.1` on a port the system picks, and the user is
//! sent to the authorization URL by a callback (print it, open a browser).
//!
//! Anything on the machine can connect to that port, so the listener trusts no connection:
//!
//! - connections are served concurrently (at most [`MAX_CONNECTIONS`] at once: the oldest is
//!   dropped for a new one), each within its own bound: it must send its request head within
//!   the connection timeout (10 s unless [`LoopbackUserAgent::with_connection_timeout`] says
//!   otherwise) and in at most 16 KiB; a silent or slow connection never holds up another;
//! - only `GET` is answered (`405` otherwise), only on the callback path (`404` otherwise);
//! - the wait ends only on a callback whose one `state` query parameter is the `state` of the
//!   authorization URL it was given: another state, none, or several get a `400` page and the
//!   wait goes on (a forged redirect cannot end the login, nor make it fail);
//! - every page is fixed text (nothing of the request is reflected) with
//!   `Cache-Control: no-store`;
//! - every connection still open is dropped when the wait ends, and the wait gives up after
//!   its timeout.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use super::flow::{AuthError, AuthFuture, UserAgent};

/// The path of the redirect URI.
const CALLBACK: &str = "/callback";
/// The most bytes of a request head read.
const MAX_REQUEST: usize = 16 * 1024;
/// How long a connection has to send its request head, unless set otherwise.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections served at once (each holds at most 16 KiB of its request head).
pub const MAX_CONNECTIONS: usize = 64;

/// Sends the user with `show` and waits for the redirect on `127.0.0.1`. Not a web server:
/// it answers the one redirect it waits for, and short fixed pages to anything else.
pub struct LoopbackUserAgent {
    show: Arc<dyn Fn(&Url) + Send + Sync>,
    timeout: Duration,
    connection_timeout: Duration,
    listener: Mutex<Option<TcpListener>>,
}

impl std::fmt::Debug for LoopbackUserAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackUserAgent")
            .field("timeout", &self.timeout)
            .field("connection_timeout", &self.connection_timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackUserAgent {
    /// One that calls `show` with the authorization URL and waits at most `timeout` for the
    /// redirect.
    pub fn new(timeout: Duration, show: impl Fn(&Url) + Send + Sync + 'static) -> Self {
        LoopbackUserAgent {
            show: Arc::new(show),
            timeout,
            connection_timeout: CONNECTION_TIMEOUT,
            listener: Mutex::new(None),
        }
    }

    /// The same, giving each connection `bound` (instead of [`CONNECTION_TIMEOUT`]) to send
    /// its request head, and again to take the answer; a connection past it is dropped.
    pub fn with_connection_timeout(mut self, bound: Duration) -> Self {
        self.connection_timeout = bound;
        self
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<TcpListener>> {
        self.listener.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl UserAgent for LoopbackUserAgent {
    fn redirect_uri(&self) -> AuthFuture<'_, String> {
        Box::pin(async move {
            let listener = TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|e| AuthError::UserAgent(format!("no loopback listener: {e}")))?;
            let port = listener
                .local_addr()
                .map_err(|e| AuthError::UserAgent(format!("no loopback listener: {e}")))?
                .port();
            *self.slot() = Some(listener);
            Ok(format!("http://127.0.0.1:{port}{CALLBACK}"))
        })
    }

    /// Shows `url` and waits for the redirect that carries `url`'s `state` (a URL without
    /// exactly one `state` is refused: nothing would tell the real redirect from a forged
    /// one).
    fn authorize(&self, url: Url) -> AuthFuture<'_, Url> {
        Box::pin(async move {
            // Only an https URL (http only to a loopback host) is ever shown or opened.
            super::policy::check_scheme(&url).map_err(|rule| AuthError::UrlRefused {
                what: "authorization",
                url: super::policy::redact(&url),
                rule,
            })?;
            let state = only_state(&url).ok_or_else(|| {
                AuthError::UserAgent("the authorization URL has no single state".into())
            })?;
            let listener = self
                .slot()
                .take()
                .ok_or_else(|| AuthError::UserAgent("no redirect URI was made".into()))?;
            let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
            (self.show)(&url);
            let waiting = Waiting {
                port,
                state: Arc::from(state),
                bound: self.connection_timeout,
            };
            tokio::time::timeout(self.timeout, waiting.wait(listener))
                .await
                .map_err(|_| {
                    AuthError::UserAgent(format!(
                        "no redirect came back within {} s",
                        self.timeout.as_secs()
                    ))
                })?
        })
    }
}

/// The value of the one `state` query parameter of `url`; `None` when it has none, several,
/// or an empty one.
fn only_state(url: &Url) -> Option<String> {
    let mut states = url.query_pairs().filter(|(k, _)| k == "state");
    let (_, state) = states.next()?;
    (states.next().is_none() && !state.is_empty()).then(|| state.into_owned())
}

/// What the connections of one wait share.
#[derive(Clone)]
struct Waiting {
    port: u16,
    /// The state the redirect must carry.
    state: Arc<str>,
    /// Each connection's time to send its head (and again to take the answer).
    bound: Duration,
}

impl Waiting {
    /// Serves connections until one brings the redirect; that request's URL. The connections
    /// still open are dropped when it returns or is dropped (the [`JoinSet`] aborts them).
    async fn wait(self, listener: TcpListener) -> Result<Url, AuthError> {
        let (found, mut redirect) = mpsc::channel::<(Url, TcpStream)>(1);
        let mut connections = JoinSet::new();
        let mut open: VecDeque<AbortHandle> = VecDeque::new();
        loop {
            tokio::select! {
                Some((url, mut stream)) = redirect.recv() => {
                    // Answered here, not by its task: a task of the set may be dropped
                    // (for a newer connection, or when the wait ends) at any await.
                    self.answer(&mut stream, Page::Done).await;
                    return Ok(url);
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        if open.len() >= MAX_CONNECTIONS
                            && let Some(oldest) = open.pop_front()
                        {
                            oldest.abort();
                        }
                        let served = self.clone().serve(stream, found.clone());
                        open.push_back(connections.spawn(served));
                    }
                    Err(e) => {
                        // Out of descriptors, a connection reset before it was taken: the
                        // wait goes on (after a pause, not to spin on a lasting error).
                        tracing::debug!(target: "mcp::auth", error = %e,
                            "the loopback listener could not take a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(done) = connections.join_next_with_id() => {
                    let id = match done {
                        Ok((id, ())) => id,
                        Err(e) => e.id(),
                    };
                    open.retain(|h| h.id() != id);
                }
            }
        }
    }

    /// One connection: its request answered; or, when it is the redirect, its URL and itself
    /// sent to `found` (to be answered there).
    async fn serve(self, mut stream: TcpStream, found: mpsc::Sender<(Url, TcpStream)>) {
        let head = match tokio::time::timeout(self.bound, read_head(&mut stream)).await {
            Ok(Ok(head)) => head,
            Ok(Err(Head::TooLarge)) => {
                self.answer(&mut stream, Page::TooLarge).await;
                return;
            }
            // Closed before its head, or too slow: dropped without an answer.
            Ok(Err(Head::Closed)) | Err(_) => return,
        };
        match self.judge(&head) {
            Ok(url) => {
                // A second good redirect (a reload) may find the channel full: the first
                // counts, and the second is answered as the first will be.
                if let Err(mpsc::error::TrySendError::Full((_, mut stream))) =
                    found.try_send((url, stream))
                {
                    self.answer(&mut stream, Page::Done).await;
                }
            }
            Err(page) => self.answer(&mut stream, page).await,
        }
    }

    /// The redirect's URL, when `head` is a `GET` of the callback with the right state; else
    /// the page that says why not.
    fn judge(&self, head: &[u8]) -> Result<Url, Page> {
        let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
        let line = std::str::from_utf8(line)
            .ok()
            .filter(|l| l.is_ascii())
            .ok_or(Page::BadRequest)?;
        let mut parts = line.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Page::BadRequest);
        };
        if !version.starts_with("HTTP/1.") || !target.starts_with('/') {
            return Err(Page::BadRequest);
        }
        if method != "GET" {
            return Err(Page::MethodNotAllowed);
        }
        let url = Url::parse(&format!("http://127.0.0.1:{}{target}", self.port))
            .map_err(|_| Page::BadRequest)?;
        if url.path() != CALLBACK {
            return Err(Page::NotFound);
        }
        match only_state(&url) {
            Some(state) if same(state.as_bytes(), self.state.as_bytes()) => Ok(url),
            _ => Err(Page::WrongState),
        }
    }

    /// Writes `page` (within the connection's bound) and closes.
    async fn answer(&self, stream: &mut TcpStream, page: Page) {
        let response = page.response();
        let _ = tokio::time::timeout(self.bound, async {
            stream.write_all(response.as_bytes()).await?;
            stream.shutdown().await
        })
        .await;
    }
}

/// Why a request head could not be had.
enum Head {
    /// The connection ended before the head did.
    Closed,
    /// No end of the head within [`MAX_REQUEST`] bytes.
    TooLarge,
}

/// The request head (up to its blank line) of `stream`, at most [`MAX_REQUEST`] bytes.
async fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, Head> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 2048];
    loop {
        let room = MAX_REQUEST - buf.len();
        if room == 0 {
            return Err(Head::TooLarge);
        }
        let want = room.min(chunk.len());
        let n = match stream.read(&mut chunk[..want]).await {
            Ok(0) | Err(_) => return Err(Head::Closed),
            Ok(n) => n,
        };
        // The blank line may straddle two reads: look from 3 bytes back.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = memchr::memmem::find(&buf[from..], b"\r\n\r\n") {
            buf.truncate(from + end + 4);
            return Ok(buf);
        }
    }
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The listener's answers: fixed text, nothing of the request in them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Page {
    /// The redirect: the login goes on in the program.
    Done,
    /// A callback that is not the answer to this authorization.
    WrongState,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    TooLarge,
}

impl Page {
    fn response(self) -> String {
        let (status, body) = match self {
            Page::Done => (
                "200 OK",
                "<p>The client got the answer; you can close this window.",
            ),
            Page::WrongState => (
                "400 Bad Request",
                "<p>This is not the answer to the authorization the client is waiting for.",
            ),
            Page::BadRequest => ("400 Bad Request", "<p>Bad request."),
            Page::NotFound => ("404 Not Found", "<p>Not found."),
            Page::MethodNotAllowed => ("405 Method Not Allowed", "<p>Only GET."),
            Page::TooLarge => (
                "431 Request Header Fields Too Large",
                "<p>Request too large.",
            ),
        };
        let body = format!("<!doctype html><title>Authorization</title>{body}\n");
        let allow = if self == Page::MethodNotAllowed {
            "allow: GET\r\n"
        } else {
            ""
        };
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\n\
             content-length: {}\r\ncache-control: no-store\r\nreferrer-policy: no-referrer\r\n\
             x-content-type-options: nosniff\r\ncontent-security-policy: default-src 'none'\r\n\
             {allow}connection: close\r\n\r\n{body}",
            body.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    const AUTHORIZE: &str = "https://as.example/authorize?x=1&state=s1";

    /// An agent with its redirect URI made; the URI.
    async fn agent(timeout: Duration) -> (Arc<LoopbackUserAgent>, String) {
        let agent = LoopbackUserAgent::new(timeout, |_| {});
        let redirect = agent.redirect_uri().await.unwrap();
        (Arc::new(agent), redirect)
    }

    /// The agent's wait for the redirect of [`AUTHORIZE`], on a task of its own.
    fn authorize(
        agent: &Arc<LoopbackUserAgent>,
    ) -> tokio::task::JoinHandle<Result<Url, AuthError>> {
        let agent = Arc::clone(agent);
        tokio::spawn(async move { agent.authorize(Url::parse(AUTHORIZE).unwrap()).await })
    }

    fn addr(redirect: &str) -> std::net::SocketAddr {
        Url::parse(redirect).unwrap().socket_addrs(|| None).unwrap()[0]
    }

    /// `request` sent raw on a new connection; the whole answer (until the listener closes).
    async fn raw(redirect: &str, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr(redirect)).await.unwrap();
        s.write_all(request).await.unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    async fn get(redirect: &str, query: &str) -> String {
        let port = addr(redirect).port();
        let request = format!("GET {CALLBACK}?{query} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n");
        raw(redirect, request.as_bytes()).await
    }

    #[tokio::test]
    async fn the_redirect_comes_back_to_the_listener() {
        let shown = Arc::new(Mutex::new(None));
        let seen = Arc::clone(&shown);
        let agent = LoopbackUserAgent::new(Duration::from_secs(5), move |url| {
            *seen.lock().unwrap() = Some(url.clone());
        });
        let redirect = agent.redirect_uri().await.unwrap();
        assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
        let browser = {
            let redirect = redirect.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let http = reqwest::Client::new();
                let origin = redirect.trim_end_matches(CALLBACK).to_owned();
                let missing = http
                    .get(format!("{origin}/favicon.ico"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(missing.status().as_u16(), 404);
                let done = http
                    .get(format!("{redirect}?code=c1&state=s1"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(done.status().as_u16(), 200);
                assert_eq!(done.headers()["cache-control"], "no-store");
                let page = done.text().await.unwrap();
                assert!(!page.contains("c1") && !page.contains("s1"), "{page}");
            })
        };
        let back = agent
            .authorize(Url::parse(AUTHORIZE).unwrap())
            .await
            .unwrap();
        browser.await.unwrap();
        assert_eq!(back.path(), CALLBACK);
        assert_eq!(back.query(), Some("code=c1&state=s1"));
        assert_eq!(
            shown.lock().unwrap().as_ref().map(Url::as_str),
            Some(AUTHORIZE)
        );
    }

    #[tokio::test]
    async fn no_redirect_within_the_timeout_is_an_error() {
        let agent = LoopbackUserAgent::new(Duration::from_millis(50), |_| {});
        agent.redirect_uri().await.unwrap();
        let err = agent
            .authorize(Url::parse(AUTHORIZE).unwrap())
            .await
            .unwrap_err();
        assert!(matches!(err, AuthError::UserAgent(_)), "{err:?}");
    }

    #[tokio::test]
    async fn an_authorization_url_without_one_state_is_refused() {
        for url in [
            "https://as.example/authorize?x=1",
            "https://as.example/authorize?state=",
            "https://as.example/authorize?state=a&state=b",
        ] {
            let (agent, _) = agent(Duration::from_secs(5)).await;
            let err = agent.authorize(Url::parse(url).unwrap()).await.unwrap_err();
            assert!(
                matches!(&err, AuthError::UserAgent(m) if m.contains("state")),
                "{url}: {err:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_silent_connection_does_not_hold_up_the_redirect() {
        let (agent, redirect) = agent(Duration::from_secs(5)).await;
        let waiting = authorize(&agent);
        // Connected, never a byte: open all along.
        let _silent = TcpStream::connect(addr(&redirect)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        let answer = get(&redirect, "code=c1&state=s1").await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        let back = waiting.await.unwrap().unwrap();
        assert_eq!(back.query(), Some("code=c1&state=s1"));
        // Without concurrency, the wait's 5 s would run out first.
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[tokio::test]
    async fn only_the_callback_with_the_state_sent_ends_the_wait() {
        let (agent, redirect) = agent(Duration::from_secs(5)).await;
        let waiting = authorize(&agent);
        for query in [
            "code=evil&state=wrong",
            "code=evil",
            "error=access_denied",
            "code=evil&state=s1&state=s1",
            "code=evil&state=s",
            "code=evil&state=s10",
            "code=evil&state=S1",
        ] {
            let answer = get(&redirect, query).await;
            assert!(answer.starts_with("HTTP/1.1 400 "), "{query}: {answer}");
            assert!(answer.contains("cache-control: no-store"), "{answer}");
            assert!(
                !answer.contains("evil") && !answer.contains("wrong"),
                "{answer}"
            );
            assert!(!waiting.is_finished(), "{query} ended the wait");
        }
        let answer = get(&redirect, "code=c1&state=s1").await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        let back = waiting.await.unwrap().unwrap();
        assert_eq!(back.query(), Some("code=c1&state=s1"));
    }

    #[tokio::test]
    async fn only_get_is_answered() {
        let (agent, redirect) = agent(Duration::from_secs(5)).await;
        let waiting = authorize(&agent);
        for method in ["POST", "HEAD", "PUT", "get"] {
            let request = format!("{method} {CALLBACK}?code=c1&state=s1 HTTP/1.1\r\n\r\n");
            let answer = raw(&redirect, request.as_bytes()).await;
            assert!(answer.starts_with("HTTP/1.1 405 "), "{method}: {answer}");
            assert!(answer.contains("allow: GET\r\n"), "{answer}");
        }
        for request in [
            "GET http://127.0.0.1/callback?state=s1 HTTP/1.1\r\n\r\n",
            "GET /callback?state=s1\r\n\r\n",
            "GET /callback?state=s1 HTTP/1.1 x\r\n\r\n",
            "GET /callback?state=s1 SPDY/3\r\n\r\n",
            "GET /callback?state=s1\u{e9} HTTP/1.1\r\n\r\n",
        ] {
            let answer = raw(&redirect, request.as_bytes()).await;
            assert!(answer.starts_with("HTTP/1.1 400 "), "{request:?}: {answer}");
        }
        let answer = raw(&redirect, b"GET //callback?state=s1 HTTP/1.1\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 404 "), "{answer}");
        assert!(!waiting.is_finished());
        get(&redirect, "code=c1&state=s1").await;
        waiting.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_slow_connection_is_dropped_after_its_bound() {
        let bound = Duration::from_millis(300);
        let agent =
            LoopbackUserAgent::new(Duration::from_secs(5), |_| {}).with_connection_timeout(bound);
        let redirect = agent.redirect_uri().await.unwrap();
        let agent = Arc::new(agent);
        let waiting = authorize(&agent);
        // A slow loris: a byte every 50 ms, never the end of its head.
        let mut slow = TcpStream::connect(addr(&redirect)).await.unwrap();
        let started = Instant::now();
        let dropped = loop {
            if slow.write_all(b"x").await.is_err() {
                break started.elapsed();
            }
            let mut byte = [0u8; 1];
            match tokio::time::timeout(Duration::from_millis(50), slow.read(&mut byte)).await {
                Ok(Ok(0) | Err(_)) => break started.elapsed(),
                Ok(Ok(_)) => panic!("an answer to a slow loris"),
                Err(_) => {}
            }
            assert!(started.elapsed() < Duration::from_secs(4), "never dropped");
        };
        // Load may delay it a little, never by seconds (without a bound: never dropped).
        assert!(
            dropped >= bound && dropped < bound + Duration::from_secs(2),
            "{dropped:?}"
        );
        // The wait went on.
        assert!(!waiting.is_finished());
        get(&redirect, "code=c1&state=s1").await;
        waiting.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_head_over_16_kib_is_refused() {
        let (agent, redirect) = agent(Duration::from_secs(5)).await;
        let waiting = authorize(&agent);
        let mut request = format!("GET {CALLBACK}?code=c1&state=s1 HTTP/1.1\r\nx: ").into_bytes();
        request.resize(MAX_REQUEST + 10, b'a');
        request.extend_from_slice(b"\r\n\r\n");
        let answer = raw(&redirect, &request).await;
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 431 "),
            "{answer}"
        );
        assert!(!waiting.is_finished());
        get(&redirect, "code=c1&state=s1").await;
        waiting.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_flood_of_silent_connections_does_not_hold_up_the_redirect() {
        let (agent, redirect) = agent(Duration::from_secs(5)).await;
        let waiting = authorize(&agent);
        let mut silent = Vec::new();
        for _ in 0..MAX_CONNECTIONS * 2 {
            silent.push(TcpStream::connect(addr(&redirect)).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let answer = get(&redirect, "code=c1&state=s1").await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        waiting.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn connections_still_open_are_dropped_when_the_wait_ends() {
        let (agent, redirect) = agent(Duration::from_secs(5)).await;
        let waiting = authorize(&agent);
        let mut silent = TcpStream::connect(addr(&redirect)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        get(&redirect, "code=c1&state=s1").await;
        waiting.await.unwrap().unwrap();
        let mut byte = [0u8; 1];
        let closed = tokio::time::timeout(Duration::from_secs(2), silent.read(&mut byte)).await;
        assert!(matches!(closed, Ok(Ok(0) | Err(_))), "{closed:?}");
    }

    #[test]
    fn pages_reflect_nothing_and_are_not_cached() {
        for page in [
            Page::Done,
            Page::WrongState,
            Page::BadRequest,
            Page::NotFound,
            Page::MethodNotAllowed,
            Page::TooLarge,
        ] {
            let response = page.response();
            let (head, body) = response.split_once("\r\n\r\n").unwrap();
            assert!(head.contains("\r\ncache-control: no-store\r\n"), "{head}");
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(length, body.len());
        }
    }

    #[tokio::test]
    async fn a_url_of_another_scheme_is_never_shown() {
        let shown = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = Arc::clone(&shown);
        let agent = LoopbackUserAgent::new(Duration::from_secs(1), move |_| {
            seen.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        agent.redirect_uri().await.unwrap();
        for bad in [
            "file:///etc/passwd?state=s",
            "http://as.example/authorize?state=s",
        ] {
            let err = agent.authorize(Url::parse(bad).unwrap()).await.unwrap_err();
            assert!(
                matches!(err, AuthError::UrlRefused { .. }),
                "{bad}: {err:?}"
            );
        }
        assert!(!shown.load(std::sync::atomic::Ordering::Relaxed));
    }
}
