//! Newline-delimited JSON framing (MCP stdio framing), written by hand so that the frame limit
//! is enforced while reading: a line longer than the limit is never buffered whole.
//!
//! Reading: bytes are read into the reader's own buffer, which starts at 4 KiB and doubles
//! (to 64 KiB) each time a read fills it, zeroed once as it grows (a link of small frames
//! never clears 64 KiB, and no reader is handed memory to clear again on every read); a frame
//! ends at `\n` (found with `memchr`), a trailing `\r` is stripped, empty lines are skipped.
//! At most `max + 1` bytes of one line are held (the extra byte leaves room for the `\r` of a
//! `\r\n` ending); a longer line ends the read with [`ReadFrame::Oversized`]. The one await
//! point is a read into the buffer, which reads nothing when it does not complete, and the
//! partial line lives in the reader, so [`FrameReader::next_frame`] is cancel-safe.
//!
//! Writing: each frame is followed by `\n`; the caller flushes once per batch.
//!
//! The reader is `pub` only for the fuzz targets in `fuzz/` (the module is `#[doc(hidden)]`):
//! it is not part of the API.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest read buffer in front of the link's reader.
const READ_BUFFER: usize = 64 * 1024;

/// First size of the read buffer; it doubles, up to [`READ_BUFFER`], each time a read fills it.
const FIRST_READ_BUFFER: usize = 4 * 1024;

/// One result of reading the next frame.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadFrame {
    /// A complete frame, without its line ending, never empty.
    Frame(Vec<u8>),
    /// The current line exceeded the limit; `seen` bytes of it were read before giving up.
    /// The reader is left in the middle of that line: the link must end.
    Oversized { seen: usize },
    /// Clean end of input (no partial line pending).
    Eof,
    /// End of input in the middle of a line; `partial` bytes of it were read.
    Truncated { partial: usize },
}

/// Reads newline-delimited frames of at most `max` bytes from a byte stream.
pub struct FrameReader<R> {
    inner: R,
    /// The read buffer, all of it initialized (zeroed when it grows); bytes read and not yet
    /// taken are `buf[pos..end]`.
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    line: Vec<u8>,
    max: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Wraps `reader`; frames longer than `max` bytes (line ending excluded) are rejected.
    pub fn new(reader: R, max: usize) -> Self {
        Self {
            inner: reader,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            line: Vec::new(),
            max,
        }
    }

    /// How many bytes are read and not yet taken (`buf[pos..end]`), reading more when none
    /// are left: 0 at the end of input. Cancel-safe: a read that does not complete reads
    /// nothing.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.pos >= self.end {
            if self.end == self.buf.len() && self.buf.len() < READ_BUFFER {
                // The last read filled the buffer (or none was made): more room, zeroed once.
                let size = (self.buf.len() * 2).clamp(FIRST_READ_BUFFER, READ_BUFFER);
                self.buf.resize(size, 0);
            }
            // Emptied before the read: a read dropped halfway leaves nothing to take twice.
            self.pos = 0;
            self.end = 0;
            self.end = self.inner.read(&mut self.buf).await?;
        }
        Ok(self.end - self.pos)
    }

    /// Takes `n` bytes of what [`FrameReader::fill`] returned.
    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }

    /// Reads the next frame. Cancel-safe: a partial line is kept for the next call.
    pub async fn next_frame(&mut self) -> io::Result<ReadFrame> {
        // One extra byte is tolerated while accumulating so that a frame of exactly `max`
        // bytes followed by `\r\n` is accepted; the real check happens after stripping `\r`.
        let hold = self.max.saturating_add(1);
        loop {
            self.fill().await?;
            let avail = &self.buf[self.pos..self.end];
            if avail.is_empty() {
                if self.line.is_empty() {
                    return Ok(ReadFrame::Eof);
                }
                let partial = self.line.len();
                self.line = Vec::new();
                return Ok(ReadFrame::Truncated { partial });
            }
            let newline = memchr::memchr(b'\n', avail);
            let chunk_len = newline.unwrap_or(avail.len());
            let total = self.line.len() + chunk_len;
            if total > hold {
                // Give up without buffering the rest of the line.
                self.consume(chunk_len);
                self.line = Vec::new();
                return Ok(ReadFrame::Oversized { seen: total });
            }
            self.line.extend_from_slice(&avail[..chunk_len]);
            match newline {
                None => self.consume(chunk_len),
                Some(_) => {
                    self.consume(chunk_len + 1);
                    if self.line.last() == Some(&b'\r') {
                        self.line.pop();
                    }
                    if self.line.len() > self.max {
                        let seen = self.line.len();
                        self.line = Vec::new();
                        return Ok(ReadFrame::Oversized { seen });
                    }
                    if !self.line.is_empty() {
                        return Ok(ReadFrame::Frame(std::mem::take(&mut self.line)));
                    }
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Drops what is left of the current line, through its `\n`, without buffering it: after
    /// [`ReadFrame::Oversized`], a peer that may go on (a host talking to a bridge) is read
    /// again from its next line. `false` at the end of input. Cancel-safe like
    /// [`FrameReader::next_frame`] (a line skipped halfway is skipped on by the next call).
    pub async fn skip_line(&mut self) -> io::Result<bool> {
        loop {
            if self.fill().await? == 0 {
                return Ok(false);
            }
            let avail = &self.buf[self.pos..self.end];
            match memchr::memchr(b'\n', avail) {
                Some(at) => {
                    self.consume(at + 1);
                    return Ok(true);
                }
                None => {
                    let n = avail.len();
                    self.consume(n);
                }
            }
        }
    }
}

/// Writes one frame followed by `\n` (no flush; the caller flushes once per batch).
/// The frame must not contain a `\n` byte (compact JSON never does).
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    frame: &[u8],
) -> io::Result<()> {
    writer.write_all(frame).await?;
    writer.write_all(b"\n").await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn frames_of(input: &[u8], max: usize) -> Vec<ReadFrame> {
        let mut reader = FrameReader::new(input, max);
        let mut out = Vec::new();
        loop {
            let f = reader
                .next_frame()
                .await
                .expect("in-memory read cannot fail");
            let end = !matches!(f, ReadFrame::Frame(_));
            out.push(f);
            if end {
                return out;
            }
        }
    }

    fn frame(s: &str) -> ReadFrame {
        ReadFrame::Frame(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn splits_lines_strips_cr_and_skips_empty_lines() {
        let got = frames_of(b"{\"a\":1}\n\n\r\n{\"b\":2}\r\nx\n", 64).await;
        assert_eq!(
            got,
            vec![
                frame("{\"a\":1}"),
                frame("{\"b\":2}"),
                frame("x"),
                ReadFrame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn a_skipped_line_resumes_at_the_next() {
        let mut reader = FrameReader::new(&b"0123456789abcdef\n{\"ok\":1}\nxyzxyz"[..], 4);
        assert!(matches!(
            reader.next_frame().await.unwrap(),
            ReadFrame::Oversized { .. }
        ));
        assert!(reader.skip_line().await.unwrap());
        assert!(matches!(
            reader.next_frame().await.unwrap(),
            ReadFrame::Oversized { .. }
        ));
        assert!(reader.skip_line().await.unwrap());
        assert!(matches!(
            reader.next_frame().await.unwrap(),
            ReadFrame::Oversized { .. }
        ));
        assert!(!reader.skip_line().await.unwrap());
    }

    #[tokio::test]
    async fn eof_in_the_middle_of_a_line_is_truncated() {
        let got = frames_of(b"one\ntwo", 64).await;
        assert_eq!(got, vec![frame("one"), ReadFrame::Truncated { partial: 3 }]);
    }

    #[tokio::test]
    async fn exactly_max_is_accepted_and_one_more_is_rejected() {
        let got = frames_of(b"12345\n12345\r\n123456\n", 5).await;
        assert_eq!(
            got,
            vec![
                frame("12345"),
                frame("12345"),
                ReadFrame::Oversized { seen: 6 }
            ]
        );
    }

    #[tokio::test]
    async fn oversized_without_newline_is_not_buffered() {
        // A long line with no newline in sight: gives up once more than max + 1 bytes arrived.
        let input = vec![b'x'; 100_000];
        let mut reader = FrameReader::new(&input[..], 10);
        match reader.next_frame().await.unwrap() {
            ReadFrame::Oversized { seen } => {
                assert!(seen > 10 && seen <= READ_BUFFER, "seen {seen}")
            }
            other => panic!("expected oversized, got {other:?}"),
        }
        assert!(
            reader.line.capacity() <= 11,
            "line buffer grew to {}",
            reader.line.capacity()
        );
    }

    #[tokio::test]
    async fn lines_split_across_reads_are_joined() {
        let (client, mut server) = tokio::io::duplex(4);
        let writer = tokio::spawn(async move {
            server
                .write_all(b"{\"long\":\"abcdefghij\"}\nsecond\n")
                .await
                .unwrap();
        });
        let mut reader = FrameReader::new(client, 64);
        assert_eq!(
            reader.next_frame().await.unwrap(),
            frame("{\"long\":\"abcdefghij\"}")
        );
        assert_eq!(reader.next_frame().await.unwrap(), frame("second"));
        writer.await.unwrap();
        assert_eq!(reader.next_frame().await.unwrap(), ReadFrame::Eof);
    }

    /// A read given up while a line is half there (the transport's `select!` drops it) loses
    /// no byte: the next read finishes the same line, and what follows it in the buffer.
    #[tokio::test]
    async fn a_read_given_up_midway_loses_nothing() {
        let (client, mut server) = tokio::io::duplex(64);
        let mut reader = FrameReader::new(client, 64);
        server.write_all(b"{\"half\":").await.unwrap();
        for _ in 0..3 {
            let gave_up =
                tokio::time::timeout(std::time::Duration::from_millis(5), reader.next_frame())
                    .await;
            assert!(gave_up.is_err(), "a half line read as {gave_up:?}");
        }
        server.write_all(b"1}\r\nnext\n").await.unwrap();
        assert_eq!(reader.next_frame().await.unwrap(), frame("{\"half\":1}"));
        assert_eq!(reader.next_frame().await.unwrap(), frame("next"));
        drop(server);
        assert_eq!(reader.next_frame().await.unwrap(), ReadFrame::Eof);
    }
    /// A reader that fails the test if it is ever handed memory it would have to clear.
    struct NoClearing<R>(R);

    impl<R: AsyncRead + Unpin> AsyncRead for NoClearing<R> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            assert_eq!(
                buf.initialized().len(),
                buf.capacity(),
                "the reader was handed uninitialized memory"
            );
            std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
        }
    }

    /// Small frames keep the buffer at its first size; a read that fills it doubles it, up
    /// to the largest; no read is handed memory to clear.
    #[tokio::test]
    async fn the_buffer_grows_only_when_reads_fill_it_and_is_never_handed_out_uninitialized() {
        let small = b"{\"a\":1}\n".repeat(10);
        let mut reader = FrameReader::new(NoClearing(&small[..]), 1024);
        for _ in 0..10 {
            assert_eq!(reader.next_frame().await.unwrap(), frame("{\"a\":1}"));
        }
        assert_eq!(reader.buf.len(), FIRST_READ_BUFFER);
        let mut big = vec![b'x'; 200 * 1024];
        big.push(b'\n');
        let mut reader = FrameReader::new(NoClearing(&big[..]), 300 * 1024);
        match reader.next_frame().await.unwrap() {
            ReadFrame::Frame(f) => assert_eq!(f.len(), 200 * 1024),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(reader.buf.len(), READ_BUFFER);
        assert_eq!(reader.next_frame().await.unwrap(), ReadFrame::Eof);
    }

    /// The real default limit over a tokio duplex: 16 MiB exactly passes, 16 MiB + 1 does not.
    #[tokio::test]
    async fn sixteen_mib_exact_accepted_one_more_rejected_over_duplex() {
        const MAX: usize = 16 * 1024 * 1024;
        let (client, mut server) = tokio::io::duplex(256 * 1024);
        let writer = tokio::spawn(async move {
            let mut line = vec![b'a'; MAX];
            line.push(b'\n');
            server.write_all(&line).await.unwrap();
            line.pop();
            line.push(b'b');
            line.push(b'\n');
            // The reader gives up part-way; the rest of this write may fail, which is fine.
            let _ = server.write_all(&line).await;
        });
        let mut reader = FrameReader::new(client, MAX);
        match reader.next_frame().await.unwrap() {
            ReadFrame::Frame(f) => {
                assert_eq!(f.len(), MAX);
                assert!(f.iter().all(|&b| b == b'a'));
            }
            other => panic!("expected a 16 MiB frame, got {other:?}"),
        }
        match reader.next_frame().await.unwrap() {
            ReadFrame::Oversized { seen } => assert!(seen > MAX, "seen {seen}"),
            other => panic!("expected oversized, got {other:?}"),
        }
        drop(reader);
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn write_frame_appends_newline() {
        let mut out = Vec::new();
        write_frame(&mut out, b"{}").await.unwrap();
        write_frame(&mut out, b"[1]").await.unwrap();
        out.flush().await.unwrap();
        assert_eq!(out, b"{}\n[1]\n");
    }
}
