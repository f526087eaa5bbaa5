//! The guards and actions of `spec/handshake.toml`: the era probe, the legacy handshake, the verdict and how an attempt ends.
//!
//! One method per guard and action the spec file declares, in its order; the shared helpers
//! (`send`, `owe`, `issue`, `end_call`, ...) are in [`super`]. What fires when is the
//! table's: nothing here decides a transition.

use super::*;
use crate::generated::HandshakeHandlers;

impl HandshakeHandlers for Ctx<'_> {
    fn era_is_legacy(&self) -> bool {
        self.core.config.era == EraMode::Legacy
            || self
                .core
                .verdict
                .as_ref()
                .is_some_and(|v| v.era == Era::Legacy)
    }

    fn is_discover_accepted(&self, p: &Response) -> Option<ServerInfo> {
        if !self.answers_handshake(p) {
            return None;
        }
        let result = p.body.as_ref().ok()?.value();
        let versions = protocol::discover_versions(result)?;
        let version = protocol::common_modern(&versions)?;
        Some(protocol::discovered(result, version))
    }

    fn can_retry_version(&self, p: &Response) -> Option<String> {
        if !self.answers_handshake(p) || self.core.attempt.probe_retried {
            return None;
        }
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return None;
        };
        let Some(ModernError::UnsupportedVersion(offered)) = protocol::modern_error(e) else {
            return None;
        };
        protocol::common_modern(&offered).map(str::to_owned)
    }

    fn is_modern_refusal(&self, p: &Response) -> bool {
        if !self.answers_handshake(p) || mutant!(self.core, NoModernRefusal) {
            return false;
        }
        // A modern version in common was taken by the rows before (accepted, or asked for
        // again once): what is left of a modern answer is usable only as a legacy one (auto).
        let legacy_only = |v: &[String]| {
            self.era_is_auto() && protocol::common_legacy(v).is_some() && !self.usable_modern(v)
        };
        match &p.body {
            Ok(result) => {
                protocol::discover_versions(result.value()).is_some_and(|v| !legacy_only(&v))
            }
            Err(ResponseError::Rpc(e)) => match protocol::modern_error(e) {
                Some(ModernError::UnsupportedVersion(v)) => !legacy_only(&v),
                Some(ModernError::Other) => true,
                None => false,
            },
            Err(ResponseError::Invalid { .. }) => false,
        }
    }

    fn can_fall_back(&self, p: &Response) -> bool {
        self.era_is_auto() && self.answers_handshake(p)
    }

    fn is_probe_answer(&self, p: &Response) -> bool {
        self.answers_handshake(p)
    }

    fn can_fall_back_silent(&self) -> bool {
        self.era_is_auto() && !self.core.attempt.probe_retried
    }

    fn can_respawn_legacy(&self, _p: &TransportError) -> bool {
        // Only a probe in flight can have killed the server (not a wait for authorization).
        self.era_is_auto() && self.core.verdict.is_none() && self.core.attempt.init_id.is_some()
    }

    fn is_init_modern_refusal(&self, p: &Response) -> bool {
        if !self.era_is_auto() || self.core.attempt.reprobed || !self.answers_handshake(p) {
            return false;
        }
        // Any error only a modern server answers with proves the legacy verdict wrong.
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return false;
        };
        protocol::modern_error(e).is_some()
    }

    fn is_init_accepted(&self, p: &Response) -> Option<ServerInfo> {
        let id = Self::response_id(p)?;
        let result = p.body.as_ref().ok()?.value();
        (Some(id) == self.core.attempt.init_id)
            .then(|| protocol::check_init_result(result).ok())
            .flatten()
    }

    fn is_init_response(&self, p: &Response) -> bool {
        Self::response_id(p).is_some_and(|id| Some(id) == self.core.attempt.init_id)
    }

    fn is_initialized_send(&self, p: &SendToken) -> bool {
        *p == SendToken::Initialized
    }

    fn is_init_send(&self, p: &SendToken) -> bool {
        matches!(*p, SendToken::Request(id) if Some(id) == self.core.attempt.init_id)
    }

    fn arm_init_timeout(&mut self) {
        self.core.attempt.init_bound = self.core.config.init_timeout;
        self.arm(TimerKind::InitTimeout, self.core.attempt.init_bound);
    }

    fn send_initialize(&mut self) {
        let id = self.core.next_id;
        self.core.next_id += 1;
        self.core.attempt.init_id = Some(id);
        let params = protocol::initialize_params(&self.core.config);
        let mut frame = protocol::request(id, "initialize", Some(params), None, None);
        frame.head.mark_own();
        self.send(SendToken::Request(id), frame);
    }

    fn send_discover(&mut self) {
        self.core.attempt.probe_retried = false;
        let version = self
            .modern_version()
            .unwrap_or(protocol::MODERN_PROTOCOL_VERSIONS[0])
            .to_owned();
        self.send_discover_at(&version);
    }

    fn arm_probe_timeout(&mut self) {
        self.arm(TimerKind::ProbeTimeout, self.core.config.probe_timeout);
    }

    fn accept_discover(&mut self, w: ServerInfo) {
        self.core.verdict = Some(Verdict {
            era: Era::Modern,
            version: w.protocol_version.clone(),
            tentative: false,
        });
        self.core.server = Some(Arc::new(w));
        self.core.attempt.init_id = None;
        self.core.last_error = None;
    }

    fn retry_discover(&mut self, w: String) {
        if let Some(id) = self.core.attempt.init_id.take() {
            self.tombstone(id);
        }
        self.core.attempt.probe_retried = true;
        self.send_discover_at(&w);
    }

    fn reject_probe(&mut self, p: &Response) {
        let not_modern = |reason: String| Failure::NotModern { reason };
        let failure = match &p.body {
            Ok(result) => match protocol::discover_versions(result.value()) {
                Some(offered) => Failure::NoCommonVersion { offered },
                None => not_modern("its answer to server/discover is not a DiscoverResult".into()),
            },
            Err(ResponseError::Rpc(e)) => match protocol::modern_error(e) {
                // It names a version we speak, yet refused it again: a refusal, not a gap.
                Some(ModernError::UnsupportedVersion(offered))
                    if protocol::common_modern(&offered).is_some() =>
                {
                    Failure::Refused(e.clone())
                }
                Some(ModernError::UnsupportedVersion(offered)) => {
                    Failure::NoCommonVersion { offered }
                }
                Some(ModernError::Other) => Failure::Refused(e.clone()),
                None => not_modern(format!("it answered server/discover with the error {e}")),
            },
            Err(ResponseError::Invalid { reason }) => {
                not_modern(format!("invalid error answering server/discover: {reason}"))
            }
        };
        self.set_last_error(failure.clone());
        self.push(Action::Report(Report::InitRejected(failure)));
    }

    fn note_probe_fallback(&mut self, p: &Response) {
        let reason = match &p.body {
            Ok(_) => "a result that is not a DiscoverResult".to_owned(),
            Err(ResponseError::Rpc(e)) => format!("the error {e}"),
            Err(ResponseError::Invalid { reason }) => format!("an invalid error ({reason})"),
        };
        self.push(Action::Report(Report::ProbeFallback { reason }));
    }

    fn note_probe_timeout(&mut self) {
        let after = self.core.config.probe_timeout;
        self.set_last_error(Failure::ProbeTimeout { after });
        self.push(Action::Report(Report::ProbeTimeout));
    }

    fn report_probe_timeout(&mut self) {
        self.push(Action::Report(Report::ProbeTimeout));
    }

    fn set_legacy_tentative(&mut self) {
        self.core.verdict = Some(Verdict {
            era: Era::Legacy,
            version: protocol::LATEST_PROTOCOL_VERSION.to_owned(),
            tentative: true,
        });
    }

    fn drop_tentative_verdict(&mut self) {
        if self.core.verdict.as_ref().is_some_and(|v| v.tentative)
            && !mutant!(self.core, KeepTentativeVerdict)
        {
            self.core.verdict = None;
        }
    }

    fn forget_verdict(&mut self) {
        self.core.verdict = None;
        self.core.attempt.reprobed = true;
    }

    fn accept_init(&mut self, w: ServerInfo) {
        self.core.verdict = Some(Verdict {
            era: Era::Legacy,
            version: w.protocol_version.clone(),
            tentative: false,
        });
        self.core.server = Some(Arc::new(w));
        self.core.attempt.init_id = None;
        self.core.last_error = None;
    }

    fn reject_init(&mut self, p: &Response) {
        let failure = match &p.body {
            Err(ResponseError::Rpc(e)) => Failure::Refused(e.clone()),
            Err(ResponseError::Invalid { reason }) => Failure::BadHandshake {
                reason: format!("invalid error answering initialize: {reason}"),
            },
            Ok(result) => match protocol::check_init_result(result.value()) {
                Err(f) => f,
                // Unreachable through the table (is_init_accepted comes first); say so plainly.
                Ok(_) => Failure::BadHandshake {
                    reason: "initialize result rejected".into(),
                },
            },
        };
        self.set_last_error(failure.clone());
        self.push(Action::Report(Report::InitRejected(failure)));
    }

    fn note_initialized_refused(&mut self) {
        self.set_last_error(Failure::InitializedNotSent);
    }

    fn fail_init_send(&mut self) {
        self.set_last_error(Failure::InitNotSent);
        self.push(Action::Report(Report::InitRejected(Failure::InitNotSent)));
    }

    fn abandon_init(&mut self) {
        if let Some(id) = self.core.attempt.init_id.take() {
            self.tombstone(id);
        }
    }

    fn note_init_timeout(&mut self) {
        let after = self.core.attempt.init_bound;
        self.set_last_error(Failure::InitTimeout { after });
    }

    fn send_initialized(&mut self) {
        self.send(
            SendToken::Initialized,
            protocol::notification("notifications/initialized", None, None),
        );
    }

    fn note_ready(&mut self) {
        self.core.ready_at = Some(self.core.now);
    }
}
