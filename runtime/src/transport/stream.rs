//! Generic byte-stream transports with stdio framing (newline-delimited JSON): TCP, Unix
//! sockets, and any pair of async reader/writer made by a closure (in-process servers over
//! `tokio::io::duplex`). There is no process to stop, so these links have no closer: closing
//! shuts the write half down and drops both halves.

use std::fmt;
use std::future::Future;
#[cfg(unix)]
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use super::{Connector, Link, TransportError};

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;
type OpenFuture = Pin<Box<dyn Future<Output = std::io::Result<(Reader, Writer)>> + Send + 'static>>;
type OpenFn = dyn Fn() -> OpenFuture + Send + Sync + 'static;

/// Opens a newline-delimited JSON link over a byte stream, a fresh stream per generation.
///
/// A factory, not a connection: every [`Connector::connect`] dials again (or calls the
/// closure again).
#[derive(Clone)]
pub struct StreamConnector {
    kind: Kind,
    description: String,
}

#[derive(Clone)]
enum Kind {
    Tcp(String),
    #[cfg(unix)]
    Unix(PathBuf),
    Fn(Arc<OpenFn>),
}

impl fmt::Debug for StreamConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamConnector")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl StreamConnector {
    /// Connects over TCP to `addr` (`"127.0.0.1:9000"`, `"localhost:9000"`, a `SocketAddr`),
    /// resolving the name on every connect. Nagle's algorithm is turned off.
    pub fn tcp(addr: impl ToString) -> Self {
        let addr = addr.to_string();
        Self {
            description: format!("tcp {addr}"),
            kind: Kind::Tcp(addr),
        }
    }

    /// Connects to the Unix domain socket at `path`.
    #[cfg(unix)]
    pub fn unix(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        Self {
            description: format!("unix {}", path.display()),
            kind: Kind::Unix(path),
        }
    }

    /// Calls `open` on every connect to get a fresh reader/writer pair, for example the two
    /// halves of a `tokio::io::duplex` whose other end an in-process server serves. An error
    /// from `open` becomes [`TransportError::Connect`].
    pub fn from_fn<F, Fut, R, W>(open: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::io::Result<(R, W)>> + Send + 'static,
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let open: Arc<OpenFn> = Arc::new(move || {
            let fut = open();
            Box::pin(async move {
                let (r, w) = fut.await?;
                Ok((Box::new(r) as Reader, Box::new(w) as Writer))
            }) as OpenFuture
        });
        Self {
            kind: Kind::Fn(open),
            description: "in-process stream".to_owned(),
        }
    }

    /// Replaces the description used in logs.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

impl Connector for StreamConnector {
    fn connect(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Link, TransportError>> + Send + 'static>> {
        let kind = self.kind.clone();
        Box::pin(async move {
            let (reader, writer): (Reader, Writer) = match kind {
                Kind::Tcp(addr) => {
                    let stream = tokio::net::TcpStream::connect(addr.as_str())
                        .await
                        .map_err(connect_error)?;
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!(error = %e, "could not set TCP_NODELAY");
                    }
                    let (r, w) = stream.into_split();
                    (Box::new(r), Box::new(w))
                }
                #[cfg(unix)]
                Kind::Unix(path) => {
                    let stream = tokio::net::UnixStream::connect(&path)
                        .await
                        .map_err(connect_error)?;
                    let (r, w) = stream.into_split();
                    (Box::new(r), Box::new(w))
                }
                Kind::Fn(open) => open().await.map_err(connect_error)?,
            };
            Ok(Link {
                reader,
                writer,
                closer: None,
            })
        })
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}

fn connect_error(e: std::io::Error) -> TransportError {
    TransportError::Connect(e.into())
}
