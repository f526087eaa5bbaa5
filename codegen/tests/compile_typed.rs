//! The code generated from `fixtures/typed.toml` compiles (it is `include!`d below, from the
//! checked-in copies `fixtures/typed.generated.rs` and `fixtures/typed_interpreter.generated.rs`)
//! and the generated `dispatch` does what the generated interpreter does on the same table.
//!
//! The copies must equal what the generator prints now; after a change of the generator, rewrite
//! them with `MCP_CODEGEN_BLESS=1 cargo test -p mcp-codegen --test compile_typed` and review.

use std::path::Path;

/// The payload and witness types the fixture names, deliberately not `Clone`: a value moved
/// twice does not compile.
mod types {
    /// A frame (`frame`, `echo`).
    #[derive(Debug, PartialEq, Eq)]
    pub struct Frame(pub u32);
    /// A call request (`call`).
    #[derive(Debug, PartialEq, Eq)]
    pub struct Call(pub u32);
    /// A call's id (the `deadline` payload, the `is_reply`/`is_live` witness).
    #[derive(Debug, PartialEq, Eq)]
    pub struct CallId(pub u32);
    /// A send slot (the `can_send` witness, boxed).
    #[derive(Debug, PartialEq, Eq)]
    pub struct Slot(pub u32);
}

/// The generated module, as a machine crate includes it (there it is public; here, what the tests
/// do not use would be dead code).
#[allow(dead_code)]
mod generated {
    use super::types::{Call, CallId, Frame, Slot};

    include!("fixtures/typed.generated.rs");
    include!("fixtures/typed_interpreter.generated.rs");
}

use generated::{Event, Fired, Handlers, State};
use types::{Call, CallId, Frame, Slot};

/// Handlers whose guards answer from flags and whose actions log what they got.
#[derive(Default)]
struct Recorder {
    ready: bool,
    reply: bool,
    ping: bool,
    slot: bool,
    live: bool,
    log: Vec<String>,
}

impl Handlers for Recorder {
    fn is_ready(&self) -> bool {
        self.ready
    }
    fn is_reply(&self, p: &Frame) -> Option<CallId> {
        self.reply.then_some(CallId(p.0))
    }
    fn is_ping(&self, _p: &Frame) -> bool {
        self.ping
    }
    fn can_send(&self, p: &Call) -> Option<Box<Slot>> {
        self.slot.then(|| Box::new(Slot(p.0)))
    }
    fn is_live(&self, p: &CallId) -> Option<CallId> {
        self.live.then_some(CallId(p.0 + 100))
    }
    fn connect(&mut self) {
        self.log.push("connect".into());
    }
    fn accept(&mut self) {
        self.log.push("accept".into());
    }
    fn log_frame(&mut self, p: &Frame) {
        self.log.push(format!("log_frame {p:?}"));
    }
    fn answer(&mut self, p: Frame, w: CallId) {
        self.log.push(format!("answer {p:?} {w:?}"));
    }
    fn pong(&mut self, p: &Frame) {
        self.log.push(format!("pong {p:?}"));
    }
    fn drop_frame(&mut self, p: Frame) {
        self.log.push(format!("drop_frame {p:?}"));
    }
    fn send(&mut self, p: Call, w: Box<Slot>) {
        self.log.push(format!("send {p:?} {w:?}"));
    }
    fn refuse(&mut self, p: &Call) {
        self.log.push(format!("refuse {p:?}"));
    }
    fn note_call(&mut self, w: &CallId) {
        self.log.push(format!("note_call {w:?}"));
    }
    fn expire(&mut self, w: CallId) {
        self.log.push(format!("expire {w:?}"));
    }
    fn finish(&mut self) {
        self.log.push("finish".into());
    }
    fn sweep_now(&mut self) {
        self.log.push("sweep_now".into());
    }
}

/// One event of every kind (built afresh each time: events are not `Clone`).
fn events() -> Vec<Event> {
    vec![
        Event::Up,
        Event::Frame(Frame(1)),
        Event::Echo(Frame(2)),
        Event::Call(Call(3)),
        Event::Stop,
        Event::Deadline(CallId(4)),
        Event::Sweep,
    ]
}

/// A recorder for guard outcomes `bits` (one bit per guard).
fn recorder(bits: u8) -> Recorder {
    Recorder {
        ready: bits & 1 != 0,
        reply: bits & 2 != 0,
        ping: bits & 4 != 0,
        slot: bits & 8 != 0,
        live: bits & 16 != 0,
        log: Vec::new(),
    }
}

#[test]
fn dispatch_and_the_interpreter_agree_everywhere() {
    for bits in 0..32 {
        for state in State::ALL {
            for (a, b) in events().into_iter().zip(events()) {
                let kind = a.kind();
                let (mut by_dispatch, mut by_table) = (recorder(bits), recorder(bits));
                let fired: Fired = generated::dispatch(&mut by_dispatch, state, a);
                let interpreted =
                    generated::interpret(&mut by_table, &generated::ROWS, &[], state, b);
                assert_eq!(fired, interpreted, "{state:?} {kind:?} guards {bits:#b}");
                assert_eq!(
                    by_dispatch.log, by_table.log,
                    "{state:?} {kind:?} guards {bits:#b}"
                );
            }
        }
    }
}

#[test]
fn payloads_and_witnesses_reach_the_actions() {
    let mut h = recorder(2);
    let fired = generated::dispatch(&mut h, State::Open, Event::Echo(Frame(7)));
    assert_eq!(fired.to, State::Open);
    assert_eq!(h.log, ["log_frame Frame(7)", "answer Frame(7) CallId(7)"]);

    let mut h = recorder(16);
    generated::dispatch(&mut h, State::Open, Event::Deadline(CallId(1)));
    assert_eq!(h.log, ["note_call CallId(101)", "expire CallId(101)"]);

    let mut h = recorder(8);
    generated::dispatch(&mut h, State::Open, Event::Call(Call(5)));
    assert_eq!(h.log, ["send Call(5) Slot(5)"]);

    let mut h = recorder(0);
    generated::initial_actions(&mut h);
    assert_eq!(h.log, ["connect"]);
}

#[test]
fn run_action_takes_nothing_it_cannot_use() {
    use generated::{ActionId, Witness};
    let mut h = recorder(0);
    // `answer` needs a `Frame` event and a `CallId` witness: with the wrong witness it does
    // nothing and leaves the event where it was.
    let mut event = Some(Event::Frame(Frame(1)));
    let mut witness = Some(Witness::Held);
    assert!(!generated::run_action(
        &mut h,
        ActionId::Answer,
        &mut event,
        &mut witness
    ));
    assert!(matches!(event, Some(Event::Frame(Frame(1)))));
    let mut witness = Some(Witness::CallId(CallId(9)));
    assert!(generated::run_action(
        &mut h,
        ActionId::Answer,
        &mut event,
        &mut witness
    ));
    assert!(event.is_none() && witness.is_none());
    assert_eq!(h.log, ["answer Frame(1) CallId(9)"]);
    // A `ref` use borrows.
    let mut event = Some(Event::Call(Call(2)));
    assert!(generated::run_action(
        &mut h,
        ActionId::Refuse,
        &mut event,
        &mut None
    ));
    assert!(event.is_some());
}

#[test]
fn the_checked_in_copies_are_current() {
    let source = include_str!("fixtures/typed.toml");
    let g = match mcp_codegen::generate(source, "tests/fixtures/typed.toml") {
        Ok(g) => g,
        Err(d) => panic!("{d}"),
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (file, text) in [
        ("typed.generated.rs", &g.rust),
        ("typed_interpreter.generated.rs", &g.interpreter),
    ] {
        let path = dir.join(file);
        if std::env::var_os("MCP_CODEGEN_BLESS").is_some() {
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == *text,
            "{} is not what the generator prints now: rerun with MCP_CODEGEN_BLESS=1 and review",
            path.display()
        );
    }
}
