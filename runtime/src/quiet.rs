//! [`Quiet`]: a future that is polled only after it asked to be.
//!
//! `tokio::select!` polls every branch each time its task wakes, whichever branch woke it. A
//! branch that waits for something rare (a child's exit, a close request, a deadline) beside
//! busy ones (frames in and out) is so polled once per frame for nothing, and a process-exit
//! future, a watch channel's `Notified` and a timer each do real work at every poll. `Quiet` gives the future a waker of its own and polls it only when that waker was
//! woken since the last poll (or when told to, [`Quiet::inner_mut`]); otherwise a poll is one
//! atomic swap.
//!
//! [`QuietRx`] does the same for a channel's receiving end that a `select!` polls on every
//! turn: an empty channel's poll (budget check, queue read, waker registration, queue read
//! again) is skipped unless a send woke it since; after a message it is polled again, since
//! the messages queued behind it woke nothing.
//!
//! Correct for any future that keeps the waker contract (it wakes the last waker it was
//! given when it can make progress, as tokio's and futures' do, cooperative-budget yields
//! included). Not a scheduler and not a timer: it never wakes anything on its own.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;
use tokio::sync::mpsc::UnboundedReceiver;

/// A future polled only after its own waker was woken (see the module's doc).
pub(crate) struct Quiet<F> {
    inner: Pin<Box<F>>,
    signal: Arc<Signal>,
    /// The waker the inner future is polled with (the signal's), made once.
    waker: Waker,
}

/// What the inner future's waker does: notes the wake, then wakes the task polling `Quiet`.
struct Signal {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl Signal {
    /// A signal and the waker that raises it; `woken` starts set, so the first poll goes
    /// through.
    fn new() -> (Arc<Signal>, Waker) {
        let signal = Arc::new(Signal {
            woken: AtomicBool::new(true),
            task: AtomicWaker::new(),
        });
        let waker = Waker::from(Arc::clone(&signal));
        (signal, waker)
    }

    /// Registers the polling task, then says whether the inner thing woke since it was last
    /// polled (and lowers the flag). Registered before the flag is read: a wake between the
    /// two is seen now, one after it wakes the task again.
    fn take(&self, cx: &Context<'_>) -> bool {
        self.task.register(cx.waker());
        self.woken.swap(false, Ordering::AcqRel)
    }
}

impl<F: Future> Quiet<F> {
    /// Wraps `inner`; its first poll polls `inner`.
    pub(crate) fn new(inner: F) -> Self {
        let (signal, waker) = Signal::new();
        Quiet {
            inner: Box::pin(inner),
            waker,
            signal,
        }
    }

    /// The inner future, to change it in place (a timer's deadline); its next poll is
    /// forced, since what changed may have dropped the waker it held.
    pub(crate) fn inner_mut(&mut self) -> Pin<&mut F> {
        self.signal.woken.store(true, Ordering::Release);
        self.inner.as_mut()
    }
}

impl<F: Future> Future for Quiet<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if !self.signal.take(cx) {
            return Poll::Pending;
        }
        let this = &mut *self;
        let mut inner_cx = Context::from_waker(&this.waker);
        this.inner.as_mut().poll(&mut inner_cx)
    }
}

/// An unbounded channel's receiving end polled only after a send woke it (see the module's
/// doc). Not a channel of its own: the messages, their order and the end of the channel are
/// the inner receiver's.
pub(crate) struct QuietRx<T> {
    rx: UnboundedReceiver<T>,
    signal: Arc<Signal>,
    waker: Waker,
}

impl<T> QuietRx<T> {
    /// Wraps `rx`; its first poll polls `rx`.
    pub(crate) fn new(rx: UnboundedReceiver<T>) -> Self {
        let (signal, waker) = Signal::new();
        QuietRx { rx, signal, waker }
    }

    /// The next message, or `None` once every sender is gone and the queue is empty.
    pub(crate) async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if !self.signal.take(cx) {
            return Poll::Pending;
        }
        let mut inner_cx = Context::from_waker(&self.waker);
        let polled = self.rx.poll_recv(&mut inner_cx);
        if polled.is_ready() {
            // What was queued behind this message woke nothing: poll again next time.
            self.signal.woken.store(true, Ordering::Release);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// Counts its polls; ready once `ready` is set, and wakes its waker when told to.
    struct Probe {
        polls: Arc<AtomicUsize>,
        ready: Arc<AtomicBool>,
        waker: Arc<std::sync::Mutex<Option<Waker>>>,
    }

    impl Future for Probe {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            if self.ready.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    #[test]
    fn the_inner_future_is_polled_only_after_its_own_wake() {
        let polls = Arc::new(AtomicUsize::new(0));
        let ready = Arc::new(AtomicBool::new(false));
        let slot = Arc::new(std::sync::Mutex::new(None));
        let mut quiet = Quiet::new(Probe {
            polls: Arc::clone(&polls),
            ready: Arc::clone(&ready),
            waker: Arc::clone(&slot),
        });
        let outer_woken = Arc::new(AtomicUsize::new(0));
        struct Count(Arc<AtomicUsize>);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let outer = Waker::from(Arc::new(Count(Arc::clone(&outer_woken))));
        let mut cx = Context::from_waker(&outer);
        // The first poll reaches the inner future; the ones after it, without a wake, do not.
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        // The inner future's wake reaches the outer task, and the next poll reaches it.
        ready.store(true, Ordering::SeqCst);
        slot.lock().unwrap().take().unwrap().wake();
        assert_eq!(outer_woken.load(Ordering::SeqCst), 1);
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_ready());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn inner_mut_forces_the_next_poll() {
        let polls = Arc::new(AtomicUsize::new(0));
        let mut quiet = Quiet::new(Probe {
            polls: Arc::clone(&polls),
            ready: Arc::new(AtomicBool::new(false)),
            waker: Arc::new(std::sync::Mutex::new(None)),
        });
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        assert_eq!(quiet.inner_mut().polls.load(Ordering::SeqCst), 1);
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    /// Every message sent arrives, in order, also those sent while none was awaited and those
    /// queued behind one taken; an empty channel is not polled again without a send; the end
    /// of the channel is seen.
    #[tokio::test]
    async fn a_quiet_receiver_loses_no_message_and_skips_an_empty_channel() {
        // A lost wake-up would hang: bounded, it fails instead.
        tokio::time::timeout(Duration::from_secs(10), quiet_receiver_checks())
            .await
            .expect("a message sent was never received");
    }

    async fn quiet_receiver_checks() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut quiet = QuietRx::new(rx);
        for i in 0..3 {
            tx.send(i).unwrap();
        }
        assert_eq!(quiet.recv().await, Some(0));
        assert_eq!(quiet.recv().await, Some(1));
        // Empty after the last one: the flag is lowered, and polls without a send are skipped.
        assert_eq!(quiet.recv().await, Some(2));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(quiet.poll_recv(&mut cx).is_pending());
        assert!(!quiet.signal.woken.load(Ordering::Acquire));
        assert!(quiet.poll_recv(&mut cx).is_pending());
        // A send from another task wakes the one awaiting.
        let later = tx.clone();
        let sender = tokio::spawn(async move {
            tokio::task::yield_now().await;
            later.send(3).unwrap();
            later.send(4).unwrap();
        });
        assert_eq!(quiet.recv().await, Some(3));
        sender.await.unwrap();
        assert_eq!(quiet.recv().await, Some(4));
        // More queued than a task's cooperative budget lets it take in one go: the receiver
        // yields part-way (its waker raises the flag) and still takes every one, in order.
        for i in 0..1000 {
            tx.send(i).unwrap();
        }
        drop(tx);
        for i in 0..1000 {
            assert_eq!(quiet.recv().await, Some(i));
        }
        assert_eq!(quiet.recv().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_timer_reset_after_firing_still_fires() {
        let start = tokio::time::Instant::now();
        let mut quiet = Quiet::new(tokio::time::sleep(Duration::from_secs(1)));
        (&mut quiet).await;
        quiet.inner_mut().reset(start + Duration::from_secs(5));
        (&mut quiet).await;
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }
}
