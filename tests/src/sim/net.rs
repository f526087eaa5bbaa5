//! The simulated network: a connector whose every connection is drawn from the run's seed
//! (refused, hung, or an in-memory stream to a fresh [`Server`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_runtime::transport::StreamConnector;
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::watch;

use super::history::{Event, Log};
use super::rng::Rng;
use super::server::{ConnPlan, ConnectPlan, Server};

/// What every connection of a run shares.
pub struct Net {
    seed: u64,
    log: Log,
    calm: watch::Receiver<bool>,
    /// Capacity of each direction of the in-memory stream: small ones fill up, and the client's
    /// sends then go busy while a server stalls.
    pipe: usize,
    conns: AtomicU64,
}

type Halves = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

impl Net {
    /// The network of the run `seed`; connections opened once `calm` is true behave.
    pub fn new(seed: u64, log: Log, calm: watch::Receiver<bool>, pipe: usize) -> Arc<Self> {
        Arc::new(Net {
            seed,
            log,
            calm,
            pipe,
            conns: AtomicU64::new(0),
        })
    }

    /// A connector opening connections on this network.
    pub fn connector(self: &Arc<Self>) -> StreamConnector {
        let net = Arc::clone(self);
        StreamConnector::from_fn(move || net.open()).with_description("simulated")
    }

    fn open(
        self: &Arc<Self>,
    ) -> impl std::future::Future<Output = std::io::Result<Halves>> + Send + use<> {
        let conn = self.conns.fetch_add(1, Ordering::Relaxed);
        let mut rng = Rng::derive(self.seed, (1 << 40) + conn);
        let plan = if *self.calm.borrow() {
            ConnPlan::calm()
        } else {
            ConnPlan::draw(&mut rng)
        };
        self.log.push(Event::Connect {
            conn,
            plan: format!("{plan:?}"),
        });
        let net = Arc::clone(self);
        async move {
            match plan.connect {
                ConnectPlan::Refuse => Err(std::io::ErrorKind::ConnectionRefused.into()),
                ConnectPlan::Hang => std::future::pending().await,
                ConnectPlan::Ok(delay) => {
                    tokio::time::sleep(delay).await;
                    let (client, server) = tokio::io::duplex(net.pipe);
                    let server_task = Server::new(conn, net.log.clone(), rng, plan);
                    tokio::spawn(server_task.run(server, net.calm.clone()));
                    Ok(tokio::io::split(client))
                }
            }
        }
    }
}
