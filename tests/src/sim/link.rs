//! The simulated link: an in-memory stream that can also end the way an HTTP transport's link
//! ends, with a typed [`TransportError`] (a session expired, a response stream lost, a POST
//! that got no answer within the header bound).
//!
//! The runtime's byte links report such an end through their [`Closer`]: `exited` resolves with
//! the reason, the transport delivers what it already read and reports `Down(reason)`. That is
//! also how the HTTP transports' bridge ends a byte link. So the simulation needs no hook in the
//! runtime: its connector ([`SimConnector`]) builds the [`Link`] itself, with a reader that
//! stops delivering once the link's [`Fate`] is sealed (what the server wrote and the client did
//! not read yet is lost, as messages of a dropped stream are), and a closer whose `exited` gives
//! the reason. A link whose plan has no typed fault has a closer without `exited`, so it ends
//! exactly as a plain stream link does (EOF, a write error, or closed by the client).
//!
//! Not a transport: the runtime's transport task still does all the framing, the credit, the
//! send queue and the closing.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use mcp_runtime::transport::{Closer, Connector, Link, TransportError};
use tokio::io::{AsyncRead, DuplexStream, ReadBuf, ReadHalf};
use tokio::sync::watch;

use super::history::{Event, Log};

/// The source of a stuck POST's [`TransportError::Io`] (kind `TimedOut`): the simulation's
/// stand-in for the runtime's `NoAnswer`, which only the runtime builds. It reads the same; the
/// driver and the table look at neither (the kind is what a host matches), and the runtime
/// gives `NoAnswer` no public constructor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unanswered {
    /// The exchange that got no answer ("POST of notifications/initialized").
    pub exchange: String,
    /// The bound that ran out.
    pub bound: Duration,
}

impl std::fmt::Display for Unanswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // As the runtime words a bound: "300 ms", "10 s", "2.5 s".
        let d = self.bound;
        let bound = if d < Duration::from_secs(1) {
            format!("{} ms", d.as_millis())
        } else if d.subsec_millis() == 0 {
            format!("{} s", d.as_secs())
        } else {
            format!("{:.1} s", d.as_secs_f64())
        };
        write!(
            f,
            "the server did not answer the {} within {bound}",
            self.exchange
        )
    }
}

impl std::error::Error for Unanswered {}

impl Unanswered {
    /// The error that ends a link whose in-order POST of `exchange` got no answer in `bound`.
    pub fn into_error(self) -> TransportError {
        TransportError::io(io::Error::new(io::ErrorKind::TimedOut, self))
    }
}

/// How one link ends, shared by the simulated server (which seals it) and the client's end of
/// the link (its reader and closer). The first reason wins.
#[derive(Clone)]
pub struct Fate(Arc<FateInner>);

struct FateInner {
    state: Mutex<FateState>,
    reason: watch::Sender<Option<TransportError>>,
}

#[derive(Default)]
struct FateState {
    /// A reason was given: the reader delivers nothing more.
    sealed: bool,
    /// The transport saw the reason (the closer's `exited` resolved): the reader ends.
    eof: bool,
    /// The reader's waker, while it waits.
    reader: Option<Waker>,
}

impl Default for Fate {
    fn default() -> Self {
        Fate(Arc::new(FateInner {
            state: Mutex::new(FateState::default()),
            reason: watch::Sender::new(None),
        }))
    }
}

impl Fate {
    fn lock(&self) -> std::sync::MutexGuard<'_, FateState> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the link with `reason`; false if it was already sealed (the first reason wins).
    pub fn seal(&self, reason: TransportError) -> bool {
        let waker = {
            let mut state = self.lock();
            if state.sealed {
                return false;
            }
            state.sealed = true;
            state.reader.take()
        };
        self.0.reason.send_replace(Some(reason));
        if let Some(w) = waker {
            w.wake();
        }
        true
    }

    /// Whether the link was sealed.
    pub fn is_sealed(&self) -> bool {
        self.lock().sealed
    }

    /// The transport saw the reason: the reader may end now.
    fn end_reader(&self) {
        let waker = {
            let mut state = self.lock();
            state.eof = true;
            state.reader.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// The reason, once there is one.
    async fn reason(&self) -> TransportError {
        let mut rx = self.0.reason.subscribe();
        let reason = match rx.wait_for(Option::is_some).await {
            Ok(r) => r.clone(),
            // Not reached: the sender lives in `self`.
            Err(_) => None,
        };
        match reason {
            Some(r) => r,
            None => std::future::pending().await,
        }
    }
}

/// The client's reading end: the stream's, until the link's fate is sealed; then nothing until
/// the transport saw the reason, then the end of the stream.
struct SimReader {
    inner: ReadHalf<DuplexStream>,
    fate: Fate,
}

impl AsyncRead for SimReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        {
            let mut state = this.fate.lock();
            if state.eof {
                return Poll::Ready(Ok(()));
            }
            if !state
                .reader
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
            {
                state.reader = Some(cx.waker().clone());
            }
            if state.sealed {
                return Poll::Pending;
            }
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

/// The closer of a simulated link: logs when the transport ends it, and, for a link whose plan
/// may seal its fate, reports the reason as the link's exit.
struct SimCloser {
    conn: u64,
    log: Log,
    /// The fate to report, for a link that may end with a typed error.
    fate: Option<Fate>,
}

impl Closer for SimCloser {
    fn close(self: Box<Self>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.log.push(Event::LinkDown { conn: self.conn });
        Box::pin(async {})
    }

    fn kill_now(&mut self) {}

    fn exited(&mut self) -> Option<Pin<Box<dyn Future<Output = TransportError> + Send + '_>>> {
        let fate = self.fate.clone()?;
        Some(Box::pin(async move {
            let reason = fate.reason().await;
            fate.end_reader();
            reason
        }))
    }
}

/// The halves of a connection and its fate, as a [`SimConnector`]'s opener returns them:
/// `None` for the fate of a link whose plan never seals it.
pub type Opened = (
    ReadHalf<DuplexStream>,
    tokio::io::WriteHalf<DuplexStream>,
    Option<Fate>,
);

type OpenFuture = Pin<Box<dyn Future<Output = Result<(u64, Opened), io::Error>> + Send>>;

/// A connector of simulated links: `open` gives each new link its connection number, its
/// stream halves and, if its plan may end it with a typed error, its fate. An error from `open`
/// is [`TransportError::Connect`], as for any stream connector.
pub struct SimConnector {
    open: Box<dyn Fn() -> OpenFuture + Send + Sync>,
    log: Log,
}

impl SimConnector {
    /// A connector calling `open` on every connect.
    pub fn new<F, Fut>(log: Log, open: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(u64, Opened), io::Error>> + Send + 'static,
    {
        SimConnector {
            open: Box::new(move || Box::pin(open())),
            log,
        }
    }
}

impl Connector for SimConnector {
    fn connect(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Link, TransportError>> + Send + 'static>> {
        let open = (self.open)();
        let log = self.log.clone();
        Box::pin(async move {
            let (conn, (reader, writer, fate)) =
                open.await.map_err(|e| TransportError::Connect(e.into()))?;
            let reader = SimReader {
                inner: reader,
                fate: fate.clone().unwrap_or_default(),
            };
            Ok(Link {
                reader: Box::new(reader),
                writer: Box::new(writer),
                closer: Some(Box::new(SimCloser { conn, log, fate })),
            })
        })
    }

    fn describe(&self) -> String {
        "simulated".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
    }

    /// A link over a duplex whose server end is returned, sealed by `fate`.
    async fn link(fate: Option<Fate>) -> (Link, DuplexStream, Log) {
        let log = Log::new();
        let (client, server) = tokio::io::duplex(1024);
        let slot = Mutex::new(Some((client, fate)));
        let slot = Arc::new(slot);
        let connector = SimConnector::new(log.clone(), move || {
            let taken = slot.lock().unwrap().take();
            async move {
                let (client, fate) = taken.ok_or(io::ErrorKind::ConnectionRefused)?;
                let (r, w) = tokio::io::split(client);
                Ok((7, (r, w, fate)))
            }
        });
        let link = connector.connect().await.unwrap();
        (link, server, log)
    }

    #[test]
    fn a_sealed_link_delivers_nothing_more_and_its_closer_reports_the_reason() {
        rt().block_on(async {
            let fate = Fate::default();
            let (mut link, mut server, log) = link(Some(fate.clone())).await;
            server.write_all(b"one\n").await.unwrap();
            let mut buf = [0u8; 16];
            let n = link.reader.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"one\n");
            server.write_all(b"two\n").await.unwrap();
            let reason = TransportError::StreamLost {
                reason: "dropped".into(),
            };
            assert!(fate.seal(reason.clone()));
            assert!(!fate.seal(TransportError::Eof), "the first reason wins");
            // Sealed: what the server wrote after is not delivered, and the stream has not
            // ended yet (the reason must reach the transport first).
            let read = tokio::time::timeout(Duration::from_secs(1), link.reader.read(&mut buf));
            assert!(read.await.is_err(), "read after the seal");
            let mut closer = link.closer.take().unwrap();
            assert_eq!(closer.exited().unwrap().await, reason);
            assert_eq!(
                link.reader.read(&mut buf).await.unwrap(),
                0,
                "EOF after exit"
            );
            closer.close().await;
            assert!(
                log.entries()
                    .iter()
                    .any(|e| e.event == Event::LinkDown { conn: 7 })
            );
        });
    }

    #[test]
    fn a_link_without_a_fate_ends_as_a_plain_stream_link() {
        rt().block_on(async {
            let (mut link, server, _log) = link(None).await;
            assert!(link.closer.as_mut().unwrap().exited().is_none());
            drop(server);
            let mut buf = [0u8; 4];
            assert_eq!(link.reader.read(&mut buf).await.unwrap(), 0);
        });
    }

    #[test]
    fn a_stuck_post_reads_as_the_runtime_says_it() {
        let e = Unanswered {
            exchange: "POST of notifications/initialized".into(),
            bound: Duration::from_millis(300),
        }
        .into_error();
        match &e {
            TransportError::Io(cause) => assert_eq!(cause.kind(), io::ErrorKind::TimedOut),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            e.to_string(),
            "transport i/o error: the server did not answer the POST of \
             notifications/initialized within 300 ms"
        );
        let long = Unanswered {
            exchange: "POST of a response".into(),
            bound: Duration::from_millis(1_250),
        };
        assert!(long.to_string().ends_with("within 1.2 s"), "{long}");
    }
}
