//! The simulation of a group: 2 to 4 simulated servers, each with its own network, server and
//! faults (drawn from its own sub-seed of the run's seed, as a single client's run draws them),
//! started as one [`ClientGroup`] (fail-open; in some runs some servers' first connections fail),
//! callers calling through the group (`call_tool_on_with(server, …)`; some waiting for ready,
//! some not; with timeouts, progress, futures dropped and tasks aborted), the group stopped
//! (during the faults, or after they end and every server came back) or dropped, and then every
//! server's history judged by the single client's oracles ([`super::oracle::check`]) and by the
//! group's own ([`check_member`]).
//!
//! What a group's run is not: a run of task calls (the group's runs have none) or of the
//! group's merged names (calls name their server; the merged view is the group tests' part).

use std::time::Duration;

use futures_util::future::join_all;
use mcp_runtime::trace::TraceRecorder;
use mcp_runtime::{Client, ClientBuilder, ClientGroup, ConnState, EraMode, GroupError};
use mcp_runtime::{RequestOptions, types::CallToolResult};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::capture::ErrorCapture;
use super::history::{CallKind, Entry, Event, Log, Outcome};
use super::net::Net;
use super::oracle::{self, Bounds, Violation};
use super::rng::Rng;
use super::scenario::{Behaviour, CallPlan, Ending, Scenario};
use super::server::{self, ConnPlan, ConnectPlan, InitPlan};
use super::{Ctx, QUIET, WATCHDOG, log_transitions, trace_context};

/// Where a caller's calls go: a client, or one server of a group (routed by the group).
#[derive(Clone)]
pub(super) enum Via {
    /// The client itself.
    Client(Client),
    /// Server `server` of `group`.
    Group {
        /// The group.
        group: ClientGroup,
        /// The server's name in it.
        server: String,
    },
}

/// What a group's error other than its server's own (an unknown server, a stopped group)
/// becomes in a history: [`Outcome::Other`] starting with this, which [`check_member`] reports.
const GROUP_ERROR: &str = "group error: ";

impl Via {
    /// The connection state now: the client's, or the group's snapshot of the server.
    pub(super) fn state(&self) -> ConnState {
        match self {
            Via::Client(client) => client.state(),
            Via::Group { group, server } => group
                .snapshot()
                .get(server)
                .map_or(ConnState::Closed, |s| s.state),
        }
    }

    /// `tools/call` of `tool`, as the caller saw it end.
    pub(super) async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Outcome {
        let text = |r: CallToolResult| Some(r.text());
        match self {
            Via::Client(client) => {
                Outcome::of(client.call_tool_with(tool, arguments, options).await, text)
            }
            Via::Group { group, server } => {
                match group
                    .call_tool_on_with(server, tool, arguments, options)
                    .await
                {
                    Ok(result) => Outcome::Ok {
                        token: text(result),
                    },
                    Err(GroupError::Server { source, .. }) => Outcome::of(Err(source), text),
                    Err(other) => Outcome::Other(format!("{GROUP_ERROR}{other}")),
                }
            }
        }
    }

    /// `ping` (a group routes no ping: its server's client is asked).
    pub(super) async fn ping(&self) -> Outcome {
        match self.client() {
            Ok(client) => Outcome::of(client.ping().await, |()| None),
            Err(outcome) => outcome,
        }
    }

    /// A notification carrying `params` (on the server's client, as [`Via::ping`]).
    pub(super) async fn notify(&self, params: Value) -> Outcome {
        match self.client() {
            Ok(client) => Outcome::of(
                client.notify("notifications/sim", Some(params)).await,
                |()| None,
            ),
            Err(outcome) => outcome,
        }
    }

    fn client(&self) -> Result<Client, Outcome> {
        match self {
            Via::Client(client) => Ok(client.clone()),
            Via::Group { group, server } => group
                .client(server)
                .ok_or_else(|| Outcome::Other(format!("{GROUP_ERROR}no server {server}"))),
        }
    }
}

/// The servers' names, in the order they are drawn.
const NAMES: [&str; 4] = ["alpha", "beta", "gamma", "delta"];

/// The most calls a server of a group's run gets (its sub-scenario draws 40 to 160): a group
/// run is about several servers at once, and more seeds beat more calls per seed.
const MAX_CALLS: usize = 60;

/// The share of the servers whose first connection is drawn to fail, in percent.
const FIRST_FAILS: u64 = 40;

/// How long a group's start may take before the run reports it never returned: each first
/// attempt is bounded by its connect timeout (2 s at most) and a first list fetch by the
/// request timeout, so this is far past any.
const START_BOUND: Duration = Duration::from_secs(30);

/// One server of a group's run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberPlan {
    /// Its name in the group.
    pub name: String,
    /// Its sub-seed: its network's faults and its client's jitter come from it.
    pub seed: u64,
    /// What its sub-seed decides, as for a single client's run (its callers, its client's
    /// settings, whether its connections loop); with no task calls, and its ending unused (the
    /// group's is).
    pub scenario: Scenario,
    /// Its client's default for `wait_for_ready` (`ClientBuilder::wait_for_ready`).
    pub wait_default: bool,
    /// Whether its sub-seed was picked for a first connection that fails (refused, hung, or a
    /// handshake refused or never answered); what happened is in its history.
    pub first_fails: bool,
}

/// Everything a group run's seed decides before the run starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupScenario {
    /// The servers, 2 to 4.
    pub members: Vec<MemberPlan>,
    /// How the run ends, for every server at once.
    pub ending: Ending,
}

impl GroupScenario {
    /// The group scenario of `seed` (its own streams: not the single run of the same seed).
    pub fn draw(seed: u64) -> Self {
        let mut r = Rng::derive(seed, GROUP_STREAM);
        let count = r.range(2, NAMES.len() as u64) as usize;
        let mut last_start = Duration::ZERO;
        let members = NAMES[..count]
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let first_fails = r.chance(FIRST_FAILS);
                let seed = pick_sub_seed(
                    &mut Rng::derive(seed, GROUP_STREAM + 1 + k as u64),
                    first_fails,
                );
                let mut scenario = Scenario::draw(seed);
                scenario.tasks = None;
                scenario.calls.truncate(MAX_CALLS);
                for call in &mut scenario.calls {
                    if call.kind == CallKind::Task {
                        call.kind = CallKind::Tool;
                        call.task_timeout = None;
                    }
                    call.wait = match (call.kind, r.range(0, 99)) {
                        (CallKind::Tool, 0..=39) => Some(true),
                        (CallKind::Tool, 40..=54) => Some(false),
                        _ => None,
                    };
                    last_start = last_start.max(call.start);
                }
                MemberPlan {
                    name: (*name).to_owned(),
                    seed,
                    scenario,
                    wait_default: r.chance(30),
                    first_fails,
                }
            })
            .collect();
        let ending = match r.range(0, 99) {
            0..=34 => Ending::StopDuringFaults {
                at: r.ms(0, last_start.as_millis() as u64 + 200),
                second: r.chance(20).then(|| r.ms(0, 50)),
            },
            35..=79 => Ending::StopAfterCalm,
            _ => Ending::DropAfterCalm,
        };
        GroupScenario { members, ending }
    }
}

/// The stream of a seed's generator that a group's scenario draws from (a single run's draw
/// 0 to 3, its connections from 2^40).
const GROUP_STREAM: u64 = 1 << 20;

/// A sub-seed from `r` whose first connection fails (or not) as `fails` says, if one of the
/// first 32 drawn does.
fn pick_sub_seed(r: &mut Rng, fails: bool) -> u64 {
    let mut seed = r.next_u64();
    for _ in 0..32 {
        if first_connection_fails(seed) == fails {
            break;
        }
        seed = r.next_u64();
    }
    seed
}

/// Whether the first connection of the network of `seed` is drawn to fail before the client
/// is ready: as [`Net`] draws it (connection 0's generator is stream 2^40 of the seed).
fn first_connection_fails(seed: u64) -> bool {
    let sc = Scenario::draw(seed);
    if sc.looping.is_some() {
        // Every connection of a looping run shakes hands first.
        return false;
    }
    let plan = ConnPlan::draw(&mut Rng::derive(seed, 1 << 40));
    let init_in_time = match plan.init {
        InitPlan::Accept(after) => after < sc.connect_timeout,
        _ => false,
    };
    !matches!(plan.connect, ConnectPlan::Ok(_)) || !init_in_time
}

/// One server of a finished group run.
#[derive(Debug)]
pub struct MemberRun {
    /// Its name.
    pub name: String,
    /// Its sub-seed.
    pub seed: u64,
    /// What its history shows.
    pub history: Vec<Entry>,
    /// What the oracles found wrong in it (empty when every property holds).
    pub violations: Vec<Violation>,
}

/// A finished group run.
#[derive(Debug)]
pub struct GroupRun {
    /// Its seed.
    pub seed: u64,
    /// Calls issued, over every server.
    pub calls: usize,
    /// Each server's run.
    pub members: Vec<MemberRun>,
}

impl GroupRun {
    /// Whether every property holds for every server.
    pub fn holds(&self) -> bool {
        self.members.iter().all(|m| m.violations.is_empty())
    }

    /// A report of the violations, server by server, with the history around the first one of
    /// the first server that has some, and how to replay the seed.
    pub fn report(&self) -> String {
        let mut s = format!("group simulation: seed {} broke properties:\n", self.seed);
        for m in &self.members {
            for v in m.violations.iter().take(20) {
                s.push_str(&format!("  server {} (sub-seed {}): {v}\n", m.name, m.seed));
            }
        }
        if let Some(m) = self.members.iter().find(|m| !m.violations.is_empty()) {
            let first = m.violations.iter().map(|v| v.index).min().unwrap_or(0);
            let from = first.saturating_sub(60);
            let to = (first + 20).min(m.history.len());
            s.push_str(&format!(
                "server {}'s history, entries {from}..{to} of {} (SIM_VERBOSE=1 prints all):\n",
                m.name,
                m.history.len()
            ));
            s.push_str(&super::history::render(&m.history[from..to], from));
        }
        s.push_str(&format!(
            "SIM_GROUP_SEED={}\n{}\n",
            self.seed,
            replay_command(self.seed)
        ));
        s
    }
}

/// The command that replays group seed `seed`.
pub fn replay_command(seed: u64) -> String {
    format!(
        "replay: SIM_GROUP_SEED={seed} cargo test -p mcp-tests --test simulation -- \
         simulated_groups_hold_the_properties --nocapture"
    )
}

/// Runs the group simulation of `seed` and checks the oracles on each server's history, with
/// the same watchdog as [`super::run_seed`].
pub fn run_group_seed(seed: u64) -> GroupRun {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("sim-group-{seed}"))
        .spawn(move || {
            let _ = tx.send(run_here(seed));
        })
        .expect("a thread for the run");
    match rx.recv_timeout(WATCHDOG) {
        Ok(run) => run,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!(
            "group simulation: seed {seed} panicked (above)\n{}",
            replay_command(seed)
        ),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "group simulation: seed {seed} did not end within {WATCHDOG:?} of real time\n{}",
            replay_command(seed)
        ),
    }
}

fn run_here(seed: u64) -> GroupRun {
    let gs = GroupScenario::draw(seed);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let capture = ErrorCapture::default();
    let histories = tracing::subscriber::with_default(capture.clone(), || {
        runtime.block_on(simulate(seed, &gs, capture.clone()))
    });
    drop(runtime);
    let mut calls = 0;
    let mut stops = check_stops(&histories.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let members = gs
        .members
        .iter()
        .zip(histories)
        .enumerate()
        .map(|(k, (m, history))| {
            calls += history
                .iter()
                .filter(|e| matches!(e.event, Event::Issued { .. }))
                .count();
            let bounds = Bounds {
                stop_returns: Some(Duration::from_secs(5)),
                ..Bounds::default()
            };
            let mut violations = oracle::check(&history, &bounds);
            violations.extend(check_member(&m.name, &tokens(seed, &m.name), &history));
            violations.extend(stops.remove(&k).unwrap_or_default());
            violations.sort_by_key(|v| v.index);
            MemberRun {
                name: m.name.clone(),
                seed: m.seed,
                history,
                violations,
            }
        })
        .collect();
    GroupRun {
        seed,
        calls,
        members,
    }
}

/// What the tokens of server `name`'s callers start with: the run's seed and the server's
/// name, so a token names the one server its call is for.
fn tokens(seed: u64, name: &str) -> String {
    format!("s{seed}.{name}.")
}

/// One server of the run while it runs.
struct Member {
    log: Log,
    recorder: TraceRecorder,
    ctx: Ctx,
}

async fn simulate(seed: u64, gs: &GroupScenario, capture: ErrorCapture) -> Vec<Vec<Entry>> {
    let defaults = mcp_machine::Config::default();
    let (calm_tx, calm_rx) = watch::channel(false);
    let mut watchers: Vec<JoinHandle<()>> = Vec::new();
    let mut members = Vec::new();
    let mut builder = ClientGroup::builder();
    for m in &gs.members {
        let sc = &m.scenario;
        let log = Log::new();
        log.push(Event::Config {
            backoff: sc.backoff,
            max_session_reinits: defaults.max_session_reinits,
            session_stable: defaults.session_stable,
            looping: sc.looping.map(|l| format!("{l:?}")),
        });
        let net = Net::new(
            m.seed,
            log.clone(),
            calm_rx.clone(),
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
        let client = ClientBuilder::new(net.connector())
            .seed(sc.client_seed)
            .era(era)
            .request_timeout(sc.request_timeout)
            .connect_timeout(sc.connect_timeout)
            .init_timeout(sc.init_timeout)
            .backoff(min, max, jitter)
            .send_queue(sc.send_queue)
            .max_frame_bytes(server::MAX_FRAME)
            .wait_for_ready(m.wait_default)
            .record_trace(recorder.clone());
        watchers.push(tokio::spawn(log_transitions(
            client.transitions(),
            log.clone(),
        )));
        builder = builder.server(m.name.clone(), client);
        members.push(Member {
            log: log.clone(),
            recorder,
            ctx: Ctx {
                tokens: tokens(seed, &m.name),
                log,
                default_timeout: sc.request_timeout,
                default_wait: m.wait_default,
            },
        });
    }
    let each = |event: Event| members.iter().for_each(|m| m.log.push(event.clone()));

    // Fail-open: it returns whatever the first attempts did (each bounded by its connect
    // timeout). One that never returns is reported (no `GroupStarted`).
    let group = match tokio::time::timeout(START_BOUND, builder.start()).await {
        Ok(Ok(group)) => Some(group),
        Ok(Err(e)) => {
            each(Event::RuntimeError {
                message: format!("the group did not start: {e}"),
            });
            None
        }
        Err(_) => None,
    };
    if let Some(group) = group {
        each(Event::GroupStarted);
        run_group(gs, &members, group, &mut watchers, calm_tx).await;
    }

    let bound = Duration::from_secs(5);
    for watcher in watchers {
        let abort = watcher.abort_handle();
        if tokio::time::timeout(bound, watcher).await.is_err() {
            abort.abort();
        }
    }
    // Everything should end now: the drivers, their transports, the servers.
    let metrics = tokio::runtime::Handle::current().metrics();
    let give_up = Instant::now() + Duration::from_secs(3);
    while metrics.num_alive_tasks() > 0 && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    each(Event::TasksLeft {
        alive: metrics.num_alive_tasks(),
    });
    for m in &members {
        let error = match m.recorder.trace() {
            Err(e) => Some(e.to_string()),
            Ok(trace) => match mcp_runtime::trace::replay(&trace) {
                Ok(_) => None,
                Err(e) => Some(format!("{e}\n{}", trace_context(&trace, &e))),
            },
        };
        m.log.push(Event::TraceReplayed { error });
    }
    // What the runtime logged is not any one server's: it goes in the first one's history.
    for message in capture.take() {
        members[0].log.push(Event::RuntimeError { message });
    }
    each(Event::End);
    members.iter().map(|m| m.log.entries()).collect()
}

/// The run once the group started: the callers, the stops, the calm, the end.
async fn run_group(
    gs: &GroupScenario,
    members: &[Member],
    group: ClientGroup,
    watchers: &mut Vec<JoinHandle<()>>,
    calm_tx: watch::Sender<bool>,
) {
    let logs: Vec<Log> = members.iter().map(|m| m.log.clone()).collect();
    let names: Vec<String> = gs.members.iter().map(|m| m.name.clone()).collect();
    let each = |event: Event| logs.iter().for_each(|l| l.push(event.clone()));
    for (m, member) in gs.members.iter().zip(members) {
        // Fail-open: every server is in the group, whatever its first attempt did.
        let Some(client) = group.client(&m.name) else {
            member.log.push(Event::RuntimeError {
                message: format!("server {} is not in the group after its start", m.name),
            });
            continue;
        };
        let (mut states, log) = (client.watch_state(), member.log.clone());
        drop(client);
        watchers.push(tokio::spawn(async move {
            if states.wait_for(|s| *s == ConnState::Closed).await.is_ok() {
                log.push(Event::Closed);
            }
        }));
    }
    let start = Instant::now();
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    let mut last_deadline = Duration::ZERO;
    for (m, member) in gs.members.iter().zip(members) {
        for (n, plan) in m.scenario.calls.iter().enumerate() {
            let longest = match plan.behaviour {
                Behaviour::DropAfter(d) | Behaviour::Abort(d) => d,
                _ => Duration::ZERO,
            }
            .max(plan.cap.unwrap_or(m.scenario.timeout_of(plan)));
            last_deadline = last_deadline.max(plan.start + longest);
            let via = Via::Group {
                group: group.clone(),
                server: m.name.clone(),
            };
            let caller = tokio::spawn(member.ctx.clone().call(n, plan.clone(), via, false));
            if let Behaviour::Abort(after) = plan.behaviour {
                let (log, victim) = (member.log.clone(), caller.abort_handle());
                let at = start + plan.start + after;
                tasks.push(tokio::spawn(async move {
                    tokio::time::sleep_until(at).await;
                    if !victim.is_finished() {
                        victim.abort();
                        log.push(Event::Dropped { call: n });
                    }
                }));
            }
            tasks.push(caller);
        }
    }
    if let Ending::StopDuringFaults { at, second } = gs.ending {
        let stops = [Some(at), second.map(|d| at + d)];
        for (stop, at) in stops.into_iter().enumerate() {
            let Some(at) = at else { continue };
            let (group, names, logs) = (group.clone(), names.clone(), logs.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep_until(start + at).await;
                stop_group(&group, &names, &logs, stop).await;
            }));
        }
    }
    // As in a single run: a caller still waiting well past its deadline is left for the
    // oracle to report.
    let give_up = start + last_deadline + Duration::from_secs(5);
    for task in tasks {
        let abort = task.abort_handle();
        if tokio::time::timeout_at(give_up, task).await.is_err() {
            abort.abort();
        }
    }

    let mut group = Some(group);
    if matches!(gs.ending, Ending::StopAfterCalm | Ending::DropAfterCalm) {
        let g = group.clone().expect("the group is held");
        for (m, member) in gs.members.iter().zip(members) {
            member.log.push(Event::Calm {
                ready_within: m.scenario.ready_within(),
            });
        }
        calm_tx.send_replace(true);
        let calm_at = Instant::now();
        // Every server back within its own bound, all at once; then a call to each that is.
        let waits: Vec<JoinHandle<bool>> = gs
            .members
            .iter()
            .zip(members)
            .map(|(m, member)| {
                let states = g.client(&m.name).map(|c| c.watch_state());
                let grace = m.scenario.ready_within() + Duration::from_secs(1);
                let log = member.log.clone();
                tokio::spawn(async move {
                    let Some(mut states) = states else {
                        return false;
                    };
                    let is_ready = matches!(
                        tokio::time::timeout_at(
                            calm_at + grace,
                            states.wait_for(|s| *s == ConnState::Ready)
                        )
                        .await,
                        Ok(Ok(_))
                    );
                    if is_ready {
                        log.push(Event::Ready);
                    }
                    is_ready
                })
            })
            .collect();
        let mut ready = Vec::with_capacity(waits.len());
        for wait in waits {
            ready.push(wait.await.unwrap_or(false));
        }
        let mut recoveries: Vec<JoinHandle<()>> = Vec::new();
        for ((m, member), _) in gs
            .members
            .iter()
            .zip(members)
            .zip(&ready)
            .filter(|(_, r)| **r)
        {
            let recovery = CallPlan {
                start: Duration::ZERO,
                kind: CallKind::Tool,
                timeout: Some(Duration::from_secs(2)),
                cap: None,
                behaviour: Behaviour::Await,
                task_timeout: None,
                wait: None,
            };
            let via = Via::Group {
                group: g.clone(),
                server: m.name.clone(),
            };
            let n = m.scenario.calls.len();
            // Bounded: a call that never completes is the oracle's to report.
            let call = member.ctx.clone().call(n, recovery, via, true);
            recoveries.push(tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(3), call).await;
            }));
        }
        for recovery in recoveries {
            let _ = recovery.await;
        }
        drop(g);
        // Time for every owed frame (cancels of calls ended earlier) to reach the servers.
        tokio::time::sleep(QUIET).await;
        for (member, r) in members.iter().zip(&ready) {
            if *r {
                member.log.push(Event::Quiet);
            }
        }
        if gs.ending == Ending::StopAfterCalm {
            stop_group(group.as_ref().expect("the group is held"), &names, &logs, 0).await;
        } else {
            each(Event::HandlesDropped);
            group = None;
        }
    }
    drop(group);
}

/// The harness's stop number `stop` of the group: logged in every server's history, with
/// (for the first) each server's `Client::closed` returning ([`Event::Finished`], as it
/// happens: the group's stop must return when the last of them does, not after their sum).
/// All in one task, polled in a fixed order: what is logged at one instant is logged in the
/// same order in every run of the seed.
async fn stop_group(group: &ClientGroup, names: &[String], logs: &[Log], stop: usize) {
    let bound = Duration::from_secs(5);
    let clients: Vec<(Client, Log)> = if stop == 0 {
        names
            .iter()
            .zip(logs)
            .filter_map(|(name, log)| Some((group.client(name)?, log.clone())))
            .collect()
    } else {
        Vec::new()
    };
    let finishing = join_all(clients.iter().map(|(client, log)| async move {
        if tokio::time::timeout(bound, client.closed()).await.is_ok() {
            log.push(Event::Finished);
        }
    }));
    logs.iter().for_each(|l| l.push(Event::StopIssued { stop }));
    let stopping = async {
        if tokio::time::timeout(bound, group.stop()).await.is_ok() {
            logs.iter()
                .for_each(|l| l.push(Event::StopReturned { stop }));
        }
    };
    futures_util::future::join(stopping, finishing).await;
}

/// The group's own properties on server `name`'s history (its callers' tokens start with
/// `tokens`), beyond the single client's:
///
/// - the group's start returned (fail-open, with this server in the group whatever its first
///   attempt did);
/// - no cross-talk: every call this server's simulated server got is one of its own callers'
///   (its token names this server), and every answer its callers got (a result, or the
///   server's error) is to a request this server's simulated server got, earlier, in this
///   history: a call routed to another server would be got there, and answered from there;
/// - no group error (unknown server, stopped group) for a call to a member: its own errors
///   only.
pub fn check_member(name: &str, tokens: &str, history: &[Entry]) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut bad = |index: usize, what: String| v.push(Violation { index, what });
    let mut started = 0;
    let mut got = std::collections::BTreeSet::new();
    let mut issued = std::collections::BTreeMap::new();
    for (i, e) in history.iter().enumerate() {
        match &e.event {
            Event::GroupStarted => started += 1,
            Event::Issued { call, token, .. } => {
                if !token.starts_with(tokens) {
                    bad(
                        i,
                        format!("call {call} of server {name} carries {token}, not its server's"),
                    );
                }
                issued.insert(*call, token.clone());
            }
            Event::ServerGot {
                conn,
                id,
                token: Some(token),
                ..
            } => {
                if !token.starts_with(tokens) {
                    bad(
                        i,
                        format!(
                            "server {name} got request {id} (connection {conn}) carrying \
                             {token}: a call routed to another server"
                        ),
                    );
                }
                got.insert(token.clone());
            }
            Event::Outcome { call, outcome } => {
                let Some(token) = issued.get(call) else {
                    continue;
                };
                let answered = match outcome {
                    Outcome::Ok { token: Some(t) } => Some(t.as_str()),
                    Outcome::Server { message } if message.ends_with(token.as_str()) => {
                        Some(token.as_str())
                    }
                    Outcome::Other(what) if what.starts_with(GROUP_ERROR) => {
                        bad(i, format!("call {call} to server {name} got {what}"));
                        None
                    }
                    _ => None,
                };
                if let Some(t) = answered
                    && !got.contains(t)
                {
                    bad(
                        i,
                        format!(
                            "call {call} to server {name} was answered ({outcome:?}) for a \
                             request server {name} never got: answered from another server"
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    if started != 1 {
        bad(
            history.len(),
            format!("the group's start returned {started} times (once expected)"),
        );
    }
    v
}

/// The group's stop, judged across its servers' histories (by server, in order): it stops
/// every server at once (each one's connection is closing at the instant of the first stop),
/// and returns when the last server's client is closed (its transports ended), not before
/// (it waits for all) nor later (not after their sum): at that instant, or at its own if it
/// was issued after.
pub fn check_stops(histories: &[&[Entry]]) -> std::collections::BTreeMap<usize, Vec<Violation>> {
    let mut found: std::collections::BTreeMap<usize, Vec<Violation>> = Default::default();
    let last_finished = histories
        .iter()
        .filter_map(|h| {
            h.iter()
                .filter(|e| e.event == Event::Finished)
                .map(|e| e.at)
                .max()
        })
        .max();
    for (k, history) in histories.iter().enumerate() {
        let mut bad = |index: usize, what: String| {
            found.entry(k).or_default().push(Violation { index, what })
        };
        let mut issued = std::collections::BTreeMap::new();
        let mut first_stop: Option<Duration> = None;
        let mut closing_checked = false;
        for (i, e) in history.iter().enumerate() {
            match &e.event {
                Event::StopIssued { stop } => {
                    issued.insert(*stop, e.at);
                    first_stop.get_or_insert(e.at);
                }
                Event::Transition {
                    to: ConnState::Closing,
                    ..
                } if !closing_checked => {
                    closing_checked = true;
                    if let Some(stop) = first_stop
                        && e.at != stop
                    {
                        bad(
                            i,
                            format!(
                                "closing {:?} after the group's stop: not stopped with the others",
                                e.at - stop
                            ),
                        );
                    }
                }
                Event::StopReturned { stop } => {
                    let Some(since) = issued.get(stop) else {
                        continue;
                    };
                    let Some(last) = last_finished else {
                        // No client closed: the single client's oracle reports it.
                        continue;
                    };
                    let due = last.max(*since);
                    if e.at != due {
                        bad(
                            i,
                            format!(
                                "the group's stop {stop} returned at {:?}, though the last of its \
                                 servers' clients closed at {last:?} (due at {due:?}: the \
                                 slowest one's time)",
                                e.at
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(at: u64, event: Event) -> Entry {
        Entry {
            at: Duration::from_millis(at),
            event,
        }
    }

    fn issued(call: usize, token: &str) -> Event {
        Event::Issued {
            call,
            kind: CallKind::Tool,
            token: token.to_owned(),
            timeout: Duration::from_millis(100),
            cap: None,
            recovery: false,
            task_timeout: None,
        }
    }

    fn got(token: &str) -> Event {
        Event::ServerGot {
            conn: 0,
            id: 7,
            method: "tools/call".to_owned(),
            token: Some(token.to_owned()),
        }
    }

    fn ok(call: usize, token: &str) -> Event {
        Event::Outcome {
            call,
            outcome: Outcome::Ok {
                token: Some(token.to_owned()),
            },
        }
    }

    fn whats(v: &[Violation]) -> String {
        v.iter().map(|v| format!("{v}\n")).collect()
    }

    #[test]
    fn an_answer_from_the_own_server_passes() {
        let h = vec![
            e(0, Event::GroupStarted),
            e(1, issued(0, "s1.alpha.c0")),
            e(2, got("s1.alpha.c0")),
            e(3, ok(0, "s1.alpha.c0")),
        ];
        let v = check_member("alpha", "s1.alpha.", &h);
        assert_eq!(v, vec![], "{}", whats(&v));
    }

    #[test]
    fn cross_talk_is_caught_on_both_sides() {
        // Routed to beta: alpha's caller is answered with its own token, which alpha's server
        // never got; beta's server got a token that is not beta's.
        let alpha = vec![
            e(0, Event::GroupStarted),
            e(1, issued(0, "s1.alpha.c0")),
            e(3, ok(0, "s1.alpha.c0")),
        ];
        let w = whats(&check_member("alpha", "s1.alpha.", &alpha));
        assert!(w.contains("answered from another server"), "{w}");
        let beta = vec![e(0, Event::GroupStarted), e(2, got("s1.alpha.c0"))];
        let w = whats(&check_member("beta", "s1.beta.", &beta));
        assert!(w.contains("routed to another server"), "{w}");
    }

    #[test]
    fn a_group_error_or_a_missing_start_is_caught() {
        let h = vec![
            e(1, issued(0, "s1.alpha.c0")),
            e(
                3,
                Event::Outcome {
                    call: 0,
                    outcome: Outcome::Other(format!("{GROUP_ERROR}no server named alpha")),
                },
            ),
        ];
        let w = whats(&check_member("alpha", "s1.alpha.", &h));
        assert!(w.contains("got group error"), "{w}");
        assert!(w.contains("start returned 0 times"), "{w}");
    }

    fn stop_history(closing: u64, finished: u64, returned: u64) -> Vec<Entry> {
        vec![
            e(100, Event::StopIssued { stop: 0 }),
            e(
                closing,
                Event::Transition {
                    from: ConnState::Ready,
                    to: ConnState::Closing,
                    expired: false,
                    retry_in: None,
                },
            ),
            e(finished, Event::Finished),
            e(returned, Event::StopReturned { stop: 0 }),
        ]
    }

    #[test]
    fn the_group_stops_its_servers_at_once_and_returns_with_the_slowest() {
        let (a, b) = (stop_history(100, 150, 180), stop_history(100, 180, 180));
        let found = check_stops(&[&a, &b]);
        assert!(found.is_empty(), "{found:?}");
        // One after the other: the second one closing late.
        let (a, b) = (stop_history(100, 150, 330), stop_history(150, 330, 330));
        let found = check_stops(&[&a, &b]);
        let w = |k: usize| whats(found.get(&k).map_or(&[][..], Vec::as_slice));
        assert!(w(1).contains("not stopped with the others"), "{}", w(1));
        assert!(w(0).is_empty(), "{}", w(0));
        // Returning later than the last server's client closed.
        let (a, b) = (stop_history(100, 150, 400), stop_history(100, 180, 400));
        let found = check_stops(&[&a, &b]);
        assert!(
            whats(&found[&0]).contains("stop 0 returned at 400ms"),
            "{found:?}"
        );
        // Returning before the last server's client closed.
        let (a, b) = (stop_history(100, 150, 150), stop_history(100, 180, 150));
        let found = check_stops(&[&a, &b]);
        assert!(whats(&found[&0]).contains("due at 180ms"), "{found:?}");
    }

    #[test]
    fn a_group_scenario_has_two_to_four_servers_with_their_own_seeds() {
        for seed in 0..50 {
            let gs = GroupScenario::draw(seed);
            assert!((2..=4).contains(&gs.members.len()));
            let seeds: std::collections::BTreeSet<u64> =
                gs.members.iter().map(|m| m.seed).collect();
            assert_eq!(seeds.len(), gs.members.len());
            assert!(
                gs.members
                    .iter()
                    .all(|m| m.scenario.calls.len() <= MAX_CALLS
                        && m.scenario.calls.iter().all(|c| c.kind != CallKind::Task))
            );
            assert_eq!(gs, GroupScenario::draw(seed));
        }
    }
}
