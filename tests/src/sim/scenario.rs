//! What a seed decides about a run: the client's settings, the callers and their calls, and how
//! the run ends. (Each connection's faults are drawn when it opens: [`super::server::ConnPlan`].)

use std::time::Duration;

use super::history::CallKind;
use super::rng::Rng;

/// What a caller does with its call's future.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Awaits it to completion.
    Await,
    /// Drops it if it has not completed after this long (`select!` with a sleep).
    DropAfter(Duration),
    /// Its task is aborted after this long.
    Abort(Duration),
    /// Polls it once and drops it.
    DropSoon,
}

/// One caller's call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallPlan {
    /// When it is issued, from the start of the run.
    pub start: Duration,
    /// What it calls.
    pub kind: CallKind,
    /// Its own timeout, if it sets one.
    pub timeout: Option<Duration>,
    /// With `reset_timeout_on_progress`: the total cap (progress is then asked for).
    pub cap: Option<Duration>,
    /// What the caller does with the future.
    pub behaviour: Behaviour,
    /// A task call's bound on the whole task (`RequestOptions::task_timeout`), if it sets one.
    pub task_timeout: Option<Duration>,
    /// `RequestOptions::wait_for_ready`, if the call sets it (else the client's default).
    pub wait: Option<bool>,
}

/// How the client runs task-backed tool calls, in a run that has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskPlan {
    /// The floor of the poll interval (a server asking for 0 is polled this often).
    pub poll_min: Duration,
    /// The cap of the poll interval (a server asking for years is polled this often).
    pub poll_max: Duration,
    /// Failed exchanges in a row before `Error::TaskUnreachable`.
    pub max_failures: u8,
}

/// How the run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `stop` while the faults go on (and a second, concurrent one after `second`).
    StopDuringFaults {
        /// When, from the start of the run.
        at: Duration,
        /// A second stop this long after the first.
        second: Option<Duration>,
    },
    /// The faults stop, the client must come back and serve a call, then `stop`.
    StopAfterCalm,
    /// As [`Ending::StopAfterCalm`], but every handle is dropped instead of stopping.
    DropAfterCalm,
}

/// A run whose every connection before the calm fails the same way right after its handshake,
/// so the re-initialization budget and the backoff sequence are walked through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Looping {
    /// Each session expires right after its handshake (a 404 expiry loop).
    Expire,
    /// Each connection is dropped right after its handshake.
    Drop,
}

/// Everything a seed decides before the run starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The seed of the client's own jitter.
    pub client_seed: u64,
    /// The client's default per-call timeout.
    pub request_timeout: Duration,
    /// The first connect's bound.
    pub connect_timeout: Duration,
    /// A reconnect's bound.
    pub init_timeout: Duration,
    /// Backoff: first delay, cap, jitter in percent.
    pub backoff: (Duration, Duration, u32),
    /// The transport's send queue (1 or 2 makes busy sends common).
    pub send_queue: usize,
    /// Capacity of each direction of the in-memory stream.
    pub pipe: usize,
    /// The calls, by caller number.
    pub calls: Vec<CallPlan>,
    /// How the run ends.
    pub ending: Ending,
    /// Whether the client runs in `auto` (a `server/discover` probe first, which this legacy
    /// server refuses) rather than in the handshake era only.
    pub probe: bool,
    /// The simulated HTTP transport's header bound: a POST sent in order (a notification, an
    /// answer) unanswered for this long fails its link.
    pub header_bound: Duration,
    /// Every connection before the calm fails the same way right after its handshake, if set.
    pub looping: Option<Looping>,
    /// Task-backed tool calls, if the run has them (then some of its tool calls are of the task
    /// tool).
    pub tasks: Option<TaskPlan>,
}

impl Scenario {
    /// The scenario of `seed`.
    pub fn draw(seed: u64) -> Self {
        let mut r = Rng::derive(seed, 0);
        let request_timeout = r.ms(100, 1_500);
        let init_timeout = r.ms(100, 1_000);
        let connect_timeout = r.ms(init_timeout.as_millis() as u64, 2_000);
        let min = r.range(10, 100);
        let backoff = (
            Duration::from_millis(min),
            Duration::from_millis(r.range(min, 800)),
            u32::try_from(r.range(0, 50)).unwrap_or(0),
        );
        let send_queue = if r.chance(30) {
            usize::try_from(r.range(1, 2)).unwrap_or(1)
        } else {
            256
        };
        let pipe = if r.chance(30) {
            usize::try_from(r.range(256, 1_024)).unwrap_or(256)
        } else {
            1 << 16
        };
        let n = r.range(40, 160);
        let mut start = Duration::ZERO;
        let calls: Vec<CallPlan> = (0..n)
            .map(|_| {
                if !r.chance(40) {
                    start += r.ms(0, 25);
                }
                draw_call(&mut r, start, request_timeout)
            })
            .collect();
        let ending = match r.range(0, 99) {
            0..=34 => Ending::StopDuringFaults {
                at: r.ms(0, start.as_millis() as u64 + 200),
                second: r.chance(20).then(|| r.ms(0, 50)),
            },
            35..=79 => Ending::StopAfterCalm,
            _ => Ending::DropAfterCalm,
        };
        let client_seed = r.next_u64();
        let probe = r.chance(50);
        let header_bound = r.ms(50, request_timeout.as_millis() as u64);
        let looping = match r.range(0, 99) {
            0..=7 => Some(Looping::Expire),
            8..=11 => Some(Looping::Drop),
            _ => None,
        };
        // Drawn from their own stream, so that a run without tasks draws what it drew before.
        let mut calls = calls;
        let tasks = draw_tasks(&mut Rng::derive(seed, 2), looping, &mut calls);
        draw_waits(&mut Rng::derive(seed, 3), &mut calls);
        Scenario {
            client_seed,
            tasks,
            probe,
            header_bound,
            looping,
            request_timeout,
            connect_timeout,
            init_timeout,
            backoff,
            send_queue,
            pipe,
            calls,
            ending,
        }
    }

    /// A call's timeout: its own, or the client's default.
    pub fn timeout_of(&self, call: &CallPlan) -> Duration {
        call.timeout.unwrap_or(self.request_timeout)
    }

    /// How long after the faults stop the client may take to be ready: a connection attempt
    /// under way may run to its bound (the first connect's, or a reconnect's), then one backoff
    /// delay at its longest (the cap plus its jitter), then a behaving connect and handshake.
    pub fn ready_within(&self) -> Duration {
        let (_, max, jitter) = self.backoff;
        let longest_backoff = max * (100 + jitter) / 100;
        self.connect_timeout.max(self.init_timeout) + longest_backoff + Duration::from_millis(20)
    }
}

fn draw_call(r: &mut Rng, start: Duration, request_timeout: Duration) -> CallPlan {
    let kind = match r.range(0, 99) {
        0..=84 => CallKind::Tool,
        85..=94 => CallKind::Ping,
        _ => CallKind::Notify,
    };
    let timeout = (kind == CallKind::Tool && r.chance(50)).then(|| r.ms(10, 800));
    let effective = timeout.unwrap_or(request_timeout);
    let cap = (kind == CallKind::Tool && r.chance(25))
        .then(|| effective * u32::try_from(r.range(1, 4)).unwrap_or(1));
    let longest = effective.as_millis() as u64;
    let behaviour = match r.range(0, 99) {
        0..=74 => Behaviour::Await,
        75..=86 => Behaviour::DropAfter(r.ms(0, longest)),
        87..=94 => Behaviour::Abort(r.ms(1, longest.max(1))),
        _ => Behaviour::DropSoon,
    };
    CallPlan {
        start,
        kind,
        timeout,
        cap,
        behaviour,
        task_timeout: None,
        wait: None,
    }
}

/// Which tool calls wait for a ready connection (`RequestOptions::wait_for_ready(true)`): a
/// share of them, drawn from their own stream so that the rest of a run draws what it drew
/// before.
fn draw_waits(r: &mut Rng, calls: &mut [CallPlan]) {
    for call in calls.iter_mut().filter(|c| c.kind == CallKind::Tool) {
        if r.chance(WAIT_CALLS) {
            call.wait = Some(true);
        }
    }
}

/// The share of a run's tool calls that wait for a ready connection, in percent.
const WAIT_CALLS: u64 = 20;

/// Whether the run has task-backed tool calls (not in a looping run: the client must list the
/// tools first, which such a run never lets it do), and which of its tool calls are of the
/// task tool: some with a bound on the whole task, some dropped or aborted while the task runs.
fn draw_tasks(r: &mut Rng, looping: Option<Looping>, calls: &mut [CallPlan]) -> Option<TaskPlan> {
    if looping.is_some() || !r.chance(TASK_RUNS) {
        return None;
    }
    let poll_min = r.ms(5, 30);
    let plan = TaskPlan {
        poll_min,
        poll_max: r.ms(poll_min.as_millis() as u64, 400),
        max_failures: u8::try_from(r.range(1, 4)).unwrap_or(3),
    };
    for call in calls.iter_mut().filter(|c| c.kind == CallKind::Tool) {
        if !r.chance(TASK_CALLS) {
            continue;
        }
        call.kind = CallKind::Task;
        call.cap = None;
        call.task_timeout = r.chance(40).then(|| r.ms(20, 1_500));
        call.behaviour = match call.behaviour {
            Behaviour::DropAfter(_) => Behaviour::DropAfter(r.ms(0, 1_500)),
            Behaviour::Abort(_) => Behaviour::Abort(r.ms(1, 1_500)),
            other => other,
        };
    }
    Some(plan)
}

/// The share of runs (not looping) that have task-backed tool calls, in percent.
const TASK_RUNS: u64 = 35;
/// The share of a task run's tool calls that are of the task tool, in percent.
const TASK_CALLS: u64 = 30;
