//! The simulated network: a connector whose every connection is drawn from the run's seed
//! (refused, hung, or an in-memory stream to a fresh [`Server`]), over links that can also end
//! the way an HTTP transport's do ([`super::link`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use super::history::{Event, Log};
use super::link::{Fate, Opened, SimConnector};
use super::rng::Rng;
use super::scenario::Looping;
use super::server::{ConnPlan, ConnectPlan, Server, Tasks};

/// The chance (in percent) that a connection opened while the server has tasks finds a
/// server that forgot them all.
const FORGET_TASKS: u64 = 12;

/// What every connection of a run shares.
pub struct Net {
    seed: u64,
    log: Log,
    calm: watch::Receiver<bool>,
    /// Capacity of each direction of the in-memory stream: small ones fill up, and the client's
    /// sends then go busy while a server stalls.
    pipe: usize,
    /// The header bound of the simulated HTTP transport: how long a POST sent in order may go
    /// unanswered before its link fails.
    header_bound: Duration,
    /// Every connection before the calm fails the same way, if set.
    looping: Option<Looping>,
    conns: AtomicU64,
    /// The tasks the run's servers share (a task lives on the server, not on a connection).
    tasks: Tasks,
}

impl Net {
    /// The network of the run `seed`; connections opened once `calm` is true behave.
    pub fn new(
        seed: u64,
        log: Log,
        calm: watch::Receiver<bool>,
        pipe: usize,
        header_bound: Duration,
        looping: Option<Looping>,
    ) -> Arc<Self> {
        Arc::new(Net {
            seed,
            log,
            calm,
            pipe,
            header_bound,
            looping,
            conns: AtomicU64::new(0),
            tasks: Tasks::default(),
        })
    }

    /// A connector opening connections on this network.
    pub fn connector(self: &Arc<Self>) -> SimConnector {
        let net = Arc::clone(self);
        SimConnector::new(self.log.clone(), move || net.open())
    }

    fn open(
        self: &Arc<Self>,
    ) -> impl std::future::Future<Output = std::io::Result<(u64, Opened)>> + Send + use<> {
        let conn = self.conns.fetch_add(1, Ordering::Relaxed);
        let mut rng = Rng::derive(self.seed, (1 << 40) + conn);
        let plan = match (*self.calm.borrow(), self.looping) {
            (true, _) => ConnPlan::calm(),
            (false, Some(looping)) => ConnPlan::looping(looping, &mut rng),
            (false, None) => ConnPlan::draw(&mut rng),
        };
        self.log.push(Event::Connect {
            conn,
            plan: format!("{plan:?}"),
        });
        // A server started again may have lost its tasks (it restarted without its store).
        if !*self.calm.borrow() {
            let mut store = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            if !store.is_empty() && rng.chance(FORGET_TASKS) {
                let count = store.forget_all();
                self.log.push(Event::TasksForgotten { conn, count });
            }
        }
        let net = Arc::clone(self);
        async move {
            match plan.connect {
                ConnectPlan::Refuse => Err(std::io::ErrorKind::ConnectionRefused.into()),
                ConnectPlan::Hang => std::future::pending().await,
                ConnectPlan::Ok(delay) => {
                    tokio::time::sleep(delay).await;
                    let (client, server) = tokio::io::duplex(net.pipe);
                    let fate = plan.typed().then(Fate::default);
                    let server_task = Server::new(
                        conn,
                        net.log.clone(),
                        rng,
                        plan,
                        net.header_bound,
                        fate.clone().unwrap_or_default(),
                        Arc::clone(&net.tasks),
                    );
                    tokio::spawn(server_task.run(server, net.calm.clone()));
                    let (reader, writer) = tokio::io::split(client);
                    Ok((conn, (reader, writer, fate)))
                }
            }
        }
    }
}
