//! Trace validation: what the runtime did is a behaviour of the machine.
//!
//! A [`TraceRecorder`] given to [`crate::ClientBuilder::record_trace`] records what the driver
//! fed its [`Machine`] and what came out: the [`Config`] and seed the machine was created with,
//! then in order every [`Input`] with its `now`, every [`Machine::handle_timeout`] call, every
//! [`Step`] (row fired) and every [`Action`] as polled. [`replay`] feeds the same inputs at the
//! same times into a fresh machine, drains it the way the driver does, and checks that it fires
//! the same rows and gives the same actions; then it runs monitors over the recorded actions
//! (no impossible row, no caller answered twice, nothing sent after a stop, one exit).
//!
//! The driver hands its records over one *turn* at a time (an input or a timeout with its step
//! and every action it drained, send outcomes included), so a trace taken at any moment ends
//! on a turn boundary. Without a recorder nothing is recorded and nothing is cloned.
//!
//! What this does not check: whether the driver carried the actions out correctly (that the
//! frames reached the transport, that callers got the answer), nor timing beyond the `now`
//! values the driver read; a replay proves the recorded run is one the machine (and so the
//! model-checked table) allows for those inputs at those times.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcp_machine::{Action, CallId, Config, Input, Machine, Report, Step};

/// How many records a [`TraceRecorder::new`] keeps at most before it stops recording.
pub const DEFAULT_TRACE_LIMIT: usize = 1_000_000;

/// One thing the driver did with its machine, in the order it did it.
///
/// It is a record of the driver's side of the machine's interface, not of what the driver then
/// did with the actions (spawned tasks, transport outcomes other than send outcomes, answers).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Record {
    /// An input fed with [`Machine::handle`] (a send outcome too: it follows its
    /// [`Action::Send`]).
    Input {
        /// The input.
        input: Input,
        /// The `now` it was fed with (time since the driver's epoch).
        now: Duration,
    },
    /// A call of [`Machine::handle_timeout`]; the steps it returned follow.
    Timeout {
        /// The `now` it was called with.
        now: Duration,
    },
    /// A row that fired: the step of the input before it, or one of a timeout's steps.
    Step(Step),
    /// An action as [`Machine::poll_action`] gave it, before the driver carried it out.
    Action(Action),
}

/// A recorded run of one machine: how it was created and every [`Record`] in order.
///
/// A plain value (it can be built or edited by hand, e.g. to check that a tampered trace is
/// refused); it is not a live view of the recorder (take a new one with
/// [`TraceRecorder::trace`]).
#[derive(Clone, Debug)]
pub struct Trace {
    /// The configuration the machine was created with (capabilities included).
    pub config: Config,
    /// The seed the machine was created with.
    pub seed: u64,
    /// What happened, in order.
    pub records: Vec<Record>,
    /// Whether recording stopped at the recorder's limit: the records are then a prefix of the
    /// run, and [`replay`] says the trace is incomplete instead of claiming success.
    pub overflowed: bool,
}

/// A cheap, cloneable handle to a bounded trace of one client's machine.
///
/// Give a clone to [`crate::ClientBuilder::record_trace`] and keep one to read the trace with
/// [`TraceRecorder::trace`] (at any time; usually after [`crate::Client::closed`]). It records
/// one client: attached to a second one, its trace is refused ([`TraceError::SharedRecorder`]).
/// It is bounded: beyond its limit it records nothing more and remembers that it overflowed.
/// It is not a log for production use: every frame is kept in memory.
#[derive(Clone)]
pub struct TraceRecorder {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    start: Option<(Config, u64)>,
    machines: usize,
    records: Vec<Record>,
    limit: usize,
    overflowed: bool,
}

impl std::fmt::Debug for TraceRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("TraceRecorder")
            .field("machines", &inner.machines)
            .field("records", &inner.records.len())
            .field("limit", &inner.limit)
            .field("overflowed", &inner.overflowed)
            .finish()
    }
}

impl Default for TraceRecorder {
    /// [`TraceRecorder::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl TraceRecorder {
    /// A recorder keeping at most [`DEFAULT_TRACE_LIMIT`] records.
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_TRACE_LIMIT)
    }

    /// A recorder keeping at most `limit` records. A turn that would go beyond it is dropped
    /// whole and recording stops (the trace stays a prefix that ends on a turn boundary).
    pub fn with_limit(limit: usize) -> Self {
        TraceRecorder {
            inner: Arc::new(Mutex::new(Inner {
                start: None,
                machines: 0,
                records: Vec::new(),
                limit,
                overflowed: false,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many records it holds now.
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// Whether it holds no record yet.
    pub fn is_empty(&self) -> bool {
        self.lock().records.is_empty()
    }

    /// Whether recording stopped at the limit.
    pub fn overflowed(&self) -> bool {
        self.lock().overflowed
    }

    /// A copy of the trace so far (every complete turn). Fails if the recorder was never given
    /// to a client that started, or was given to more than one.
    pub fn trace(&self) -> Result<Trace, TraceError> {
        let inner = self.lock();
        if inner.machines > 1 {
            return Err(TraceError::SharedRecorder {
                machines: inner.machines,
            });
        }
        let Some((config, seed)) = inner.start.clone() else {
            return Err(TraceError::NotStarted);
        };
        Ok(Trace {
            config,
            seed,
            records: inner.records.clone(),
            overflowed: inner.overflowed,
        })
    }

    /// Notes the machine being created (called once per client, before `Machine::new`).
    pub(crate) fn begin(&self, config: &Config, seed: u64) {
        let mut inner = self.lock();
        inner.machines += 1;
        if inner.start.is_none() {
            inner.start = Some((config.clone(), seed));
        }
    }

    /// Appends one turn whole, or stops recording if it does not fit. Empties `batch`.
    fn append(&self, batch: &mut Vec<Record>) {
        let mut inner = self.lock();
        if inner.overflowed || inner.records.len() + batch.len() > inner.limit {
            inner.overflowed = true;
            batch.clear();
        } else {
            inner.records.append(batch);
        }
    }
}

/// The driver's side of a recorder: the records of the current turn, handed over whole.
pub(crate) struct TraceSink {
    recorder: TraceRecorder,
    batch: Vec<Record>,
}

impl TraceSink {
    pub(crate) fn new(recorder: TraceRecorder) -> Self {
        TraceSink {
            recorder,
            batch: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, record: Record) {
        self.batch.push(record);
    }

    /// Ends the turn: its records go to the recorder.
    pub(crate) fn end_turn(&mut self) {
        if !self.batch.is_empty() {
            self.recorder.append(&mut self.batch);
        }
    }
}

/// Why a trace is not (or not known to be) a behaviour of the machine.
///
/// Indices are positions in [`Trace::records`]. The two sides of a mismatch are `Debug`
/// renderings of [`Record`]s (or a description of what the replay expected).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The recorder was never given to a client that started.
    #[error("no trace: the recorder was never attached to a started client")]
    NotStarted,
    /// The recorder was given to several clients: their records are interleaved.
    #[error("the recorder was attached to {machines} clients; a trace is of one machine")]
    SharedRecorder {
        /// How many clients it was given to.
        machines: usize,
    },
    /// The replay differs from the recording (or the recording breaks the driver's contract).
    #[error("record {index}: recorded {recorded}, replay gave {replayed}")]
    Mismatch {
        /// The first record that differs (the number of records if the trace ended early).
        index: usize,
        /// The recorded side.
        recorded: String,
        /// The replayed side.
        replayed: String,
    },
    /// Recording stopped at the limit: the prefix replays and passes the monitors, but nothing
    /// is claimed about the rest of the run.
    #[error("incomplete trace: recording stopped at the limit after {records} records")]
    Incomplete {
        /// How many records the prefix has.
        records: usize,
    },
    /// A row the table marks impossible fired.
    #[error("record {index}: row {row}, which the table marks impossible, fired")]
    ImpossibleRow {
        /// The [`Action::Report`] record.
        index: usize,
        /// The row's index in [`mcp_machine::ROWS`].
        row: u16,
    },
    /// A caller was answered twice (by [`Action::Reply`] or [`Action::StopDone`]).
    #[error("caller {call:?} answered twice, at records {first} and {second}")]
    AnsweredTwice {
        /// The caller.
        call: CallId,
        /// The first answer.
        first: usize,
        /// The second answer.
        second: usize,
    },
    /// A caller no input named was answered.
    #[error("record {index}: an answer to caller {call:?}, which no input named")]
    UnknownCaller {
        /// The answer.
        index: usize,
        /// The caller.
        call: CallId,
    },
    /// The machine exited with a caller left unanswered.
    #[error("caller {call:?} (input at record {index}) never answered, though the machine exited")]
    Unanswered {
        /// The input that named the caller.
        index: usize,
        /// The caller.
        call: CallId,
    },
    /// A frame was sent after a stop was answered as "stopped now".
    #[error("record {index}: a send after the stop answered at record {stop}")]
    SendAfterStop {
        /// The [`Action::Send`] record.
        index: usize,
        /// The [`Action::StopDone`] record.
        stop: usize,
    },
    /// More than one [`Action::Exit`].
    #[error("record {second}: a second exit (the first at record {first})")]
    ExitTwice {
        /// The first exit.
        first: usize,
        /// The second exit.
        second: usize,
    },
}

/// What a successful [`replay`] went through.
///
/// Counts of the trace's records, all reproduced by the replay; not a measure of coverage of
/// the table beyond [`ReplayReport::rows`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayReport {
    /// Inputs fed (send outcomes included).
    pub inputs: usize,
    /// Calls of `handle_timeout`.
    pub timeouts: usize,
    /// Rows fired.
    pub steps: usize,
    /// Actions drained.
    pub actions: usize,
    /// The indices (in [`mcp_machine::ROWS`]) of the rows that fired.
    pub rows: BTreeSet<u16>,
    /// Whether the machine exited.
    pub exited: bool,
}

/// Replays `trace` into a fresh machine and runs the monitors.
///
/// The machine is `Machine::new(config, seed, Duration::ZERO)`, like the client's; it is drained
/// first, then each recorded input or timeout is fed at its recorded `now` and its actions are
/// drained, each [`Action::Send`] answered with the recorded send outcome. Every step and every
/// action is compared with the recording; the first difference is a [`TraceError::Mismatch`].
/// Then the monitors run over the recorded actions: no [`Report::ImpossibleRow`], no caller
/// answered twice or answered without being named by an input, every caller answered if the
/// machine exited, no [`Action::Send`] after a `StopDone { already: false }`, at most one
/// [`Action::Exit`]. An overflowed trace that passes all that is still an error
/// ([`TraceError::Incomplete`]).
///
/// It does not check the driver's side effects, only its dialogue with the machine.
pub fn replay(trace: &Trace) -> Result<ReplayReport, TraceError> {
    let mut machine = Machine::new(trace.config.clone(), trace.seed, Duration::ZERO);
    let mut r = Replayer {
        records: &trace.records,
        pos: 0,
        report: ReplayReport::default(),
    };
    r.drain(&mut machine)?;
    while let Some(record) = r.records.get(r.pos) {
        match record {
            Record::Input { input, now } if !matches!(input, Input::SendResult { .. }) => {
                r.pos += 1;
                r.report.inputs += 1;
                let step = machine.handle(input.clone(), *now);
                r.expect(Record::Step(step))?;
                r.drain(&mut machine)?;
            }
            Record::Timeout { now } => {
                r.pos += 1;
                r.report.timeouts += 1;
                for step in machine.handle_timeout(*now) {
                    r.expect(Record::Step(step))?;
                }
                r.drain(&mut machine)?;
            }
            other => {
                return Err(TraceError::Mismatch {
                    index: r.pos,
                    recorded: format!("{other:?}"),
                    replayed: "nothing (the machine is drained: an input or a timeout is due)"
                        .to_owned(),
                });
            }
        }
    }
    let mut report = r.report;
    report.exited = monitors(&trace.records)?;
    if trace.overflowed {
        return Err(TraceError::Incomplete {
            records: trace.records.len(),
        });
    }
    Ok(report)
}

struct Replayer<'a> {
    records: &'a [Record],
    pos: usize,
    report: ReplayReport,
}

impl Replayer<'_> {
    /// The next record must be `replayed`.
    fn expect(&mut self, replayed: Record) -> Result<(), TraceError> {
        let index = self.pos;
        let recorded = self.records.get(index);
        if recorded != Some(&replayed) {
            return Err(mismatch(index, recorded, format!("{replayed:?}")));
        }
        self.pos += 1;
        match replayed {
            Record::Step(step) => {
                self.report.steps += 1;
                self.report.rows.insert(step.row);
            }
            Record::Action(_) => self.report.actions += 1,
            Record::Input { .. } | Record::Timeout { .. } => {}
        }
        Ok(())
    }

    /// Drains the machine like the driver: each action must be the next record, and a send is
    /// answered at once with the recorded outcome.
    fn drain(&mut self, machine: &mut Machine) -> Result<(), TraceError> {
        while let Some(action) = machine.poll_action() {
            let send = match &action {
                Action::Send {
                    generation, token, ..
                } => Some((*generation, *token)),
                _ => None,
            };
            self.expect(Record::Action(action))?;
            let Some((generation, token)) = send else {
                continue;
            };
            let index = self.pos;
            match self.records.get(index) {
                Some(Record::Input {
                    input:
                        input @ Input::SendResult {
                            generation: g,
                            token: t,
                            ..
                        },
                    now,
                }) if *g == generation && *t == token => {
                    self.pos += 1;
                    self.report.inputs += 1;
                    let step = machine.handle(input.clone(), *now);
                    self.expect(Record::Step(step))?;
                }
                other => {
                    let due = format!(
                        "Input {{ input: SendResult {{ generation: {generation}, token: {token:?}, outcome: _ }}, now: _ }} (the outcome of the send)"
                    );
                    return Err(mismatch(index, other, due));
                }
            }
        }
        Ok(())
    }
}

fn mismatch(index: usize, recorded: Option<&Record>, replayed: String) -> TraceError {
    TraceError::Mismatch {
        index,
        recorded: recorded.map_or_else(|| "the end of the trace".to_owned(), |r| format!("{r:?}")),
        replayed,
    }
}

/// The monitors over the recorded actions; returns whether the machine exited.
fn monitors(records: &[Record]) -> Result<bool, TraceError> {
    let mut asked: HashMap<CallId, usize> = HashMap::new();
    let mut answered: HashMap<CallId, usize> = HashMap::new();
    let mut stopped: Option<usize> = None;
    let mut exit: Option<usize> = None;
    for (index, record) in records.iter().enumerate() {
        match record {
            Record::Input { input, .. } => {
                let call = match input {
                    Input::Call(c) => c.call,
                    Input::ResumeTask(r) => r.call,
                    Input::Notify(n) => n.call,
                    Input::Stop { call } => *call,
                    _ => continue,
                };
                asked.entry(call).or_insert(index);
            }
            Record::Action(Action::Report(Report::ImpossibleRow { row })) => {
                return Err(TraceError::ImpossibleRow { index, row: *row });
            }
            Record::Action(
                action @ (Action::Reply { call, .. } | Action::StopDone { call, .. }),
            ) => {
                if let Some(first) = answered.insert(*call, index) {
                    return Err(TraceError::AnsweredTwice {
                        call: *call,
                        first,
                        second: index,
                    });
                }
                if !asked.contains_key(call) {
                    return Err(TraceError::UnknownCaller { index, call: *call });
                }
                if let Action::StopDone { already: false, .. } = action {
                    stopped.get_or_insert(index);
                }
            }
            Record::Action(Action::Send { .. }) => {
                if let Some(stop) = stopped {
                    return Err(TraceError::SendAfterStop { index, stop });
                }
            }
            Record::Action(Action::Exit) => match exit {
                Some(first) => {
                    return Err(TraceError::ExitTwice {
                        first,
                        second: index,
                    });
                }
                None => exit = Some(index),
            },
            Record::Action(_) | Record::Step(_) | Record::Timeout { .. } => {}
        }
    }
    if exit.is_some()
        && let Some((call, index)) = asked
            .iter()
            .filter(|(call, _)| !answered.contains_key(call))
            .min_by_key(|(_, index)| **index)
    {
        return Err(TraceError::Unanswered {
            index: *index,
            call: *call,
        });
    }
    Ok(exit.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_machine::{SendOutcome, TransportError};

    /// Runs a machine the way the driver does, recording into a recorder, with every send
    /// taken; `script` is the inputs to feed, each at its time.
    fn record(script: Vec<(Input, Duration)>) -> Trace {
        record_with(DEFAULT_TRACE_LIMIT, script)
    }

    fn record_with(limit: usize, script: Vec<(Input, Duration)>) -> Trace {
        let recorder = TraceRecorder::with_limit(limit);
        // The scripts answer `initialize` directly: the handshake era, no probe.
        let config = Config {
            era: mcp_machine::EraMode::Legacy,
            ..Config::default()
        };
        recorder.begin(&config, 5);
        let mut machine = Machine::new(config, 5, Duration::ZERO);
        let mut sink = TraceSink::new(recorder.clone());
        drain(&mut machine, &mut sink, Duration::ZERO);
        sink.end_turn();
        for (input, now) in script {
            while let Some(deadline) = machine.poll_timeout().filter(|d| *d <= now) {
                sink.push(Record::Timeout { now: deadline });
                for step in machine.handle_timeout(deadline) {
                    sink.push(Record::Step(step));
                }
                drain(&mut machine, &mut sink, deadline);
                sink.end_turn();
            }
            sink.push(Record::Input {
                input: input.clone(),
                now,
            });
            let step = machine.handle(input, now);
            sink.push(Record::Step(step));
            drain(&mut machine, &mut sink, now);
            sink.end_turn();
        }
        recorder.trace().unwrap()
    }

    fn drain(machine: &mut Machine, sink: &mut TraceSink, now: Duration) {
        while let Some(action) = machine.poll_action() {
            sink.push(Record::Action(action.clone()));
            if let Action::Send {
                generation, token, ..
            } = action
            {
                let input = Input::SendResult {
                    generation,
                    token,
                    outcome: SendOutcome::Ok,
                };
                sink.push(Record::Input {
                    input: input.clone(),
                    now,
                });
                sink.push(Record::Step(machine.handle(input, now)));
            }
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Up, a handshake answered, a stop, the transport down: an honest run.
    fn honest() -> Trace {
        record(honest_script())
    }

    fn honest_script() -> Vec<(Input, Duration)> {
        let init = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
        vec![
            (Input::TransportUp { generation: 1 }, ms(1)),
            (
                Input::Frame {
                    generation: 1,
                    bytes: init.to_vec(),
                },
                ms(2),
            ),
            (Input::Stop { call: CallId(1) }, ms(3)),
            (
                Input::TransportDown {
                    generation: 1,
                    error: TransportError::Closed,
                },
                ms(4),
            ),
        ]
    }

    #[test]
    fn an_honest_run_replays() {
        let trace = honest();
        let report = replay(&trace).unwrap();
        assert_eq!(report.inputs, 4 + 2, "four inputs and two send outcomes");
        assert!(report.exited);
        assert!(report.actions >= 6, "{report:?}");
        assert!(
            trace
                .records
                .iter()
                .any(|r| matches!(r, Record::Step(s) if s.to == mcp_machine::State::Ready))
        );
        assert_eq!(report.steps, report.inputs + report.timeouts);
    }

    #[test]
    fn a_tampered_action_fails_replay() {
        let mut trace = honest();
        let (index, record) = trace
            .records
            .iter_mut()
            .enumerate()
            .find(|(_, r)| matches!(r, Record::Action(Action::StopDone { .. })))
            .expect("a stop answered");
        *record = Record::Action(Action::StopDone {
            call: CallId(1),
            already: true,
        });
        match replay(&trace) {
            Err(TraceError::Mismatch {
                index: i,
                recorded,
                replayed,
            }) => {
                assert_eq!(i, index);
                assert!(recorded.contains("already: true"), "{recorded}");
                assert!(replayed.contains("already: false"), "{replayed}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_dropped_or_extra_record_fails_replay() {
        let trace = honest();
        let mut short = trace.clone();
        short.records.pop();
        assert!(matches!(
            replay(&short),
            Err(TraceError::Mismatch { index, .. }) if index == short.records.len()
        ));
        let mut long = trace.clone();
        long.records.push(Record::Action(Action::Exit));
        assert!(matches!(
            replay(&long),
            Err(TraceError::Mismatch { index, .. }) if index == trace.records.len()
        ));
    }

    #[test]
    fn a_recorded_impossible_row_fails_the_monitors() {
        // A transport that says up twice: the second is an impossible row.
        let trace = record(vec![
            (Input::TransportUp { generation: 1 }, ms(1)),
            (Input::TransportUp { generation: 1 }, ms(2)),
        ]);
        assert!(trace.records.iter().any(|r| matches!(
            r,
            Record::Action(Action::Report(Report::ImpossibleRow { .. }))
        )));
        match replay(&trace) {
            Err(TraceError::ImpossibleRow { row, .. }) => {
                assert!(mcp_machine::ROWS[usize::from(row)].impossible);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_caller_answered_twice_fails_the_monitors() {
        let mut trace = honest();
        let second = trace.records.len();
        trace.records.push(Record::Action(Action::StopDone {
            call: CallId(1),
            already: true,
        }));
        assert!(matches!(
            monitors(&trace.records),
            Err(TraceError::AnsweredTwice { call: CallId(1), second: s, .. }) if s == second
        ));
    }

    #[test]
    fn an_overflowed_recorder_is_incomplete_not_a_success() {
        let full = honest();
        let trace = record_with(full.records.len() - 1, honest_script());
        assert!(trace.overflowed);
        assert!(trace.records.len() < full.records.len());
        assert_eq!(trace.records, full.records[..trace.records.len()]);
        assert_eq!(
            replay(&trace),
            Err(TraceError::Incomplete {
                records: trace.records.len()
            })
        );
    }

    #[test]
    fn a_recorder_is_of_one_machine() {
        let recorder = TraceRecorder::new();
        assert_eq!(recorder.trace().unwrap_err(), TraceError::NotStarted);
        recorder.begin(&Config::default(), 1);
        recorder.begin(&Config::default(), 2);
        assert_eq!(
            recorder.trace().unwrap_err(),
            TraceError::SharedRecorder { machines: 2 }
        );
    }
}
