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
}
