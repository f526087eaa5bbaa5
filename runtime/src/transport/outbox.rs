//! The outgoing side of a byte link: the frames accepted and not yet written, and the writer
//! they go to, shared by the [`TransportHandle`](super::TransportHandle) and its task.
//!
//! Whoever holds the handle writes at once when nothing else is being written ([`Outbox::flush`]:
//! one write of every frame queued, never waiting), so a frame need not cross to the task to go
//! out. When the link has no room, the write is left to the task, which waits for room and
//! writes the rest in order; until it has, frames are only queued. This is not a protocol
//! layer: the frames are opaque bytes, each written with a `\n` after it.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::AsyncWrite;
use tokio::sync::Notify;

use super::SendOutcome;

/// Frames written in one vectored write at most.
const MAX_SLICES: usize = 64;

/// The frames of one byte link not yet written, and its writer.
pub(crate) struct Outbox {
    state: Mutex<State>,
    /// Wakes the task: a write found no room (the task waits for it) or failed.
    task: Notify,
    /// Frames queued at most; more is [`SendOutcome::Busy`].
    capacity: usize,
}

/// The writer's half under the lock.
struct State {
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// Frames accepted and not completely written, each ending in `\n`.
    queue: VecDeque<Vec<u8>>,
    /// Bytes of the first frame already written.
    written: usize,
    /// Bytes written since the writer was last flushed.
    unflushed: bool,
    /// The task writes: a write found no room and the task waits for it (nobody else may
    /// write then: the link remembers one waiter, the task's).
    task_writes: bool,
    /// The write that failed; nothing is written after it.
    failed: Option<io::Error>,
}

impl Outbox {
    /// The outbox of a link just connected, holding its writer.
    pub(crate) fn new(writer: Box<dyn AsyncWrite + Send + Unpin>, capacity: usize) -> Self {
        Outbox {
            state: Mutex::new(State {
                writer,
                queue: VecDeque::new(),
                written: 0,
                unflushed: false,
                task_writes: false,
                failed: None,
            }),
            task: Notify::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues one frame (without its `\n`), writing nothing: `Busy` when the queue is full,
    /// `Failed` after a write failed.
    pub(crate) fn push(&self, frame: Vec<u8>) -> SendOutcome {
        let mut state = self.lock();
        Self::queue(&mut state, self.capacity, frame)
    }

    fn queue(state: &mut State, capacity: usize, mut frame: Vec<u8>) -> SendOutcome {
        if state.failed.is_some() {
            return SendOutcome::Failed;
        }
        if state.queue.len() >= capacity {
            return SendOutcome::Busy;
        }
        frame.push(b'\n');
        state.queue.push_back(frame);
        SendOutcome::Ok
    }

    /// Queues frames that were waiting for the link (in order, none refused for room).
    pub(crate) fn push_waiting(&self, frames: impl IntoIterator<Item = Vec<u8>>) {
        let mut state = self.lock();
        for mut frame in frames {
            frame.push(b'\n');
            state.queue.push_back(frame);
        }
    }

    /// Writes what is queued now, without waiting: what the link has no room for is left to
    /// the task (woken for it), as is a write error. Nothing is written while the task writes.
    pub(crate) fn flush(&self) {
        let mut state = self.lock();
        if state.task_writes || state.failed.is_some() || state.queue.is_empty() {
            return;
        }
        // No waker is kept by a write that finds no room: the task takes over and waits.
        let mut cx = Context::from_waker(Waker::noop());
        match state.drain(&mut cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => {
                state.failed = Some(e);
                drop(state);
                self.task.notify_one();
            }
            Poll::Pending => {
                state.task_writes = true;
                drop(state);
                self.task.notify_one();
            }
        }
    }

    /// Leaves the writing of what is queued to the task: it writes when it next runs, with
    /// whatever else was queued by then, in one write (for a busy link: fewer writes).
    pub(crate) fn hand_over(&self) {
        self.task.notify_one();
    }

    /// The task's side: each time a write is left to it, writes everything queued (waiting
    /// for room); returns only when a write failed, with its error.
    pub(crate) async fn write_when_told(&self) -> io::Error {
        loop {
            self.task.notified().await;
            if let Err(e) = self.write_all().await {
                return e;
            }
        }
    }

    /// Writes everything queued, waiting for room, and flushes; the error of a write that
    /// failed (now or before).
    pub(crate) async fn write_all(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| {
            let mut state = self.lock();
            if let Some(e) = &state.failed {
                return Poll::Ready(Err(io::Error::new(e.kind(), e.to_string())));
            }
            // Nobody else writes until this is done (a write of theirs would drop this waker).
            state.task_writes = true;
            match state.drain(cx) {
                Poll::Ready(Ok(())) => {
                    state.task_writes = false;
                    Poll::Ready(Ok(()))
                }
                Poll::Ready(Err(e)) => {
                    let kept = io::Error::new(e.kind(), e.to_string());
                    state.failed = Some(e);
                    Poll::Ready(Err(kept))
                }
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }

    /// Writes everything queued and shuts the writer down (its end of the link says EOF).
    /// Nothing can be written after it.
    pub(crate) async fn close(&self) -> io::Result<()> {
        self.write_all().await?;
        std::future::poll_fn(|cx| {
            let mut state = self.lock();
            state.task_writes = true;
            let result = Pin::new(&mut state.writer).poll_shutdown(cx);
            if let Poll::Ready(Err(e)) = &result {
                state.failed = Some(io::Error::new(e.kind(), e.to_string()));
            }
            result
        })
        .await
    }

    /// Closes the writer (drops it, for a child: its stdin) and refuses every frame after.
    pub(crate) fn drop_writer(&self) {
        let mut state = self.lock();
        state.queue.clear();
        if state.failed.is_none() {
            state.failed = Some(io::Error::new(io::ErrorKind::BrokenPipe, "link closed"));
        }
        state.writer = Box::new(tokio::io::sink());
    }
}

impl State {
    /// Writes the queue in order (several frames in one vectored write when the writer takes
    /// them) and flushes; `Pending` when the link has no room (the waker is told of room).
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.queue.is_empty() {
            let n = {
                let writer = Pin::new(&mut self.writer);
                let first = &self.queue[0][self.written..];
                if self.queue.len() > 1 && writer.is_write_vectored() {
                    let mut slices = Vec::with_capacity(self.queue.len().min(MAX_SLICES));
                    slices.push(io::IoSlice::new(first));
                    slices.extend(
                        self.queue
                            .iter()
                            .skip(1)
                            .take(MAX_SLICES - 1)
                            .map(|f| io::IoSlice::new(f)),
                    );
                    std::task::ready!(writer.poll_write_vectored(cx, &slices))?
                } else {
                    std::task::ready!(writer.poll_write(cx, first))?
                }
            };
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.unflushed = true;
            self.consume(n);
        }
        if self.unflushed {
            std::task::ready!(Pin::new(&mut self.writer).poll_flush(cx))?;
            self.unflushed = false;
        }
        Poll::Ready(Ok(()))
    }

    /// Takes `n` written bytes off the front of the queue.
    fn consume(&mut self, mut n: usize) {
        while n > 0 {
            let Some(first) = self.queue.front() else {
                return;
            };
            let left = first.len() - self.written;
            if n < left {
                self.written += n;
                return;
            }
            n -= left;
            self.written = 0;
            self.queue.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Queues one frame and writes what is queued at once, as the handle's `try_send` does.
    fn send(outbox: &Outbox, frame: &[u8]) -> SendOutcome {
        let outcome = outbox.push(frame.to_vec());
        outbox.flush();
        outcome
    }

    #[tokio::test]
    async fn frames_go_out_in_order_with_a_newline_each() {
        let (ours, mut theirs) = tokio::io::duplex(1024);
        let outbox = Outbox::new(Box::new(ours), 8);
        assert_eq!(outbox.push(b"{}".to_vec()), SendOutcome::Ok);
        assert_eq!(outbox.push(b"[1]".to_vec()), SendOutcome::Ok);
        outbox.flush();
        assert_eq!(send(&outbox, b"2"), SendOutcome::Ok);
        let mut got = vec![0; 9];
        theirs.read_exact(&mut got).await.unwrap();
        assert_eq!(got, b"{}\n[1]\n2\n");
    }

    #[tokio::test]
    async fn a_full_queue_is_busy_and_the_task_writes_what_finds_no_room() {
        // Room for 4 bytes: the first write is partial, the task finishes it.
        let (ours, mut theirs) = tokio::io::duplex(4);
        let outbox = std::sync::Arc::new(Outbox::new(Box::new(ours), 2));
        let task = tokio::spawn({
            let outbox = std::sync::Arc::clone(&outbox);
            async move { outbox.write_when_told().await }
        });
        assert_eq!(outbox.push(b"abcdef".to_vec()), SendOutcome::Ok);
        assert_eq!(outbox.push(b"gh".to_vec()), SendOutcome::Ok);
        assert_eq!(outbox.push(b"ij".to_vec()), SendOutcome::Busy);
        outbox.flush();
        // While the task writes, a flush writes nothing (and takes no waiter's place).
        outbox.flush();
        let mut got = vec![0; 10];
        theirs.read_exact(&mut got).await.unwrap();
        assert_eq!(got, b"abcdef\ngh\n");
        assert_eq!(send(&outbox, b"k"), SendOutcome::Ok);
        let mut got = vec![0; 2];
        theirs.read_exact(&mut got).await.unwrap();
        assert_eq!(got, b"k\n");
        assert!(!task.is_finished());
        task.abort();
    }

    #[tokio::test]
    async fn a_failed_write_ends_the_task_and_refuses_what_follows() {
        let (ours, theirs) = tokio::io::duplex(64);
        drop(theirs);
        let outbox = std::sync::Arc::new(Outbox::new(Box::new(ours), 4));
        assert_eq!(send(&outbox, b"{}"), SendOutcome::Ok);
        let err = outbox.write_when_told().await;
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(outbox.push(b"{}".to_vec()), SendOutcome::Failed);
    }

    #[tokio::test]
    async fn closing_writes_what_is_queued_then_says_eof() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let outbox = Outbox::new(Box::new(ours), 4);
        assert_eq!(outbox.push(b"{}".to_vec()), SendOutcome::Ok);
        outbox.close().await.unwrap();
        let mut got = Vec::new();
        theirs.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"{}\n");
        outbox.drop_writer();
        assert_eq!(outbox.push(b"{}".to_vec()), SendOutcome::Failed);
    }
}
