//! The session metrics and the handshake's spans, read off the table's transitions as the
//! driver sees them: a session is the time from `ready` until the connection leaves it; a new
//! attempt after a failure is a reconnect; the time in `backoff` is the backoff; `probing` is
//! a `server/discover` span and `initializing` an `initialize` span, each ended when the state
//! is left (`ready`: with the protocol version and session; anything else but the next step of
//! the handshake: with the failure). The driver only reports the transitions and what it sent:
//! what they mean is the table's.

use std::time::Instant;

use mcp_machine::{Failure, RequestId, State, Step};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};

use super::{Recorder, failure_type, keys};

/// When the session and the backoff in progress began, and the handshake's span.
#[derive(Default)]
pub(crate) struct SessionClock {
    ready_since: Option<Instant>,
    backoff_since: Option<Instant>,
    /// Whether an attempt was made already (the next one is a reconnect).
    attempted: bool,
    /// The span of the handshake step in progress (`server/discover` or `initialize`).
    handshake: Option<Context>,
    /// The latest handshake step's span, kept after it ended: the parent of the connection's
    /// own requests (a listen, a restore, a relist) made in that session.
    latest: Option<Context>,
}

impl SessionClock {
    /// Records what a transition ends and begins. `cause` is the connection's last failure
    /// (read after the step), `version` the protocol version of the session that was ready,
    /// `session` its session id (read only for a transition into `ready`).
    pub(crate) fn observe(
        &mut self,
        recorder: &Recorder,
        step: &Step,
        cause: Option<&Failure>,
        version: Option<&str>,
        session: Option<String>,
        now: Instant,
    ) {
        if step.from == step.to {
            return;
        }
        self.handshake_step(recorder, step, cause, version, session);
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

    /// A request of the connection's own (the handshake, a listen, a restore, a relist)
    /// is going out with id `id`: the handshake's span takes its id, and the request carries
    /// the context of its session's handshake span in `params._meta` (a handshake request:
    /// its own span). A frame that does not read as a JSON object is left as it is.
    pub(crate) fn sent(
        &self,
        recorder: &Recorder,
        method: &str,
        id: RequestId,
        bytes: &mut Vec<u8>,
    ) {
        let handshake = matches!(method, "initialize" | "server/discover");
        if handshake && let Some(cx) = &self.handshake {
            cx.span()
                .set_attribute(KeyValue::new(keys::REQUEST_ID, id.to_string()));
        }
        let Some(cx) = self.context() else {
            return;
        };
        super::meta::inject_into_frame(&recorder.telemetry, cx, bytes);
    }

    /// The context of the session's handshake span (the one in progress, else the latest):
    /// the parent of what the connection sends of its own.
    pub(crate) fn context(&self) -> Option<&Context> {
        self.handshake.as_ref().or(self.latest.as_ref())
    }

    /// Ends the handshake span a transition ends, and opens the one it begins.
    fn handshake_step(
        &mut self,
        recorder: &Recorder,
        step: &Step,
        cause: Option<&Failure>,
        version: Option<&str>,
        session: Option<String>,
    ) {
        if let Some(cx) = self.handshake.take() {
            let span = cx.span();
            match step.to {
                State::Ready => {
                    if let Some(v) = version {
                        span.set_attribute(KeyValue::new(keys::PROTOCOL_VERSION, v.to_owned()));
                    }
                    if let Some(s) = session {
                        span.set_attribute(KeyValue::new(
                            keys::SESSION_ID,
                            recorder.session_attribute(s),
                        ));
                    }
                }
                // The probe ended in a handshake: the probe itself was answered.
                State::Initializing if step.from == State::Probing => {}
                // Stopped: not a failure of the handshake.
                State::Closing | State::Closed => {}
                _ => {
                    let kind = cause.map_or("_OTHER", failure_type);
                    span.set_attribute(KeyValue::new(keys::ERROR_TYPE, kind));
                    span.set_status(Status::error(
                        cause.map(ToString::to_string).unwrap_or_default(),
                    ));
                }
            }
            span.end();
        }
        let method = match step.to {
            State::Probing => "server/discover",
            State::Initializing => "initialize",
            _ => return,
        };
        let mut attributes = vec![KeyValue::new(keys::METHOD, method)];
        attributes.extend_from_slice(recorder.common());
        let tracer = &recorder.telemetry.tracer;
        let span = tracer
            .span_builder(method)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(&**tracer, &Context::new());
        let cx = Context::new().with_span(span);
        self.latest = Some(cx.clone());
        self.handshake = Some(cx);
    }
}
