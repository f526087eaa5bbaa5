//! Deterministic simulation of the runtime: the real driver and [`mcp_runtime::Client`] over a
//! simulated network ([`net`], [`server`]) on tokio's paused clock, every fault drawn from one
//! seed, and the model checker's properties checked on the history the callers saw
//! ([`oracle`]).
//!
//! A run ([`run_seed`]) builds a single-threaded tokio runtime whose clock is paused (time only
//! moves when every task waits, straight to the next timer), draws a [`scenario::Scenario`]
//! from the seed, starts a client over the simulated network, lets the callers issue their
//! calls (awaited, dropped after a while, aborted, dropped at once; with timeouts and progress
//! that resets them), stops it (during the faults, or after they end and the client came back)
//! or drops every handle, waits for the client to close and every task to end, and replays the
//! client's recorded trace into a fresh machine. Nothing reads the wall clock and
//! nothing draws randomness but from the seed, so a seed replays exactly.
//!
//! The network is a stream connector, not HTTP, but its links end the way the HTTP transports'
//! links end when the seed says so ([`link`], [`server::HttpFault`]): a session that expires
//! (`SessionExpired` listing the requests refused meanwhile, which never ran; in some runs
//! every session, right after its handshake), a POST sent in order that gets no answer within
//! the header bound (`Io` of kind `TimedOut`: the link fails, the calls behind it are lost), a
//! response stream dropped before its answer (`StreamLost`), a frame cut in the middle, a
//! connection dropped right after its handshake (in some runs every one). What the driver does
//! then is judged by [`reconnect`]: refused requests sent again at most once, calls failed with
//! their link rather than told "timed out", the re-initialization budget, and a backoff
//! sequence that grows until a session proves itself.
//!
//! In a third of the runs (not the looping ones) the client has task-backed tool calls on
//! ([`scenario::TaskPlan`]): the harness lists the tools first (so no call lists them by
//! itself), and some tool calls are of the task tool, which the server runs as 2025-11-25 tasks
//! ([`server::TaskStore`]); some bound the whole task, some are dropped while it runs, and those
//! that wait for it with no bound are awaited after the calm (the faults may keep them waiting
//! until then).

pub mod capture;
pub mod coverage;
pub mod group;
pub mod history;
pub mod link;
pub mod net;
pub mod oracle;
pub mod reconnect;
pub mod rng;
pub mod scenario;
pub mod server;

use std::time::Duration;

use mcp_runtime::trace::{TraceError, TraceRecorder};
use mcp_runtime::{Client, ClientBuilder, ConnState, EraMode, RequestOptions, TaskOptions};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use self::capture::ErrorCapture;
use self::group::Via;
use self::history::{CallKind, Entry, Event, Log, Outcome};
use self::net::Net;
use self::oracle::{Bounds, Violation};
use self::scenario::{Behaviour, CallPlan, Ending, Scenario};

/// How long the harness waits, once the client is back after the faults, before it ends the
/// run: a behaving server reads at once, and a frame the client owes is offered again every
/// 10 ms ± 50 % while the transport is busy.
const QUIET: Duration = Duration::from_millis(100);

/// A finished run.
#[derive(Debug)]
pub struct Run {
    /// Its seed.
    pub seed: u64,
    /// Calls issued (every call future that sent its command, the recovery call included).
    pub calls: usize,
    /// What happened.
    pub history: Vec<Entry>,
    /// What the oracles found wrong (empty when every property holds).
    pub violations: Vec<Violation>,
}

impl Run {
    /// A report of the violations with the history around the first one, and how to replay
    /// the seed.
    pub fn report(&self) -> String {
        let mut s = format!(
            "simulation: seed {} broke {} propert{}:\n",
            self.seed,
            self.violations.len(),
            if self.violations.len() == 1 {
                "y"
            } else {
                "ies"
            }
        );
        for v in self.violations.iter().take(20) {
            s.push_str(&format!("  {v}\n"));
        }
        let first = self.violations.iter().map(|v| v.index).min().unwrap_or(0);
        let from = first.saturating_sub(60);
        let to = (first + 20).min(self.history.len());
        s.push_str(&format!(
            "history, entries {from}..{to} of {} (SIM_VERBOSE=1 prints all):\n",
            self.history.len()
        ));
        s.push_str(&history::render(&self.history[from..to], from));
        s.push_str(&format!(
            "SIM_SEED={}\n{}\n",
            self.seed,
            replay_command(self.seed)
        ));
        s
    }
}

/// The command that replays `seed`.
pub fn replay_command(seed: u64) -> String {
    format!(
        "replay: SIM_SEED={seed} cargo test -p mcp-tests --test simulation -- \
         simulated_calls_hold_the_properties --nocapture"
    )
}

/// Runs the simulation of `seed` (recording the client's trace and replaying it into a fresh
/// machine at the end) and checks the oracles on its history.
///
/// Every wait of the harness is bounded in simulated time, so a run always ends; a runtime
/// that spins at one instant (simulated time then stops moving) would not, and is reported after
/// [`WATCHDOG`] of real time (the only read of the wall clock, and it decides nothing else).
pub fn run_seed(seed: u64) -> Run {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("sim-{seed}"))
        .spawn(move || {
            let _ = tx.send(run_here(seed));
        })
        .expect("a thread for the run");
    match rx.recv_timeout(WATCHDOG) {
        Ok(run) => run,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!(
            "simulation: seed {seed} panicked (above)\nSIM_SEED={seed}\n{}",
            replay_command(seed)
        ),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "simulation: seed {seed} did not end within {WATCHDOG:?} of real time (the runtime \
             spins at one simulated instant?)\nSIM_SEED={seed}\n{}",
            replay_command(seed)
        ),
    }
}

/// How long a run may take in real time before it is reported as stuck.
pub const WATCHDOG: Duration = Duration::from_secs(120);

fn run_here(seed: u64) -> Run {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let capture = ErrorCapture::default();
    let history = tracing::subscriber::with_default(capture.clone(), || {
        runtime.block_on(simulate(seed, capture.clone()))
    });
    drop(runtime);
    let calls = history
        .iter()
        .filter(|e| matches!(e.event, Event::Issued { .. }))
        .count();
    let violations = oracle::check(&history, &Bounds::default());
    Run {
        seed,
        calls,
        history,
        violations,
    }
}

async fn simulate(seed: u64, capture: ErrorCapture) -> Vec<Entry> {
    let sc = Scenario::draw(seed);
    let log = Log::new();
    let defaults = mcp_machine::Config::default();
    log.push(Event::Config {
        backoff: sc.backoff,
        max_session_reinits: defaults.max_session_reinits,
        session_stable: defaults.session_stable,
        looping: sc.looping.map(|l| format!("{l:?}")),
    });
    let (calm_tx, calm_rx) = watch::channel(false);
    let net = Net::new(
        seed,
        log.clone(),
        calm_rx,
        sc.pipe,
        sc.header_bound,
        sc.looping,
    );
    let recorder = TraceRecorder::new();
    let (min, max, jitter) = sc.backoff;
    let era = if sc.probe {
        EraMode::Auto
    } else {
        EraMode::Legacy
    };
    let builder = ClientBuilder::new(net.connector())
        .seed(sc.client_seed)
        .era(era)
        .request_timeout(sc.request_timeout)
        .connect_timeout(sc.connect_timeout)
        .init_timeout(sc.init_timeout)
        .backoff(min, max, jitter)
        .send_queue(sc.send_queue)
        .max_frame_bytes(server::MAX_FRAME);
    let builder = match sc.tasks {
        Some(t) => builder.tasks(
            TaskOptions::new()
                .poll_bounds(t.poll_min, t.poll_max)
                .max_failures(t.max_failures),
        ),
        None => builder,
    };
    let transitions = builder.transitions();
    let client = builder.record_trace(recorder.clone()).connect_lazy();
    // Logs every state change of the connection (for the backoff's and the re-initializations'
    // properties); ends when the client has stopped.
    let transitions_watcher = tokio::spawn(log_transitions(transitions, log.clone()));
    // Sees the client closed when it happens (the harness may be busy waiting for callers).
    let closed_watcher = {
        let (mut states, log) = (client.watch_state(), log.clone());
        tokio::spawn(async move {
            if states.wait_for(|s| *s == ConnState::Closed).await.is_ok() {
                log.push(Event::Closed);
            }
        })
    };
    let ctx = Ctx {
        tokens: format!("s{seed}"),
        log: log.clone(),
        default_timeout: sc.request_timeout,
        default_wait: false,
    };

    // With tasks, the client must know which tools run as tasks before the callers come (else
    // each call would list the tools first, outside its own timeout): list them until it
    // works. A run where it never does has no callers.
    let listed = match sc.tasks {
        Some(_) => list_tools(&client, &log).await,
        None => true,
    };
    let plans = if listed { &sc.calls[..] } else { &[] };
    let start = Instant::now();

    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    // Task callers that wait for their task with no bound: the faults may keep them waiting
    // until the calm, so (in a run that has one) they are awaited after it.
    let mut late: Vec<JoinHandle<()>> = Vec::new();
    let calm_ending = matches!(sc.ending, Ending::StopAfterCalm | Ending::DropAfterCalm);
    let mut last_deadline = Duration::ZERO;
    for (n, plan) in plans.iter().enumerate() {
        let unbounded = plan.kind == CallKind::Task
            && plan.task_timeout.is_none()
            && plan.behaviour == Behaviour::Await;
        let longest = match plan.behaviour {
            Behaviour::DropAfter(d) | Behaviour::Abort(d) => d,
            _ => Duration::ZERO,
        }
        .max(plan.cap.unwrap_or(sc.timeout_of(plan)))
        .max(plan.task_timeout.unwrap_or_default());
        if !unbounded {
            last_deadline = last_deadline.max(plan.start + longest);
        }
        let via = Via::Client(client.clone());
        let caller = tokio::spawn(ctx.clone().call(n, plan.clone(), via, false));
        if let Behaviour::Abort(after) = plan.behaviour {
            let (log, victim) = (log.clone(), caller.abort_handle());
            let at = start + plan.start + after;
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep_until(at).await;
                if !victim.is_finished() {
                    victim.abort();
                    log.push(Event::Dropped { call: n });
                }
            }));
        }
        if unbounded && calm_ending {
            late.push(caller);
        } else {
            tasks.push(caller);
        }
    }
    if let Ending::StopDuringFaults { at, second } = sc.ending {
        let stops = [Some(at), second.map(|d| at + d)];
        for (stop, at) in stops.into_iter().enumerate() {
            let Some(at) = at else { continue };
            let (client, log) = (client.clone(), log.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep_until(start + at).await;
                log.push(Event::StopIssued { stop });
                if tokio::time::timeout(Duration::from_secs(5), client.stop())
                    .await
                    .is_ok()
                {
                    log.push(Event::StopReturned { stop });
                }
            }));
        }
    }
    // Every caller is done by its deadline; a caller still waiting well past it is left for the
    // oracle to report (its call never completed).
    let give_up = start + last_deadline + Duration::from_secs(5);
    for task in tasks {
        let abort = task.abort_handle();
        if tokio::time::timeout_at(give_up, task).await.is_err() {
            abort.abort();
        }
    }

    let mut client = Some(client);
    if matches!(sc.ending, Ending::StopAfterCalm | Ending::DropAfterCalm) {
        let within = sc.ready_within();
        log.push(Event::Calm {
            ready_within: within,
        });
        calm_tx.send_replace(true);
        let mut ready = client.as_ref().expect("the client is held").watch_state();
        let grace = within + Duration::from_secs(1);
        let calm_at = Instant::now();
        let is_ready = matches!(
            tokio::time::timeout(grace, ready.wait_for(|s| *s == ConnState::Ready)).await,
            Ok(Ok(_))
        );
        if is_ready {
            log.push(Event::Ready);
        }
        // The tasks the faults kept waiting end now: the client is back, polls them, and the
        // server answers (a task runs for 2.5 s at most; a poll may fail a few times first).
        let bound = calm_at + grace + LATE_TASKS;
        for task in late {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(bound, task).await.is_err() {
                abort.abort();
            }
        }
        if is_ready {
            let recovery = CallPlan {
                start: Duration::ZERO,
                kind: CallKind::Tool,
                timeout: Some(Duration::from_secs(2)),
                cap: None,
                behaviour: Behaviour::Await,
                task_timeout: None,
                wait: None,
            };
            let c = Via::Client(client.clone().expect("the client is held"));
            // Bounded: a call that never completes is the oracle's to report.
            let recovering = ctx.clone().call(sc.calls.len(), recovery, c, true);
            let _ = tokio::time::timeout(Duration::from_secs(3), recovering).await;
            // Time for every owed frame (cancels of calls ended earlier) to reach the server.
            tokio::time::sleep(QUIET).await;
            log.push(Event::Quiet);
        }
        if sc.ending == Ending::StopAfterCalm {
            log.push(Event::StopIssued { stop: 0 });
            let stop = client.as_ref().expect("the client is held").stop();
            if tokio::time::timeout(Duration::from_secs(5), stop)
                .await
                .is_ok()
            {
                log.push(Event::StopReturned { stop: 0 });
            }
        } else {
            log.push(Event::HandlesDropped);
            client = None;
        }
    }
    let bound = Duration::from_secs(5);
    if let Some(c) = &client
        && tokio::time::timeout(bound, c.closed()).await.is_ok()
    {
        log.push(Event::Finished);
    }
    for watcher in [closed_watcher, transitions_watcher] {
        let abort = watcher.abort_handle();
        if tokio::time::timeout(bound, watcher).await.is_err() {
            abort.abort();
        }
    }
    drop(client);
    // Everything should end now: the driver, its transports, the servers.
    let metrics = tokio::runtime::Handle::current().metrics();
    let give_up = Instant::now() + Duration::from_secs(3);
    while metrics.num_alive_tasks() > 0 && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    log.push(Event::TasksLeft {
        alive: metrics.num_alive_tasks(),
    });
    let error = match recorder.trace() {
        Err(e) => Some(e.to_string()),
        Ok(trace) => match mcp_runtime::trace::replay(&trace) {
            Ok(_) => None,
            Err(e) => Some(format!("{e}\n{}", trace_context(&trace, &e))),
        },
    };
    log.push(Event::TraceReplayed { error });
    for message in capture.take() {
        log.push(Event::RuntimeError { message });
    }
    log.push(Event::End);
    log.entries()
}

/// Lists the tools (as many times as it takes, within bounds) so the client knows which run
/// as tasks; whether it did.
async fn list_tools(client: &Client, log: &Log) -> bool {
    for _ in 0..LIST_ATTEMPTS {
        match tokio::time::timeout(Duration::from_secs(5), client.list_all_tools()).await {
            Ok(Ok(_)) => {
                log.push(Event::Listed);
                return true;
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    false
}

/// How many times the harness lists the tools before it gives up on the run's callers.
const LIST_ATTEMPTS: usize = 20;

/// How long after the calm (and the client's bound to be ready) a task caller with no bound
/// may wait: the rest of its task (2.5 s at most), polls at the cap, a few polls that fail.
const LATE_TASKS: Duration = Duration::from_secs(12);

/// Logs each transition of the client's connection as it comes, until the client has stopped.
async fn log_transitions(mut feed: mcp_runtime::Transitions, log: Log) {
    while let Some(t) = feed.recv().await {
        let expired = matches!(
            t.cause,
            Some(mcp_runtime::Failure::Transport(
                mcp_runtime::TransportError::SessionExpired { .. }
            ))
        );
        log.push(Event::Transition {
            from: t.from(),
            to: t.to(),
            expired,
            retry_in: t.retry_in,
        });
    }
    if feed.dropped() > 0 {
        log.push(Event::TransitionsLost {
            lost: feed.dropped(),
        });
    }
}

/// The records of `trace` just before the one `error` names, one a line.
fn trace_context(trace: &mcp_runtime::trace::Trace, error: &TraceError) -> String {
    let index = match error {
        TraceError::Mismatch { index, .. }
        | TraceError::ImpossibleRow { index, .. }
        | TraceError::UnknownCaller { index, .. }
        | TraceError::Unanswered { index, .. }
        | TraceError::SendAfterStop { index, .. } => *index,
        TraceError::AnsweredTwice { second, .. } => *second,
        TraceError::ExitTwice { second, .. } => *second,
        _ => return String::new(),
    };
    let from = index.saturating_sub(24);
    let to = (index + 1).min(trace.records.len());
    (from..to)
        .map(|i| format!("    record {i}: {:?}\n", trace.records[i]))
        .collect()
}

/// What every caller of a run (or of one server of a group's run) shares.
#[derive(Clone)]
struct Ctx {
    /// What each caller's token starts with (the token ends with `c` and its number).
    tokens: String,
    log: Log,
    default_timeout: Duration,
    /// The client's default for `wait_for_ready`.
    default_wait: bool,
}

impl Ctx {
    /// Caller `n`: waits for its start, issues its call and does with the future what its plan
    /// says, logging all of it.
    async fn call(self, n: usize, plan: CallPlan, via: Via, recovery: bool) {
        tokio::time::sleep(plan.start).await;
        let token = format!("{}c{n}", self.tokens);
        let seen = via.state();
        self.log.push(Event::Issued {
            call: n,
            kind: plan.kind,
            token: token.clone(),
            timeout: plan.timeout.unwrap_or(self.default_timeout),
            cap: plan.cap,
            recovery,
            task_timeout: plan.task_timeout,
        });
        // A notification never waits for ready (it is not a call: the table turns it away at
        // once whatever the client's default).
        let wait = plan.kind != CallKind::Notify && plan.wait.unwrap_or(self.default_wait);
        self.log.push(Event::CallMade {
            call: n,
            wait,
            seen,
        });
        let mut call = Box::pin(self.issue(n, &plan, &via, token));
        let outcome = match plan.behaviour {
            Behaviour::Await | Behaviour::Abort(_) => Some((&mut call).await),
            Behaviour::DropAfter(after) => tokio::select! {
                biased;
                outcome = &mut call => Some(outcome),
                () = tokio::time::sleep(after) => None,
            },
            Behaviour::DropSoon => tokio::select! {
                biased;
                outcome = &mut call => Some(outcome),
                () = tokio::task::yield_now() => None,
            },
        };
        match outcome {
            Some(outcome) => self.log.push(Event::Outcome { call: n, outcome }),
            None => {
                // The future is dropped here, before its answer: the call is cancelled.
                drop(call);
                self.log.push(Event::Dropped { call: n });
            }
        }
    }

    async fn issue(&self, n: usize, plan: &CallPlan, via: &Via, token: String) -> Outcome {
        match plan.kind {
            CallKind::Tool => {
                let mut options = RequestOptions::new();
                if let Some(timeout) = plan.timeout {
                    options = options.timeout(timeout);
                }
                if let Some(wait) = plan.wait {
                    options = options.wait_for_ready(wait);
                }
                if let Some(cap) = plan.cap {
                    let log = self.log.clone();
                    options = options
                        .on_progress(move |p| {
                            log.push(Event::Progress {
                                call: n,
                                message: p.message,
                            })
                        })
                        .reset_timeout_on_progress(cap);
                }
                via.call_tool("sim", json!({ "token": token }), options)
                    .await
            }
            CallKind::Task => {
                let mut options = RequestOptions::new();
                if let Some(timeout) = plan.timeout {
                    options = options.timeout(timeout);
                }
                if let Some(bound) = plan.task_timeout {
                    options = options.task_timeout(bound);
                }
                if let Some(wait) = plan.wait {
                    options = options.wait_for_ready(wait);
                }
                let log = self.log.clone();
                options = options.on_task_status(move |s| {
                    log.push(Event::TaskStatus {
                        call: n,
                        task: s.task_id.clone(),
                        state: s.state.as_str().to_owned(),
                    })
                });
                via.call_tool("sim_task", json!({ "token": token }), options)
                    .await
            }
            CallKind::Ping => via.ping().await,
            CallKind::Notify => via.notify(json!({ "token": token })).await,
        }
    }
}
