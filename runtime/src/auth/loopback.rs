//! A [`UserAgent`] for programs on the user's machine (RFC 8252 §7.3): the redirect comes back
//! to a one-shot listener bound to `127.0.0.1` on a port the system picks, and the user is
//! sent to the authorization URL by a callback (print it, open a browser).
//!
//! The listener takes one request for its callback path, answers it with a short page and
//! closes; other requests (a favicon) get a 404. It gives up after its timeout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::flow::{AuthError, AuthFuture, UserAgent};

/// The path of the redirect URI.
const CALLBACK: &str = "/callback";
/// The most bytes of a request read.
const MAX_REQUEST: usize = 16 * 1024;

/// Sends the user with `show` and waits for the redirect on `127.0.0.1`.
pub struct LoopbackUserAgent {
    show: Arc<dyn Fn(&Url) + Send + Sync>,
    timeout: Duration,
    listener: Mutex<Option<TcpListener>>,
}

impl std::fmt::Debug for LoopbackUserAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackUserAgent")
            .field("timeout", &self.timeout)
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
            listener: Mutex::new(None),
        }
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

    fn authorize(&self, url: Url) -> AuthFuture<'_, Url> {
        Box::pin(async move {
            let listener = self
                .slot()
                .take()
                .ok_or_else(|| AuthError::UserAgent("no redirect URI was made".into()))?;
            let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
            (self.show)(&url);
            tokio::time::timeout(self.timeout, wait(listener, port))
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

/// Accepts connections until one asks for the callback path; that request's URL.
async fn wait(listener: TcpListener, port: u16) -> Result<Url, AuthError> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| AuthError::UserAgent(format!("the loopback listener failed: {e}")))?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let head = String::from_utf8_lossy(&buf);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        if target.split('?').next() != Some(CALLBACK) {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let page = "<!doctype html><title>Authorized</title><p>The client got the answer; you can close this window.";
        let _ = stream
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            )
            .await;
        return Url::parse(&format!("http://127.0.0.1:{port}{target}"))
            .map_err(|_| AuthError::UserAgent("the redirect is not a URL".into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            })
        };
        let back = agent
            .authorize(Url::parse("https://as.example/authorize?x=1").unwrap())
            .await
            .unwrap();
        browser.await.unwrap();
        assert_eq!(back.path(), CALLBACK);
        assert_eq!(back.query(), Some("code=c1&state=s1"));
        assert_eq!(
            shown.lock().unwrap().as_ref().map(Url::as_str),
            Some("https://as.example/authorize?x=1")
        );
    }

    #[tokio::test]
    async fn no_redirect_within_the_timeout_is_an_error() {
        let agent = LoopbackUserAgent::new(Duration::from_millis(50), |_| {});
        agent.redirect_uri().await.unwrap();
        let err = agent
            .authorize(Url::parse("https://as.example/authorize").unwrap())
            .await
            .unwrap_err();
        assert!(matches!(err, AuthError::UserAgent(_)), "{err:?}");
    }
}
