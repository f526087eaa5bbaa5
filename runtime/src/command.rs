//! What a handle asks of the driver: the command queue's messages, the answer that comes back
//! on each, and the [`Notifier`] that the driver and the handlers use to send notifications
//! through the same queue.
//!
//! A leaf of the crate: the client, the driver and the handler context all speak it, and it
//! knows none of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_machine::{Body, CallId, Input, NotifyRequest};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::error::Error;
use crate::types::Progress;

/// A progress callback.
pub(crate) type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// A task status callback.
pub(crate) type TaskStatusSink = Arc<dyn Fn(&mcp_machine::TaskStatus) + Send + Sync>;

/// A call's answer as it crosses the channel: a result as its text (or its tree when the
/// machine read it), the error boxed, so the channel a call in flight holds is sized for a
/// `Value`, not for the larger `Error` (an error is the rare case).
pub(crate) type Outcome = Result<Body, Box<Error>>;

/// A call's answer as received: the driver gone without one answers `Error::Shutdown`.
pub(crate) fn received(outcome: Result<Outcome, oneshot::error::RecvError>) -> Result<Body, Error> {
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(*error),
        Err(_) => Err(Error::Shutdown),
    }
}

/// Where a call's answer goes.
pub(crate) type Reply = oneshot::Sender<Outcome>;

/// What a caller asks of the driver.
pub(crate) enum Command {
    Call {
        input: Input,
        progress: Option<ProgressSink>,
        task_status: Option<TaskStatusSink>,
        reply: Reply,
        /// The request's span, when the client records telemetry.
        #[cfg(feature = "otel")]
        span: Option<Box<crate::otel::CallSpan>>,
    },
    Notify {
        input: Input,
        reply: Reply,
    },
    Cancel(CallId),
    Stop {
        call: CallId,
        reply: oneshot::Sender<()>,
    },
}

/// Sends notifications to the server through the driver, for the driver's own needs and for
/// handlers ([`crate::RequestContext::progress`]); holds no client alive (a weak sender).
#[derive(Clone)]
pub(crate) struct Notifier {
    commands: mpsc::WeakUnboundedSender<Command>,
    next_call: Arc<AtomicU64>,
}

impl Notifier {
    /// A notifier over the driver's command queue, taking caller ids from the client's counter.
    pub(crate) fn new(
        commands: mpsc::WeakUnboundedSender<Command>,
        next_call: Arc<AtomicU64>,
    ) -> Self {
        Notifier {
            commands,
            next_call,
        }
    }

    /// A fresh caller id.
    pub(crate) fn next_call(&self) -> CallId {
        CallId(self.next_call.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a notification and waits for the transport to take it (or the reason it did not).
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        let rx = {
            let commands = self.commands.upgrade().ok_or(Error::Shutdown)?;
            let (reply, rx) = oneshot::channel();
            let input = Input::Notify(NotifyRequest {
                call: self.next_call(),
                method: method.to_owned(),
                params,
            });
            commands
                .send(Command::Notify { input, reply })
                .map_err(|_| Error::Shutdown)?;
            rx
        };
        received(rx.await).map(|_| ())
    }
}
