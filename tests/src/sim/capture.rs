//! Catches what the runtime logs at level ERROR (a caller left unanswered at exit, a reply for
//! an unknown caller, a driver that panicked): each is a violation in a simulation.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

/// A `tracing` subscriber that keeps the ERROR events and ignores everything else.
#[derive(Clone, Default)]
pub struct ErrorCapture {
    errors: Arc<Mutex<Vec<String>>>,
}

impl ErrorCapture {
    /// The errors caught so far, as `target: message`.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.errors.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

fn wanted(meta: &Metadata<'_>) -> bool {
    meta.is_event() && *meta.level() == Level::ERROR
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        self.0.push_str(&format!("{}={value:?}", field.name()));
    }
}

impl Subscriber for ErrorCapture {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if wanted(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        wanted(meta)
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::ERROR)
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        let line = format!("{}: {}", event.metadata().target(), m.0);
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
