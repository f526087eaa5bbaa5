//! Trace validation for the client tests: a client whose run is recorded, and the check that
//! the recording replays into a fresh machine (same rows, same actions) and passes the
//! monitors of [`mcp_runtime::trace::replay`].

use mcp_machine::Action;
use mcp_runtime::trace::{Record, ReplayReport, Trace, TraceError, TraceRecorder, replay};
use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{Client, ClientBuilder};
use mcp_testserver::ServerConfig;

/// A builder whose every transport generation is a fresh in-process test server over a duplex
/// stream (seed 7), recording its trace into the returned recorder.
pub fn in_process(config: ServerConfig) -> (ClientBuilder, TraceRecorder) {
    let connector = StreamConnector::from_fn(move || {
        let config = config.clone();
        async move {
            let (client, server) = tokio::io::duplex(1 << 16);
            let (sr, sw) = tokio::io::split(server);
            tokio::spawn(mcp_testserver::serve(sr, sw, config));
            Ok(tokio::io::split(client))
        }
    });
    let recorder = TraceRecorder::new();
    let builder = ClientBuilder::new(connector)
        .seed(7)
        .record_trace(recorder.clone());
    (builder, recorder)
}

/// The checked run: the trace and what its replay went through.
pub struct Replayed {
    /// The recorded trace.
    pub trace: Trace,
    /// The replay's counts.
    pub report: ReplayReport,
}

impl Replayed {
    /// The recorded actions, in order.
    pub fn actions(&self) -> impl Iterator<Item = &Action> {
        self.trace.records.iter().filter_map(|r| match r {
            Record::Action(a) => Some(a),
            _ => None,
        })
    }

    /// How many recorded actions match `f`.
    pub fn count(&self, f: impl Fn(&Action) -> bool) -> usize {
        self.actions().filter(|a| f(a)).count()
    }
}

/// Replays what `recorder` holds and checks the monitors; panics with the first difference.
/// Every run here connects, so the counts are never trivial: at least a spawn, a handshake
/// (up, the `initialize` send and its outcome, the answer) and a step per input.
pub fn assert_replays(recorder: &TraceRecorder) -> Replayed {
    let trace = recorder
        .trace()
        .expect("the recorder was attached to one client");
    assert!(!trace.overflowed, "trace over the recorder's limit");
    let report = match replay(&trace) {
        Ok(report) => report,
        Err(e) => panic!("the run is not a behaviour of the machine: {e}"),
    };
    assert!(report.inputs >= 3, "{report:?}");
    assert!(report.steps >= report.inputs, "{report:?}");
    assert!(report.actions >= 3, "{report:?}");
    assert!(report.rows.len() >= 3, "{report:?}");
    // Not vacuous: the same run with its last frame sent changed by one byte is refused.
    let mut tampered = trace.clone();
    let (index, frame) = tampered
        .records
        .iter_mut()
        .enumerate()
        .rev()
        .find_map(|(i, r)| match r {
            Record::Action(Action::Send { frame, .. }) if !frame.is_empty() => Some((i, frame)),
            _ => None,
        })
        .expect("a connected run sends frames");
    frame[0] ^= 1;
    match replay(&tampered) {
        Err(TraceError::Mismatch { index: i, .. }) if i == index => {}
        other => panic!("a tampered frame at record {index} gave {other:?}"),
    }
    Replayed { trace, report }
}

/// Stops `client`, waits until its driver and transports are gone, and checks its trace.
pub async fn stop_and_replay(client: Client, recorder: &TraceRecorder) -> Replayed {
    client.stop().await;
    client.closed().await;
    let replayed = assert_replays(recorder);
    assert!(
        replayed.report.exited,
        "stopped, then closed: the machine exited"
    );
    replayed
}
