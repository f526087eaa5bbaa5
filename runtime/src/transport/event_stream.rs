//! An incremental `text/event-stream` parser by the WHATWG rules (HTML Living Standard,
//! "Interpreting an event stream"), bounded in memory.
//!
//! [`EventStream`] is fed the bytes of a stream in chunks of any size (a line, a line end, or
//! the BOM may be split anywhere) and hands out the events it dispatches, one at a time. What
//! the standard accepts it accepts: a line without a colon (a field with an empty value), an
//! unknown field (ignored), a `retry` that is not all digits (ignored), a repeated field (data
//! lines joined with LF; the last `event` or `id` wins), an `id` holding NUL (ignored), a
//! leading BOM (stripped), CR, LF and CRLF line ends (a CR ending one chunk and an LF starting
//! the next are one line end), invalid UTF-8 (decoded with U+FFFD). An event whose data buffer
//! is empty is not dispatched, but its `id` still becomes the last event id; an event the
//! stream's end cuts short is never dispatched.
//!
//! The bound: what is held for the event being built (its data and type so far) plus the
//! unfinished line may not pass [`EventStream::with_limits`]'s `max_pending`, and the data of a
//! dispatched event may not pass `max_data`; over either the stream fails with
//! [`EventStreamError::Oversized`] (nothing is buffered past the bound). Comments, blank lines
//! and events already handed out count for nothing, so keepalive comments never add up.
//!
//! Not an HTTP client and not a reconnecting `EventSource`: it never reads a socket, and what
//! to do with the last event id and `retry` (resuming a stream) is the caller's.

use std::mem;

/// Room over the data limit for what an event carries besides its data: field names, the LF
/// between data lines, its type ([`EventStream::new`]).
pub const FIELD_ROOM: usize = 4096;

/// The UTF-8 byte order mark, stripped once at the stream's start.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event: its type and data. Its id is the stream's last event id at its
/// dispatch ([`EventStream::last_event_id`]). Not a message: a priming event (empty data) is
/// an event too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// The `event` field's value; empty when it gave none, which means `message`.
    pub event: String,
    /// The data lines joined with LF.
    pub data: String,
}

impl Event {
    /// The event's type: its `event` field, or `message` when that is missing or empty.
    pub fn kind(&self) -> &str {
        if self.event.is_empty() {
            "message"
        } else {
            &self.event
        }
    }
}

/// Why an event stream was given up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventStreamError {
    /// An event (or one line of it) grew past a bound; the stream is not read further.
    #[error("an SSE event over its limit ({seen} bytes seen, limit {limit})")]
    Oversized {
        /// Bytes of the event read before giving up (more than `limit`).
        seen: usize,
        /// The bound it passed.
        limit: usize,
    },
}

/// Where the stream is in its leading byte order mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// This many bytes of the BOM were seen, and nothing else yet.
    Bom(usize),
    /// Past the stream's start.
    Done,
}

/// The parser of one event stream: fed bytes, it yields events, and keeps the last event id
/// and the reconnection time (`retry`) the stream set. Never panics, whatever it is fed.
#[derive(Debug)]
pub struct EventStream {
    max_data: usize,
    max_pending: usize,
    start: Start,
    /// The unfinished line's bytes (none kept for a comment).
    line: Vec<u8>,
    /// The unfinished line's length, comments included.
    line_len: usize,
    /// Whether the unfinished line is a comment (starts with a colon).
    comment: bool,
    /// Whether the last byte seen ended a line with CR (an LF right after it is not a line end).
    after_cr: bool,
    /// The data buffer: each data line's value and an LF, undecoded.
    data: Vec<u8>,
    /// The event type buffer, undecoded.
    kind: Vec<u8>,
    /// The last event ID buffer: set by an `id` line.
    id_buffer: String,
    /// The last event ID string: the buffer at the last dispatch.
    last_id: String,
    /// The reconnection time the stream set, in milliseconds.
    retry: Option<u64>,
    /// Set once the stream failed: it is not read further.
    failed: Option<EventStreamError>,
}

impl EventStream {
    /// A parser whose events carry at most `max` bytes of data, the event being built and the
    /// unfinished line at most `max` + [`FIELD_ROOM`].
    pub fn new(max: usize) -> Self {
        Self::with_limits(max, max.saturating_add(FIELD_ROOM))
    }

    /// A parser whose dispatched events carry at most `max_data` bytes of data (decoded), and
    /// which holds at most `max_pending` bytes (at least 3) for the event being built (its data
    /// and type, undecoded) plus the unfinished line.
    pub fn with_limits(max_data: usize, max_pending: usize) -> Self {
        EventStream {
            max_data,
            max_pending: max_pending.max(BOM.len()),
            start: Start::Bom(0),
            line: Vec::new(),
            line_len: 0,
            comment: false,
            after_cr: false,
            data: Vec::new(),
            kind: Vec::new(),
            id_buffer: String::new(),
            last_id: String::new(),
            retry: None,
            failed: None,
        }
    }

    /// Starts with `id` as the last event id (a stream resumed after it): an event without
    /// an `id` field keeps it, as a browser's `EventSource` does.
    pub fn resuming(mut self, id: &str) -> Self {
        id.clone_into(&mut self.id_buffer);
        id.clone_into(&mut self.last_id);
        self
    }

    /// The last event id: the `id` in force at the last dispatch (empty when none).
    pub fn last_event_id(&self) -> &str {
        &self.last_id
    }

    /// The reconnection time the stream asked for (the last valid `retry`), in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Bytes held for the event being built and the unfinished line (never more than the
    /// pending bound).
    pub fn pending(&self) -> usize {
        self.data.len() + self.kind.len() + self.line_len
    }

    /// Reads from `input` until an event is dispatched (`Ok(Some)`, `input` left after it) or
    /// `input` is used up (`Ok(None)`). Past an error it reads nothing and fails again. At the
    /// stream's end, what was not dispatched is simply dropped with the parser.
    pub fn feed(&mut self, input: &mut &[u8]) -> Result<Option<Event>, EventStreamError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.read(input);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
            self.line = Vec::new();
            self.data = Vec::new();
            self.kind = Vec::new();
        }
        result
    }

    fn read(&mut self, input: &mut &[u8]) -> Result<Option<Event>, EventStreamError> {
        if let Start::Bom(seen) = self.start {
            let mut seen = seen;
            while let Some((&b, rest)) = input.split_first() {
                if b != BOM[seen] {
                    // Not a BOM: what looked like one is the first line's start.
                    self.start = Start::Done;
                    self.extend_line(&BOM[..seen])?;
                    break;
                }
                *input = rest;
                seen += 1;
                if seen == BOM.len() {
                    self.start = Start::Done;
                    break;
                }
            }
            if let Start::Bom(_) = self.start {
                self.start = Start::Bom(seen);
                return Ok(None);
            }
        }
        while !input.is_empty() {
            if mem::take(&mut self.after_cr) && input[0] == b'\n' {
                *input = &input[1..];
                continue;
            }
            let Some(end) = memchr::memchr2(b'\r', b'\n', input) else {
                self.extend_line(input)?;
                *input = &[];
                break;
            };
            let (head, rest) = input.split_at(end);
            self.after_cr = rest[0] == b'\r';
            *input = &rest[1..];
            let event = if self.line_len == 0 {
                self.check(head.len())?;
                self.line_ended(head)?
            } else {
                self.extend_line(head)?;
                let line = mem::take(&mut self.line);
                let comment = mem::take(&mut self.comment);
                self.line_len = 0;
                let event = if comment {
                    None
                } else {
                    self.line_ended(&line)?
                };
                // The buffer is kept for the next unfinished line.
                self.line = line;
                self.line.clear();
                event
            };
            if event.is_some() {
                return Ok(event);
            }
        }
        Ok(None)
    }

    /// Fails when the event being built plus a line of `line_len` bytes pass the bound.
    fn check(&self, line_len: usize) -> Result<(), EventStreamError> {
        let seen = self
            .data
            .len()
            .saturating_add(self.kind.len())
            .saturating_add(line_len);
        if seen > self.max_pending {
            return Err(EventStreamError::Oversized {
                seen,
                limit: self.max_pending,
            });
        }
        Ok(())
    }

    /// Adds `bytes` to the unfinished line (only counts them for a comment).
    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), EventStreamError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.check(self.line_len.saturating_add(bytes.len()))?;
        if self.line_len == 0 {
            self.comment = bytes[0] == b':';
        }
        self.line_len += bytes.len();
        if !self.comment {
            self.line.extend_from_slice(bytes);
        }
        Ok(())
    }

    /// Processes one whole line (without its line end).
    fn line_ended(&mut self, line: &[u8]) -> Result<Option<Event>, EventStreamError> {
        let (name, value) = match memchr::memchr(b':', line) {
            None if line.is_empty() => return self.dispatch(),
            Some(0) => return Ok(None), // a comment
            None => (line, &[][..]),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
        };
        match name {
            b"event" => {
                self.kind.clear();
                self.kind.extend_from_slice(value);
            }
            b"data" => {
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"id" if !value.contains(&0) => {
                self.id_buffer.clear();
                self.id_buffer.push_str(&String::from_utf8_lossy(value));
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |n, d| {
                    n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                self.retry = Some(ms);
            }
            _ => {} // an unknown field, or one whose value is ignored
        }
        Ok(None)
    }

    /// A blank line: the event built so far is dispatched, when it has data.
    fn dispatch(&mut self) -> Result<Option<Event>, EventStreamError> {
        if self.last_id != self.id_buffer {
            self.last_id.clone_from(&self.id_buffer);
        }
        if self.data.is_empty() {
            self.kind.clear();
            return Ok(None);
        }
        let mut data = mem::take(&mut self.data);
        data.pop(); // the last data line's LF
        let data = decode(data);
        if data.len() > self.max_data {
            return Err(EventStreamError::Oversized {
                seen: data.len(),
                limit: self.max_data,
            });
        }
        let event = decode(mem::take(&mut self.kind));
        Ok(Some(Event { event, data }))
    }
}

/// UTF-8 text, invalid sequences replaced by U+FFFD (no copy when it is valid).
fn decode(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a stream dispatches, each event with the last event id at its dispatch, fed
    /// in one piece, then byte by byte (which must agree); and the parser after it.
    fn parse(input: &[u8]) -> (Vec<(String, String, String)>, EventStream) {
        let whole = parse_in(input, input.len().max(1));
        let bytewise = parse_in(input, 1);
        assert_eq!(whole.0, bytewise.0, "fed whole vs byte by byte");
        assert_eq!(whole.1.last_event_id(), bytewise.1.last_event_id());
        assert_eq!(whole.1.retry(), bytewise.1.retry());
        whole
    }

    fn parse_in(input: &[u8], chunk: usize) -> (Vec<(String, String, String)>, EventStream) {
        let mut parser = EventStream::new(1 << 20);
        let mut events = Vec::new();
        for mut piece in input.chunks(chunk) {
            while let Some(e) = parser.feed(&mut piece).unwrap() {
                events.push((
                    e.kind().to_owned(),
                    e.data,
                    parser.last_event_id().to_owned(),
                ));
            }
            assert!(piece.is_empty());
        }
        (events, parser)
    }

    fn data(input: &[u8]) -> Vec<String> {
        parse(input).0.into_iter().map(|(_, d, _)| d).collect()
    }

    #[test]
    fn a_line_without_a_colon_is_a_field_with_an_empty_value() {
        // `data` alone: a data line with an empty value, so the event has empty data.
        let (events, _) = parse(b"data\n\n");
        assert_eq!(events, [("message".into(), String::new(), String::new())]);
        assert_eq!(data(b"data\ndata\ndata: x\n\n"), ["\n\nx"]);
        // `id` alone: an empty id.
        let (_, p) = parse(b"id: 7\n\nid\n\n");
        assert_eq!(p.last_event_id(), "");
        // Any other line without a colon is an unknown field.
        assert_eq!(data(b"junk\ndata: a\n\n"), ["a"]);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert_eq!(data(b"foo: bar\ndata: a\nData: b\nbaz:\n\n"), ["a"]);
    }

    #[test]
    fn a_retry_of_anything_but_digits_is_ignored() {
        for bad in [
            "retry: 1s",
            "retry: -1",
            "retry:  5",
            "retry: 5 ",
            "retry: ",
            "retry",
            "retry: ５",
        ] {
            let (_, p) = parse(format!("retry: 40\n{bad}\n\n").as_bytes());
            assert_eq!(p.retry(), Some(40), "{bad:?}");
        }
        let (_, p) = parse(b"retry:0\n");
        assert_eq!(p.retry(), Some(0));
        let (_, p) = parse(b"retry: 0012\n");
        assert_eq!(p.retry(), Some(12));
        // Past u64: the largest wait, never a panic.
        let (_, p) = parse(format!("retry: {}\n", "9".repeat(40)).as_bytes());
        assert_eq!(p.retry(), Some(u64::MAX));
    }

    #[test]
    fn repeated_fields_join_data_and_keep_the_last_event_and_id() {
        let (events, p) = parse(b"event: a\nid: 1\ndata: x\nevent: b\nid: 2\ndata: y\n\n");
        assert_eq!(events, [("b".into(), "x\ny".into(), "2".into())]);
        assert_eq!(p.last_event_id(), "2");
    }

    #[test]
    fn an_id_holding_nul_is_ignored() {
        let (events, p) = parse(b"id: 1\n\nid: a\0b\ndata: x\n\n");
        assert_eq!(events, [("message".into(), "x".into(), "1".into())]);
        assert_eq!(p.last_event_id(), "1");
    }

    #[test]
    fn a_leading_bom_is_stripped_once() {
        assert_eq!(data(b"\xEF\xBB\xBFdata: a\n\n"), ["a"]);
        // A second BOM is the first line's start: an unknown field.
        assert_eq!(
            data(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n"),
            ["b"]
        );
        // Half a BOM is text (decoded with U+FFFD), here an unknown field's name.
        assert_eq!(data(b"\xEF\xBBdata: a\n\ndata: b\n\n"), ["b"]);
        // A BOM inside the stream is kept.
        assert_eq!(data("data: \u{FEFF}x\n\n".as_bytes()), ["\u{FEFF}x"]);
        // Split across chunks.
        let mut p = EventStream::new(100);
        let mut got = Vec::new();
        for mut piece in [&b"\xEF"[..], b"\xBB", b"\xBFdata: z\n", b"\n"] {
            if let Some(e) = p.feed(&mut piece).unwrap() {
                got.push(e.data);
            }
        }
        assert_eq!(got, ["z"]);
    }

    #[test]
    fn cr_lf_and_crlf_all_end_lines() {
        assert_eq!(
            data(b"data: a\r\rdata: b\n\ndata: c\r\n\r\n"),
            ["a", "b", "c"]
        );
        assert_eq!(data(b"data: a\r\ndata: b\r\n\r\n"), ["a\nb"]);
        // CR then LF is one line end; LF then CR is two.
        assert_eq!(data(b"data: a\n\rdata: b\r\n\n"), ["a", "b"]);
    }

    #[test]
    fn a_cr_ending_one_chunk_and_an_lf_starting_the_next_are_one_line_end() {
        let mut p = EventStream::new(100);
        let mut got = Vec::new();
        for mut piece in [&b"data: a\r"[..], b"\ndata: b\r", b"\n", b"\r", b"\n"] {
            while let Some(e) = p.feed(&mut piece).unwrap() {
                got.push(e.data);
            }
        }
        // Had the LFs counted as line ends, `a` would have been dispatched alone.
        assert_eq!(got, ["a\nb"]);
    }

    #[test]
    fn one_leading_space_after_the_colon_is_removed() {
        assert_eq!(
            data(b"data:a\n\ndata: b\n\ndata:  c\n\ndata:\td\n\n"),
            ["a", "b", " c", "\td"]
        );
        let (events, _) = parse(b"event:  e\ndata\n\n");
        assert_eq!(events[0].0, " e");
    }

    #[test]
    fn a_blank_line_dispatches_and_the_last_lf_is_removed() {
        let (events, _) = parse(b"data: a\ndata:\n\n\n\ndata: b\n\n");
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].1, "a\n");
        assert_eq!(events[1].1, "b");
        // The type resets after each dispatch.
        let (events, _) = parse(b"event: x\ndata: 1\n\ndata: 2\n\n");
        assert_eq!(events[0].0, "x");
        assert_eq!(events[1].0, "message");
        // An empty `event` value means `message`.
        assert_eq!(parse(b"event:\ndata: 1\n\n").0[0].0, "message");
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_but_its_id_is_kept() {
        let (events, p) = parse(b"id: p-1\nretry: 1500\nevent: x\n\n");
        assert!(events.is_empty());
        assert_eq!(p.last_event_id(), "p-1");
        assert_eq!(p.retry(), Some(1500));
        // Nor is its type carried over to the next event.
        let (events, _) = parse(b"event: x\n\ndata: y\n\n");
        assert_eq!(events[0].0, "message");
        // The id persists across events until the server sets another one.
        let (events, _) = parse(b"id: 1\ndata: a\n\ndata: b\n\n");
        assert_eq!(events[1].2, "1");
    }

    #[test]
    fn the_end_of_the_stream_drops_the_event_it_cuts_short() {
        let (events, p) = parse(b"data: a\n\nid: 9\ndata: b\n");
        assert_eq!(events.len(), 1);
        // Its id was never dispatched; a retry line is taken when read.
        assert_eq!(p.last_event_id(), "");
        let (_, p) = parse(b"retry: 5\ndata: b");
        assert_eq!(p.retry(), Some(5));
        // An unterminated last line is not a line.
        let (_, p) = parse(b"retry: 5");
        assert_eq!(p.retry(), None);
    }

    #[test]
    fn invalid_utf8_is_decoded_with_replacement_characters() {
        assert_eq!(data(b"data: a\xFFb\xE2\x82\n\n"), ["a\u{FFFD}b\u{FFFD}"]);
        let (events, p) = parse(b"event: \xC0\nid: \xF0\x9F\ndata: x\n\n");
        assert_eq!(events[0].0, "\u{FFFD}");
        assert_eq!(p.last_event_id(), "\u{FFFD}");
        // A field name with an invalid byte is no known name.
        assert_eq!(data(b"dat\xE1: a\ndata: b\n\n"), ["b"]);
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(data(b": hi\n:\ndata: a\n: between\ndata: b\n\n"), ["a\nb"]);
    }

    #[test]
    fn a_resumed_stream_keeps_the_id_it_resumed_after() {
        let mut p = EventStream::new(100).resuming("e-4");
        let mut input = &b"data: x\n\n"[..];
        p.feed(&mut input).unwrap().unwrap();
        assert_eq!(p.last_event_id(), "e-4");
    }

    /// Feeds `input` in chunks of `chunk`: the events' data, then the error if any.
    fn bounded(
        input: &[u8],
        chunk: usize,
        max: usize,
    ) -> (Vec<String>, Option<EventStreamError>, usize) {
        let mut p = EventStream::with_limits(max, max + 16);
        let mut out = Vec::new();
        let mut most = 0;
        for mut piece in input.chunks(chunk) {
            loop {
                let got = p.feed(&mut piece);
                most = most.max(p.pending());
                match got {
                    Ok(Some(e)) => out.push(e.data),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e), most),
                }
            }
        }
        (out, None, most)
    }

    #[test]
    fn comments_and_dispatched_events_count_for_nothing_against_the_bound() {
        // Far more comment bytes than the bound, in lines of any length under it, then events.
        let mut input = Vec::new();
        for i in 0..2000 {
            input.extend_from_slice(b": keepalive ");
            input.extend(std::iter::repeat_n(b'.', i % 60));
            input.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
            if i % 7 == 0 {
                input.extend_from_slice(b"\n");
            }
            if i % 100 == 0 {
                input.extend_from_slice(b"data: 0123456789012345678901234567890123456789\n\n");
            }
        }
        for chunk in [1, 7, 4096, input.len()] {
            let (events, error, most) = bounded(&input, chunk, 64);
            assert_eq!(error, None, "chunks of {chunk}");
            assert_eq!(events.len(), 20);
            assert!(most <= 64 + 16, "{most}");
        }
    }

    #[test]
    fn an_event_over_the_bound_fails_without_being_buffered() {
        // Its data over the limit, at dispatch.
        let over = format!("data: {}\n\n", "x".repeat(65));
        let (events, error, _) = bounded(over.as_bytes(), 5, 64);
        assert!(events.is_empty());
        assert_eq!(
            error,
            Some(EventStreamError::Oversized {
                seen: 65,
                limit: 64
            })
        );
        // Exactly at the limit: fine.
        let at = format!("data: {}\n\n", "x".repeat(64));
        assert_eq!(bounded(at.as_bytes(), 5, 64).0, ["x".repeat(64)]);
        // Many data lines: the event grows past the pending bound before its end.
        let lines = "data: xxxxxxxxxx\n".repeat(1000);
        for chunk in [1, 9, lines.len()] {
            let (_, error, most) = bounded(lines.as_bytes(), chunk, 64);
            assert!(
                matches!(error, Some(EventStreamError::Oversized { seen, limit: 80 }) if seen > 80),
                "{error:?}"
            );
            assert!(most <= 80, "{most}");
        }
        // One endless line, a comment too: never buffered past the bound.
        for endless in [b'x', b':'] {
            let line = vec![endless; 100_000];
            let (_, error, most) = bounded(&line, 1000, 64);
            assert!(matches!(error, Some(EventStreamError::Oversized { .. })));
            assert!(most <= 80, "{most}");
        }
        // After a failure it fails again and reads nothing.
        let mut p = EventStream::with_limits(4, 8);
        let mut input = &b"data: 123456789\n\ndata: a\n\n"[..];
        assert!(p.feed(&mut input).is_err());
        let before = input.len();
        assert!(p.feed(&mut input).is_err());
        assert_eq!(input.len(), before);
    }

    #[test]
    fn a_data_limit_counts_decoded_text() {
        // Two invalid bytes become two U+FFFD: six bytes of text.
        let (_, error, _) = bounded(b"data: \xFF\xFF\n\n", 100, 5);
        assert!(matches!(
            error,
            Some(EventStreamError::Oversized { seen: 6, limit: 5 })
        ));
    }
}
