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
        Scenario {
            client_seed,
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
    }
}
