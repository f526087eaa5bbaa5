//! Deliberate handler bugs for the model checker's mutation self-test (feature `checker` only:
//! none of this is in a product build).

/// One deliberate bug in the handlers: each must be caught by some property of the checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mutant {
    /// Ended ids (timeout, cancel, failure) are not tombstoned.
    NoTombstoneOnEnd,
    /// A completed call's request timer stays armed.
    KeepTimerAfterReply,
    /// Calls waiting to resend are neither failed nor cleared when ready is left.
    ForgetRetries,
    /// The id counter restarts with every transport generation.
    ReuseIds,
    /// Inputs from older transport generations are taken as current.
    AcceptStaleGeneration,
    /// `notifications/cancelled` is sent for requests that never went out.
    CancelUnsent,
    /// The tombstone sweep drops every tombstone, expired or not.
    SweepTooEarly,
    /// A response answers its call but the call stays in flight.
    ReplyKeepsEntry,
    /// A response is consumed by another live call than the one it answers (a payload-typing
    /// slip: the right type, the wrong value).
    AnswerWrongCall,
    /// An expired session's refused calls are failed like the running ones, not kept.
    ParkNothing,
    /// Calls kept across a session expiry are never sent on the new session.
    NoResend,
    /// Calls kept across a session expiry are sent again at once, on the expired session.
    ResendOnExpired,
    /// The re-initialization budget is never spent: an expired session is initialized again
    /// at once, however often.
    UnboundedReinit,
    /// A call already sent again after a session expiry is kept again at the next one.
    ParkResentAgain,
    /// Every request carries the modern envelope, whatever the verdict.
    EnvelopeAlways,
    /// A server request that has no answer (before the era is decided, or from a modern
    /// server) is answered method-not-found all the same.
    AnswerUnexpected,
    /// A tentative legacy verdict survives the failed handshake it led to.
    KeepTentativeVerdict,
    /// A modern server's answer to the probe is never taken for a refusal (so the fallback
    /// takes it, and `initialize` follows).
    NoModernRefusal,
    /// The retry of an `input_required` round leaves the `requestState` out.
    DropRequestState,
    /// `input_required` rounds are not capped.
    NoRoundCap,
    /// A lost modern request is sent again however often it is lost.
    NoReissueCap,
    /// Every -32020 lists the tools again and sends the call again, however often.
    RelistAlways,
    /// The calls waiting for a listing of the tools are not sent again when it is answered.
    NoResendAfterRelist,
    /// A listen leaves the subscribed resources out of what it asks for.
    ListenDropsUris,
    /// A notification tagged with any listen id is delivered (ended, replaced, unknown).
    DeliverAnyListenId,
    /// A listen's acknowledgement answers every subscribe waiting for it as done, whatever it
    /// honors.
    AckIgnoresFilter,
    /// A replaced listen is never cancelled.
    NoListenCancel,
    /// A listen the server ended is cancelled all the same.
    CancelEndedListen,
    /// Lost listens are opened again however often.
    NoRelistenCap,
    /// A call refused for want of authorization again after one waits for another.
    AuthRetryAlways,
    /// Calls waiting for an authorization are not sent again when it ends with a token.
    NoResendAfterAuth,
    /// Authorizations are asked for without a bound.
    UnboundedAuth,
    /// A call refused for want of authorization is sent again at once, before any token.
    ResendBeforeAuth,
    /// Every frame taken gives the whole read window back instead of one credit.
    WindowOnEveryCredit,
    /// A session that stayed up for `session_stable` does not restart the backoff sequence.
    StableNeverResets,
    /// A `CreateTaskResult` is taken as a task even with tasks off.
    TasksAlways,
    /// A task is polled again at once, whatever its interval.
    PollAtOnce,
    /// `tasks/cancel` is sent twice.
    CancelTwice,
    /// A task waiting for its poll is never polled.
    NoPoll,
    /// A task's input keys are handed to the handler again at every poll.
    NoInputDedupe,
    /// The tasks are dropped (never answered) when the connection is lost.
    DropTasksOnLoss,
    /// A caller's bound on its whole task is never armed.
    NoTaskDeadline,
    /// A call that asked to wait for ready is turned away with `Unavailable` all the same.
    WaitNever,
    /// A call that asked to wait for ready is sent at once, whatever the state.
    WaitSentAtOnce,
    /// Stop leaves the calls waiting for ready unanswered.
    WaitForgottenAtStop,
    /// A waiting call's deadline is never armed.
    NoWaitDeadline,
    /// A waiting call goes out with a whole new timeout (the time it waited forgotten).
    WaitFreshDeadline,
    /// A lost connection fails the calls waiting for ready.
    WaitFailedOnLoss,
    /// A transport that failed for good leaves the calls waiting for ready waiting.
    KeepWaitingOnPermanent,
}
