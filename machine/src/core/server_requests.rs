//! The guards and actions of `spec/server_requests.toml`: the server's requests to the handler, their replies, and the frames the client owes the server.
//!
//! One method per guard and action the spec file declares, in its order; the shared helpers
//! (`send`, `owe`, `issue`, `end_call`, ...) are in [`super`]. What fires when is the
//! table's: nothing here decides a transition.

use super::*;
use crate::generated::ServerRequestsHandlers;

impl ServerRequestsHandlers for Ctx<'_> {
    fn era_is_modern(&self, _p: &ServerRequest) -> bool {
        self.modern_version().is_some()
    }

    fn is_ping(&self, p: &ServerRequest) -> bool {
        p.method == "ping"
    }

    fn is_duplicate_server_request(&self, p: &ServerRequest) -> bool {
        self.core.server_requests.contains(&p.id)
    }

    fn is_undeclared_elicitation_mode(&self, p: &ServerRequest) -> bool {
        let caps = &self.core.config.capabilities;
        p.method == "elicitation/create"
            && (caps.elicitation || caps.elicitation_url)
            && !caps.handles(&p.method, p.params.as_ref())
    }

    fn is_over_server_request_cap(&self, p: &ServerRequest) -> bool {
        self.has_handler(p)
            && self.core.server_requests.len() >= self.core.config.max_server_requests
    }

    fn has_handler(&self, p: &ServerRequest) -> bool {
        self.core
            .config
            .capabilities
            .handles(&p.method, p.params.as_ref())
    }

    fn is_server_cancel(&self, p: &Notification) -> Option<ServerRequestId> {
        let id = ServerRequestId::from_json(p.param("notifications/cancelled", "requestId")?)?;
        self.core.server_requests.contains(&id).then_some(id)
    }

    fn is_owed_send(&self, p: &SendToken) -> bool {
        *p == SendToken::Owed
    }

    fn is_live_server_request(&self, p: &HandlerReply) -> bool {
        self.core.server_requests.contains(&p.id)
    }

    fn report_unexpected_server_request(&mut self, p: ServerRequest) {
        if mutant!(self.core, AnswerUnexpected) {
            self.reject_server_request(&p);
        }
        self.push(Action::Report(Report::UnexpectedServerRequest {
            method: p.method,
        }));
    }

    fn send_next_owed(&mut self) {
        self.core.outbox.pop_front();
        if let Some(next) = self.core.outbox.front() {
            let frame = next.clone();
            self.send(SendToken::Owed, frame);
        }
    }

    fn schedule_owed_retry(&mut self) {
        let c = &self.core.config;
        let delay = self.core.rng.jitter(c.retry_delay, c.retry_jitter_pct);
        self.arm(TimerKind::OwedRetry, delay);
    }

    fn resend_owed(&mut self) {
        if let Some(head) = self.core.outbox.front() {
            let frame = head.clone();
            self.send(SendToken::Owed, frame);
        }
    }

    fn drop_owed(&mut self) {
        self.core.outbox.clear();
    }

    fn answer_ping(&mut self, p: &ServerRequest) {
        self.owe(protocol::response(&p.id, Ok(&json!({}))));
    }

    fn reject_server_request_busy(&mut self, p: &ServerRequest) {
        let cap = self.core.config.max_server_requests;
        let err = RpcError {
            code: codes::SERVER_ERROR,
            message: format!(
                "client busy: {cap} server requests are already being handled; try again later"
            ),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: codes::METHOD_NOT_FOUND,
            message: format!("method not found: {}", p.method),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_early_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: codes::METHOD_NOT_FOUND,
            message: format!("method not found: {} (client not initialized)", p.method),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_duplicate_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: codes::INVALID_REQUEST,
            message: format!(
                "duplicate request id {} (a request with this id is in progress)",
                p.id
            ),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_undeclared_mode(&mut self, p: &ServerRequest) {
        let mode = p
            .params
            .as_ref()
            .and_then(|v| v.get("mode"))
            .and_then(Value::as_str)
            .unwrap_or("form");
        let err = RpcError {
            code: codes::INVALID_PARAMS,
            message: format!("elicitation mode {mode:?} was not declared by this client"),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn dispatch_server_request(&mut self, p: ServerRequest) {
        self.core.server_requests.insert(p.id.clone());
        let generation = self.core.generation;
        self.push(Action::ServerRequest {
            generation,
            request: p,
        });
    }

    fn send_handler_reply(&mut self, p: HandlerReply) {
        self.core.server_requests.remove(&p.id);
        let frame = protocol::response(&p.id, p.result.as_ref());
        self.owe(frame);
    }

    fn abort_server_request(&mut self, w: ServerRequestId) {
        self.core.server_requests.remove(&w);
        let generation = self.core.generation;
        self.push(Action::AbortServerRequest { generation, id: w });
    }

    fn abort_server_requests(&mut self) {
        self.core.server_requests.clear();
        let generation = self.core.generation;
        self.push(Action::AbortServerRequests { generation });
    }
}
