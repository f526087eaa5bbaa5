//! A [`Machine`] brought to `ready`, once through the handshake era's `initialize` and once
//! through the 2026-07-28 era's `server/discover`, then fed the fuzzer's frames (one per
//! line) as its transport's input, with two calls in flight and time moving 1 ms per frame; then
//! stopped. The driver's and the transport's contracts are kept (every send's outcome at once, a
//! frame only against a read credit of an open transport, an empty line is no frame but time
//! passing), so whatever happens is something a real server could make happen.
//!
//! Checks: nothing panics (debug assertions included); no row marked impossible fires; no caller
//! is answered twice; every frame the machine sends is a JSON-RPC 2.0 object, and every response
//! it sends names a request the server made; after stop, every caller has exactly one answer and
//! the machine is closed with one exit.

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::sync::LazyLock;
use std::time::Duration;

use mcp_machine::classify::{Frame, classify};
use mcp_machine::{
    Action, CallId, CallOptions, CallRequest, ClientCapabilities, Config, EraMode, HandlerReply,
    Input, Machine, Report, SendOutcome, State, TransportError,
};
use serde_json::{Value, json};

const MS: Duration = Duration::from_millis(1);

/// The stop's caller.
const STOP: CallId = CallId(99);

/// Small limits, so that timeouts, oversized frames and the handler's cap are within reach.
fn config(era: EraMode) -> Config {
    Config {
        era,
        capabilities: ClientCapabilities {
            sampling: true,
            roots: true,
            roots_list_changed: true,
            elicitation: true,
            elicitation_url: false,
            tasks: false,
        },
        request_timeout: 16 * MS,
        max_frame_bytes: 512,
        max_server_requests: 2,
        ..Config::default()
    }
}

/// The machine under test and what it did so far.
#[derive(Clone)]
struct Session {
    m: Machine,
    now: Duration,
    /// Answers per caller.
    replies: HashMap<CallId, usize>,
    stops: usize,
    exits: usize,
    /// Server requests handed to the handler, answered at the next frame.
    handler: Vec<(u64, HandlerReply)>,
    /// The ids of every request the server sent, as JSON.
    server_ids: Vec<Value>,
    /// Read credits granted, per generation.
    credits: HashMap<u64, u32>,
    /// Generations the machine closed.
    closed: HashSet<u64>,
}

impl Session {
    /// Generation 1 up, the era's opening request (`initialize` or `server/discover`, id 1)
    /// answered, two calls sent (request ids 2 and 3).
    fn ready(era: EraMode) -> Self {
        let mut s = Session {
            m: Machine::new(config(era), 7, Duration::ZERO),
            now: Duration::ZERO,
            replies: HashMap::new(),
            stops: 0,
            exits: 0,
            handler: Vec::new(),
            server_ids: Vec::new(),
            credits: HashMap::new(),
            closed: HashSet::new(),
        };
        s.settle();
        s.feed(Input::TransportUp { generation: 1 });
        let opening = match era {
            EraMode::Modern => json!({"jsonrpc": "2.0", "id": 1, "result": {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": true}, "logging": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fuzz", "version": "1"}}}}),
            _ => json!({"jsonrpc": "2.0", "id": 1, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "fuzz", "version": "1"}}}),
        };
        s.frame(serde_json::to_vec(&opening).expect("json"));
        assert_eq!(s.m.state(), State::Ready, "{era:?}");
        let progress = CallOptions {
            progress: true,
            reset_timeout_on_progress: true,
            max_total_timeout: Some(40 * MS),
            ..CallOptions::default()
        };
        s.feed(call(1, progress));
        s.feed(call(2, CallOptions::default()));
        s
    }

    fn feed(&mut self, input: Input) {
        black_box(self.m.handle(input, self.now));
        self.settle();
    }

    /// Delivers a frame if the transport may (an open transport with a credit).
    fn frame(&mut self, bytes: Vec<u8>) {
        let generation = self.m.generation();
        let credit = self.credits.entry(generation).or_default();
        if *credit == 0 || self.closed.contains(&generation) {
            return;
        }
        *credit -= 1;
        if let Frame::Request(r) = classify(&bytes, self.m.config().max_frame_bytes) {
            self.server_ids.push(r.id.to_json());
        }
        self.feed(Input::Frame { generation, bytes });
    }

    /// Carries out every queued action, as the driver does.
    fn settle(&mut self) {
        while let Some(action) = self.m.poll_action() {
            match action {
                Action::Send {
                    generation,
                    token,
                    frame,
                } => {
                    self.check_sent(&frame);
                    let outcome = SendOutcome::Ok;
                    let input = Input::SendResult {
                        generation,
                        token,
                        outcome,
                    };
                    black_box(self.m.handle(input, self.now));
                }
                Action::Reply { call, .. } => {
                    let n = self.replies.entry(call).or_default();
                    *n += 1;
                    assert_eq!(*n, 1, "{call:?} answered twice");
                }
                Action::ServerRequest {
                    generation,
                    request,
                } => {
                    let result = Ok(json!({}));
                    let reply = HandlerReply {
                        id: request.id,
                        result,
                    };
                    self.handler.push((generation, reply));
                }
                Action::StopDone { call, .. } => {
                    assert_eq!(call, STOP);
                    self.stops += 1;
                }
                Action::Exit => self.exits += 1,
                Action::GrantCredit {
                    generation,
                    credits,
                } => {
                    *self.credits.entry(generation).or_default() += credits;
                }
                Action::CloseTransport { generation } => {
                    self.closed.insert(generation);
                }
                Action::AbortServerRequest { generation, id } => {
                    self.handler
                        .retain(|(g, r)| (*g, &r.id) != (generation, &id));
                }
                Action::AbortServerRequests { generation } => {
                    self.handler.retain(|(g, _)| *g != generation);
                }
                Action::Report(Report::ImpossibleRow { row }) => {
                    panic!("impossible row {row} fired");
                }
                other => {
                    black_box(other);
                }
            }
        }
    }

    fn check_sent(&self, frame: &[u8]) {
        let v: Value = serde_json::from_slice(frame).expect("the machine sent invalid JSON");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        if v.get("method").is_none() {
            let id = &v["id"];
            assert!(
                self.server_ids.contains(id),
                "an answer to {id}, which the server never asked"
            );
        }
    }

    /// One line of input: due timers, the frame, then the handler's answers from before.
    fn step(&mut self, line: &[u8]) {
        self.now += MS;
        if self.m.poll_timeout().is_some_and(|at| at <= self.now) {
            black_box(self.m.handle_timeout(self.now));
            self.settle();
        }
        if !line.is_empty() {
            self.frame(line.to_vec());
        }
        for (generation, reply) in std::mem::take(&mut self.handler) {
            self.feed(Input::HandlerReply { generation, reply });
        }
    }

    /// Stop, confirm the transport's end if it is closing, and check every caller's answer.
    fn stop(mut self) {
        self.feed(Input::Stop { call: STOP });
        if self.m.state() == State::Closing {
            let generation = self.m.generation();
            let error = TransportError::Closed;
            self.feed(Input::TransportDown { generation, error });
        }
        assert_eq!(self.m.state(), State::Closed);
        assert_eq!((self.stops, self.exits), (1, 1));
        for call in [CallId(1), CallId(2)] {
            assert_eq!(self.replies.get(&call), Some(&1), "{call:?} never answered");
        }
    }
}

fn call(id: u64, options: CallOptions) -> Input {
    Input::Call(CallRequest {
        call: CallId(id),
        method: "tools/call".into(),
        params: Some(json!({"name": "t"})),
        options,
        session: None,
    })
}

/// The sessions every input starts from, one per era (the opening is the same each time).
static READY: LazyLock<[Session; 2]> =
    LazyLock::new(|| [Session::ready(EraMode::Legacy), Session::ready(EraMode::Modern)]);

/// Runs the session of each era over `input`, one frame per line.
pub fn run(input: &[u8]) {
    for ready in READY.iter() {
        let mut s = ready.clone();
        for line in input.split(|&b| b == b'\n') {
            s.step(line);
        }
        s.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::run;

    /// Both eras reach `ready`, and an empty input (no frame at all) is stopped cleanly: the
    /// input libFuzzer tries first.
    #[test]
    fn empty_input_in_both_eras() {
        run(b"");
        run(b"\n\n");
    }
}
