//! Logging: `-v` prints the library's tracing events on stderr, and a small layer always
//! captures two of them for the CLI itself: responses the client dropped (`mcp::response`,
//! shown by the demo) and the server's last stderr line (added to connection errors).

use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};

use mcp_runtime::transport::SERVER_STDERR_TARGET;

use crate::sanitize::CleanWriter;
use tokio::sync::broadcast;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// A response the client dropped, from the runtime's `mcp::response` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedResponse {
    /// `late` (its call had already ended) or `unknown` (an id never used).
    pub kind: String,
    /// The JSON-RPC id.
    pub id: String,
}

struct Captured {
    dropped: broadcast::Sender<DroppedResponse>,
    last_stderr: Mutex<Option<String>>,
}

fn captured() -> &'static Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED.get_or_init(|| Captured {
        dropped: broadcast::channel(64).0,
        last_stderr: Mutex::new(None),
    })
}

/// Dropped responses from now on.
pub fn dropped_responses() -> broadcast::Receiver<DroppedResponse> {
    captured().dropped.subscribe()
}

/// The last line the stdio server wrote on its stderr, if any.
pub fn last_server_stderr() -> Option<String> {
    captured()
        .last_stderr
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// The fields of one event, as text.
#[derive(Default)]
struct Fields(Vec<(&'static str, String)>);

impl Fields {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name(), value.to_owned()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut s = String::new();
        let _ = write!(s, "{value:?}");
        self.0.push((field.name(), s));
    }
}

struct CaptureLayer;

impl<S: Subscriber> Layer<S> for CaptureLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let target = event.metadata().target();
        if target == "mcp::response" {
            let dropped = DroppedResponse {
                kind: fields.get("kind").unwrap_or("?").to_owned(),
                id: fields.get("id").unwrap_or("?").to_owned(),
            };
            let _ = captured().dropped.send(dropped);
        } else if target == SERVER_STDERR_TARGET
            && let Some(line) = fields.get("line")
        {
            let line = line.trim();
            if !line.is_empty() {
                *captured()
                    .last_stderr
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(line.to_owned());
            }
        }
    }
}

/// Installs the subscriber: the capture layer always, the stderr log with `-v`.
pub fn init(verbose: u8) {
    let capture = CaptureLayer.with_filter(
        Targets::new()
            .with_target("mcp::response", Level::DEBUG)
            .with_target(SERVER_STDERR_TARGET, Level::INFO),
    );
    let level = match verbose {
        0 => None,
        1 => Some(Level::INFO),
        2 => Some(Level::DEBUG),
        _ => Some(Level::TRACE),
    };
    let log = level.map(|level| {
        tracing_subscriber::fmt::layer()
            // The log carries the server's stderr lines: cleaned like every other print.
            .with_writer(|| CleanWriter(std::io::stderr()))
            .with_target(true)
            .with_filter(Targets::new().with_default(level))
    });
    let _ = tracing_subscriber::registry()
        .with(capture)
        .with(log)
        .try_init();
}
