//! The session metrics, read off the table's transitions as the driver sees them: a session
//! is the time from `ready` until the connection leaves it; a new attempt after a failure is a
//! reconnect; the time in `backoff` is the backoff. The driver only reports the transitions:
//! what they mean is the table's.

use std::time::Instant;

use mcp_machine::{Failure, State, Step};
use opentelemetry::KeyValue;

use super::{Recorder, failure_type, keys};

/// When the session and the backoff in progress began.
#[derive(Default)]
pub(crate) struct SessionClock {
    ready_since: Option<Instant>,
    backoff_since: Option<Instant>,
    /// Whether an attempt was made already (the next one is a reconnect).
    attempted: bool,
}

impl SessionClock {
    /// Records what a transition ends and begins. `cause` is the connection's last failure
    /// (read after the step), `version` the protocol version of the session that was ready.
    pub(crate) fn observe(
        &mut self,
        recorder: &Recorder,
        step: &Step,
        cause: Option<&Failure>,
        version: Option<&str>,
        now: Instant,
    ) {
        if step.from == step.to {
            return;
        }
        let instruments = recorder.instruments();
        // An attempt ended on a failure: into backoff, or from a live state straight into a
        // new attempt (an expired session initialized again at once).
        let failed = step.to == State::Backoff
            || (step.to == State::Starting && step.from != State::Backoff);
        if step.from == State::Ready
            && let Some(since) = self.ready_since.take()
        {
            let mut attributes = recorder.common().to_vec();
            if let Some(v) = version {
                attributes.push(KeyValue::new(keys::PROTOCOL_VERSION, v.to_owned()));
            }
            if failed {
                let kind = cause.map_or("_OTHER", failure_type);
                attributes.push(KeyValue::new(keys::ERROR_TYPE, kind));
            }
            instruments.session.record(
                now.saturating_duration_since(since).as_secs_f64(),
                &attributes,
            );
        }
        if step.from == State::Backoff
            && let Some(since) = self.backoff_since.take()
        {
            instruments.backoff.record(
                now.saturating_duration_since(since).as_secs_f64(),
                recorder.common(),
            );
        }
        match step.to {
            State::Ready => self.ready_since = Some(now),
            State::Backoff => self.backoff_since = Some(now),
            State::Starting | State::Probing | State::Initializing if !self.attempted => {
                self.attempted = true;
            }
            State::Starting => {
                let mut attributes = recorder.common().to_vec();
                if let Some(cause) = cause {
                    attributes.push(KeyValue::new(keys::ERROR_TYPE, failure_type(cause)));
                }
                instruments.reconnects.add(1, &attributes);
            }
            _ => {}
        }
    }
}
