//! The legacy HTTP+SSE transport (MCP 2024-11-05) as a link: one event stream per transport
//! generation.
//!
//! Connecting `GET`s the SSE URL (`Accept: text/event-stream`) and waits, at most
//! [`SseConnector::endpoint_timeout`] (10 s), for the server's `endpoint` event: the URL to
//! `POST` messages to, resolved against the SSE URL. It must have the SSE URL's origin
//! (scheme, host and port), else the link fails with [`TransportError::Http`]: a server may not
//! send our messages and headers elsewhere. Then, over the same bridge design as
//! [`super::http`] (so the frame limit, credits and "exactly one `Down`" hold):
//! - each frame is `POST`ed to the endpoint (`Content-Type: application/json`), one after the
//!   other so the server sees them in order; any 2xx (`202` expected) is fine, anything else
//!   ends the link with [`TransportError::Http`]; the answer is awaited within the header bound
//!   ([`SseConnector::header_timeout`], requests included: the server answers `202` at once),
//!   past which the link ends naming the POST;
//! - answers and server messages arrive on the stream as `message` events, one message each;
//!   an event over the frame limit ends the link with [`TransportError::Oversized`] (it is
//!   never buffered whole);
//! - the stream's end ends the link ([`TransportError::Eof`], or the read error): this
//!   transport cannot resume;
//! - closing drops the stream; there is no `DELETE`.
//!
//! Static headers ([`SseConnector::header`]) go on every request; redirects are never
//! followed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};

use super::bridge::{self, BoxFut, Frame, Leg, Out, PostError, Received};
use super::web::{
    SseError, SseEvents, Wait, WebOptions, is_sse, message_of, parse_url, web_options,
};
use super::{ConnectMessages, Connector, Delivery, Link, TransportError};

/// Default bound on the wait for the `endpoint` event.
const DEFAULT_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a legacy HTTP+SSE link (MCP 2024-11-05) per generation. A factory: it holds no
/// connection itself. Not Streamable HTTP (see [`super::HttpConnector`] and
/// [`super::AutoHttpConnector`]).
///
/// Its `Debug` output shows the names of the static headers, never their values.
#[derive(Clone, Debug)]
pub struct SseConnector {
    url: reqwest::Url,
    web: WebOptions,
    endpoint_timeout: Duration,
}

impl SseConnector {
    /// A connector for the SSE stream at `url` (`http://` or `https://`).
    pub fn new(url: &str) -> Result<Self, TransportError> {
        let url = parse_url(url)?;
        let mut web = WebOptions::new(Duration::from_secs(2))?;
        web.endpoint = Some(url.clone());
        Ok(SseConnector {
            url,
            web,
            endpoint_timeout: DEFAULT_ENDPOINT_TIMEOUT,
        })
    }

    /// How long to wait for the `endpoint` event once the stream is open (10 s); past it the
    /// link fails with [`TransportError::Protocol`].
    pub fn endpoint_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint_timeout = timeout;
        self
    }

    /// Opens the stream and waits for its endpoint; the rest of the stream is forwarded
    /// through `out` for the link's lifetime.
    pub(crate) async fn open_leg(&self, out: Out) -> Result<Arc<dyn Leg>, TransportError> {
        let (leg, events) = self.open().await?;
        out.spawn(forward(events, out.clone()));
        Ok(leg)
    }

    async fn open(&self) -> Result<(Arc<dyn Leg>, SseEvents), TransportError> {
        let response = self
            .web
            .send(
                self.web
                    .client
                    .get(self.url.clone())
                    .header(ACCEPT, "text/event-stream"),
                Wait::Prompt("GET of the SSE stream"),
            )
            .await?;
        let status = response.status();
        if !status.is_success() || !is_sse(&response) {
            return Err(TransportError::Http {
                status: status.as_u16(),
                reason: if status.is_success() {
                    "the answer to the GET of the SSE stream is not an event stream".into()
                } else {
                    "to the GET of the SSE stream".into()
                },
            });
        }
        let mut events = SseEvents::new(response, self.web.max_frame_bytes);
        let endpoint = tokio::time::timeout(self.endpoint_timeout, endpoint_event(&mut events))
            .await
            .map_err(|_| TransportError::Protocol {
                reason: format!("no endpoint event within {:?}", self.endpoint_timeout),
            })??;
        let endpoint = self
            .url
            .join(endpoint.trim())
            .map_err(|e| TransportError::Protocol {
                reason: format!("the endpoint event is not a URL: {e}"),
            })?;
        if endpoint.origin() != self.url.origin() {
            return Err(TransportError::Protocol {
                reason: format!(
                    "the endpoint event names another origin ({}) than the SSE stream's",
                    endpoint.origin().ascii_serialization()
                ),
            });
        }
        let leg = Arc::new(LegacyLeg {
            endpoint,
            web: self.web.clone(),
        });
        Ok((leg, events))
    }
}

web_options!(SseConnector);

impl Connector for SseConnector {
    fn connect(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Link, TransportError>> + Send + 'static>> {
        let this = self.clone();
        Box::pin(async move {
            let (leg, events) = this.open().await?;
            let start: bridge::Start = Box::new(move |out: Out| Box::pin(forward(events, out)));
            Ok(bridge::open(leg, Some(start), None, this.web.grace))
        })
    }

    fn connect_messages(&self, delivery: Delivery) -> Option<ConnectMessages> {
        let this = self.clone();
        Some(Box::pin(async move {
            let (leg, events) = this.open().await?;
            let start: bridge::Start = Box::new(move |out: Out| Box::pin(forward(events, out)));
            Ok(bridge::open_messages(
                leg,
                Some(start),
                None,
                this.web.grace,
                delivery,
            ))
        }))
    }

    fn reads_heads(&self) -> bool {
        true
    }

    fn server_url(&self) -> Option<&reqwest::Url> {
        Some(&self.url)
    }

    fn protocol_version(&self) -> Option<&'static str> {
        self.web.http_version()
    }

    fn describe(&self) -> String {
        format!("sse: {}", crate::auth::policy::redact(&self.url))
    }
}

/// The data of the first `endpoint` event (what comes before it is skipped).
async fn endpoint_event(events: &mut SseEvents) -> Result<String, TransportError> {
    loop {
        match events.next().await {
            Ok(Some(event)) if event.kind() == "endpoint" => {
                if !event.data.trim().is_empty() {
                    return Ok(event.data);
                }
            }
            Ok(Some(_)) => {
                tracing::debug!(target: "mcp::http", "an SSE event before the endpoint event is skipped");
            }
            Ok(None) => {
                return Err(TransportError::Protocol {
                    reason: "the SSE stream ended before its endpoint event".into(),
                });
            }
            Err(SseError::Broken(e) | SseError::Invalid(e)) => return Err(e),
        }
    }
}

/// Forwards the stream's messages until it ends; its end ends the link.
async fn forward(mut events: SseEvents, out: Out) {
    loop {
        match events.next().await {
            Ok(Some(event)) => {
                if let Some(message) = message_of(event)
                    && !out.deliver(message).await
                {
                    return;
                }
            }
            Ok(None) => return out.fail(TransportError::Eof),
            Err(SseError::Broken(e) | SseError::Invalid(e)) => return out.fail(e),
        }
    }
}

/// Posts frames to the endpoint the stream named.
struct LegacyLeg {
    endpoint: reqwest::Url,
    web: WebOptions,
}

impl Leg for LegacyLeg {
    /// Every POST waits for its answer within the header bound: the server answers `202` at
    /// once, requests included (their answers come on the stream).
    fn post(
        self: Arc<Self>,
        frame: String,
        head: Frame,
        _out: Out,
        _received: Received,
    ) -> BoxFut<Result<(), PostError>> {
        Box::pin(async move {
            let exchange = format!(
                "POST of {} to the message endpoint",
                head.method.as_deref().unwrap_or("a response")
            );
            let response = self
                .web
                .send(
                    self.web
                        .client
                        .post(self.endpoint.clone())
                        .header(CONTENT_TYPE, "application/json")
                        .body(frame),
                    Wait::Prompt(&exchange),
                )
                .await?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(TransportError::Http {
                    status: status.as_u16(),
                    reason: "to a POST to the message endpoint".into(),
                }
                .into())
            }
        })
    }

    fn close(self: Arc<Self>, _ended: Option<TransportError>) -> BoxFut<()> {
        Box::pin(async {})
    }

    /// Every frame: the server answers each POST with `202` at once (answers come on the
    /// stream), so posting them one after the other keeps their order for free.
    fn in_order(&self, _frame: &Frame) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_and_debug_hides_values() {
        assert!(SseConnector::new("ws://x/sse").is_err());
        let c = SseConnector::new("http://127.0.0.1:9/sse")
            .unwrap()
            .header("x-api-key", "hunter2")
            .unwrap();
        assert_eq!(c.describe(), "sse: http://127.0.0.1:9/sse");
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(c.header("x-api-key", "a\nb").is_err());
    }
}
