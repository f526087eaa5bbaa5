//! The runtime's newline framing ([`FrameReader`]) against a plain model of it, over a reader
//! that hands the bytes out in small chunks and now and then is not ready, at which point the
//! read is cancelled (its future dropped) and started again, as `select!` does.
//!
//! Checks: the frames, their order and the way the stream ends are exactly the model's; an
//! oversized line says it saw more than the limit; a cancelled read loses nothing.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use mcp_runtime::transport::framing::{FrameReader, ReadFrame};
use tokio::io::{AsyncRead, ReadBuf};

/// A reader over `data`: at most `chunk` bytes per read, and every `pending_every`-th read
/// (0: never) is not ready.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
    pending_every: u32,
    reads: u32,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.reads = self.reads.wrapping_add(1);
        if self.pending_every != 0 && self.reads.is_multiple_of(self.pending_every) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let n = self.chunk.min(self.data.len()).min(buf.remaining());
        let (head, rest) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

/// What the reader must give for `data` under the limit `max`: the frames, then how it ends.
/// An oversized line's `seen` depends on the chunks, so the model leaves it at 0.
pub fn model(data: &[u8], max: usize) -> Vec<ReadFrame> {
    let mut out = Vec::new();
    let mut lines = data.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        if line.len() > max + 1 {
            out.push(ReadFrame::Oversized { seen: 0 });
            return out;
        }
        if last {
            out.push(match line.len() {
                0 => ReadFrame::Eof,
                partial => ReadFrame::Truncated { partial },
            });
            return out;
        }
        let frame = line.strip_suffix(b"\r").unwrap_or(line);
        if frame.len() > max {
            out.push(ReadFrame::Oversized { seen: 0 });
            return out;
        }
        if !frame.is_empty() {
            out.push(ReadFrame::Frame(frame.to_vec()));
        }
    }
    unreachable!("split always yields a last piece")
}

/// Reads `data` to its end under the limit `max`, `chunk` bytes at a time, every
/// `pending_every`-th read cancelled (0: never; 1 would never make progress and is taken as 2).
pub fn read_all(data: &[u8], max: usize, chunk: usize, pending_every: u32) -> Vec<ReadFrame> {
    let reader = Chunked {
        data,
        chunk: chunk.max(1),
        pending_every: if pending_every == 1 { 2 } else { pending_every },
        reads: 0,
    };
    let mut frames = FrameReader::new(reader, max);
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    loop {
        let polled = pin!(frames.next_frame()).as_mut().poll(&mut cx);
        match polled {
            // Cancelled: the future is dropped here and a new read starts.
            Poll::Pending => continue,
            Poll::Ready(result) => {
                let frame = result.expect("an in-memory read cannot fail");
                let end = !matches!(frame, ReadFrame::Frame(_));
                out.push(frame);
                if end {
                    return out;
                }
            }
        }
    }
}

/// The fuzzer's bytes: the limit (byte 0), the chunking (byte 1), then the stream.
pub fn check(input: &[u8]) {
    let [limit, chunking, data @ ..] = input else {
        return;
    };
    let max = usize::from(limit % 64);
    let chunk = usize::from(chunking & 0x0f) + 1;
    let pending_every = u32::from(chunking >> 4);
    let mut got = read_all(data, max, chunk, pending_every);
    if let Some(ReadFrame::Oversized { seen }) = got.last_mut() {
        assert!(
            *seen > max,
            "oversized after only {seen} bytes (limit {max})"
        );
        *seen = 0;
    }
    assert_eq!(got, model(data, max), "limit {max}, chunks of {chunk}");
}
