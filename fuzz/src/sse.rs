//! The runtime's incremental SSE parser ([`EventStream`]) against a reference written
//! separately from the standard's text (HTML Living Standard, "Interpreting an event stream"):
//! the whole input decoded at once, split into lines, each line interpreted in turn.
//!
//! Checks: fed the input in chunks the fuzzer chooses, and fed it byte by byte, the parser
//! dispatches exactly the reference's events (type, data, last event id at dispatch), ends the
//! same way (the end, or an oversized event at the same point), and leaves the same last event
//! id and `retry`; it never holds more than its pending bound, and an oversized error names
//! more bytes than the bound it passed.
//!
//! The reference states the parser's bound the same way, in bytes of the raw stream: before a
//! line (or the unterminated tail) is interpreted, the raw bytes of the event's data and type
//! so far plus the line's may not pass `max_pending`; a dispatched event's decoded data may
//! not pass `max_data`.

use mcp_runtime::transport::event_stream::{EventStream, EventStreamError};

/// One dispatched event: its type (`message` when none), its data, the last event id at its
/// dispatch.
pub type Dispatched = (String, String, String);

/// How a run over the whole input ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The input was read to its end.
    Read,
    /// An event, or one line of it, passed a bound.
    Oversized,
}

/// What a stream gave: its events, how it ended, and the last event id and `retry` after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The events dispatched, in order.
    pub events: Vec<Dispatched>,
    /// How it ended.
    pub end: End,
    /// The last event id at the end.
    pub last_id: String,
    /// The reconnection time at the end.
    pub retry: Option<u64>,
}

/// The complete lines of `bytes` (each without its end: CRLF, CR or LF) and the unterminated
/// rest.
fn split_lines(bytes: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' => {
                lines.push(&bytes[start..i]);
                i += if bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                start = i;
            }
            b'\n' => {
                lines.push(&bytes[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    (lines, &bytes[start..])
}

/// A line's field name and value: the whole line and nothing without a colon; else around
/// the first colon, one leading space off the value. `None` for a comment.
fn field(line: &[u8]) -> Option<(&[u8], &[u8])> {
    match line.iter().position(|&b| b == b':') {
        Some(0) => None,
        None => Some((line, &[])),
        Some(i) => {
            let value = &line[i + 1..];
            Some((&line[..i], value.strip_prefix(b" ").unwrap_or(value)))
        }
    }
}

/// The reference: the standard's algorithm over the whole of `input`.
pub fn reference(input: &[u8], max_data: usize, max_pending: usize) -> Outcome {
    let max_pending = max_pending.max(3);
    // "UTF-8 decode" strips one leading BOM, then replaces what is not UTF-8.
    let raw = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let text = String::from_utf8_lossy(raw);
    let (raw_lines, raw_tail) = split_lines(raw);
    let (text_lines, _) = split_lines(text.as_bytes());
    assert_eq!(
        raw_lines.len(),
        text_lines.len(),
        "decoding moved a line end"
    );
    let mut out = Outcome {
        events: Vec::new(),
        end: End::Read,
        last_id: String::new(),
        retry: None,
    };
    let mut data = String::new();
    let mut kind = String::new();
    let mut id_buffer = String::new();
    // Raw bytes of the data and type buffers, for the bound.
    let (mut data_raw, mut kind_raw) = (0usize, 0usize);
    for (raw_line, line) in raw_lines.iter().zip(&text_lines) {
        // Each piece is UTF-8: it was cut from valid text at ASCII line ends.
        let line = std::str::from_utf8(line).expect("lines of text are text");
        if data_raw + kind_raw + raw_line.len() > max_pending {
            out.end = End::Oversized;
            return out;
        }
        if line.is_empty() {
            // Dispatch.
            out.last_id = id_buffer.clone();
            if data.is_empty() {
                kind.clear();
                kind_raw = 0;
                continue;
            }
            if data.ends_with('\n') {
                data.pop();
            }
            if data.len() > max_data {
                out.end = End::Oversized;
                return out;
            }
            let event = if kind.is_empty() {
                "message".to_owned()
            } else {
                std::mem::take(&mut kind)
            };
            out.events
                .push((event, std::mem::take(&mut data), out.last_id.clone()));
            kind.clear();
            (data_raw, kind_raw) = (0, 0);
            continue;
        }
        let (Some((name, value)), Some((_, raw_value))) = (field(line.as_bytes()), field(raw_line))
        else {
            continue; // a comment
        };
        let value = std::str::from_utf8(value).expect("cut at ASCII");
        match name {
            b"event" => {
                kind = value.to_owned();
                kind_raw = raw_value.len();
            }
            b"data" => {
                data.push_str(value);
                data.push('\n');
                data_raw += raw_value.len() + 1;
            }
            b"id" if !value.contains('\0') => id_buffer = value.to_owned(),
            b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // Base ten, saturating past u64.
                let mut n: u64 = 0;
                for d in value.bytes() {
                    n = n.saturating_mul(10).saturating_add(u64::from(d - b'0'));
                }
                out.retry = Some(n);
            }
            _ => {}
        }
    }
    // The stream's end: the unterminated rest is no line and the event is dropped, but the
    // parser has held the rest while waiting for its end.
    if data_raw + kind_raw + raw_tail.len() > max_pending {
        out.end = End::Oversized;
    }
    out
}

/// The runtime's parser over `input` fed in chunks of the given sizes (taken in turn; a 0 is
/// an empty feed, then one byte; none: the whole input at once), checking its bound after
/// every feed.
pub fn incremental(input: &[u8], sizes: &[u8], max_data: usize, max_pending: usize) -> Outcome {
    let mut parser = EventStream::with_limits(max_data, max_pending);
    let bound = max_pending.max(3);
    let mut events = Vec::new();
    let mut rest = input;
    let mut turn = 0;
    let end = 'read: loop {
        if rest.is_empty() {
            break End::Read;
        }
        // No sizes: the whole input in one feed.
        let size = sizes.get(turn % sizes.len().max(1)).copied();
        turn += 1;
        let n = size.map_or(rest.len(), |s| usize::from(s).clamp(1, rest.len()));
        if size == Some(0) {
            let mut empty: &[u8] = &[];
            assert!(matches!(parser.feed(&mut empty), Ok(None) | Err(_)));
        }
        let (mut chunk, after) = rest.split_at(n);
        rest = after;
        loop {
            let got = parser.feed(&mut chunk);
            assert!(
                parser.pending() <= bound,
                "{} bytes held, bound {bound}",
                parser.pending()
            );
            match got {
                Ok(Some(e)) => {
                    events.push((
                        e.kind().to_owned(),
                        e.data,
                        parser.last_event_id().to_owned(),
                    ));
                }
                Ok(None) => {
                    assert!(chunk.is_empty(), "a feed stopped short of an event");
                    break;
                }
                Err(EventStreamError::Oversized { seen, limit }) => {
                    assert!(seen > limit, "oversized at {seen} bytes, limit {limit}");
                    assert!(limit == max_data || limit == bound, "limit {limit}");
                    break 'read End::Oversized;
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    };
    Outcome {
        events,
        end,
        last_id: parser.last_event_id().to_owned(),
        retry: parser.retry(),
    }
}

/// The fuzzer's bytes: the data limit (byte 0: 4 bytes a step, 255: none), the room over it
/// for the pending bound (byte 1, 4 bytes a step), how many chunk sizes follow (byte 2, up
/// to 15), the chunk sizes, then the stream.
pub fn check(input: &[u8]) {
    let [limit, room, count, rest @ ..] = input else {
        return;
    };
    let count = usize::from(count & 0x0f).min(rest.len());
    let (sizes, stream) = rest.split_at(count);
    let max_data = if *limit == u8::MAX {
        usize::MAX / 4
    } else {
        usize::from(*limit) * 4
    };
    let max_pending = max_data.saturating_add(usize::from(*room) * 4);
    let expected = reference(stream, max_data, max_pending);
    let chunked = incremental(stream, sizes, max_data, max_pending);
    assert_eq!(chunked, expected, "in chunks of {sizes:?}");
    let bytewise = incremental(stream, &[1], max_data, max_pending);
    assert_eq!(bytewise, expected, "byte by byte");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_reads_the_standards_examples() {
        // The standard's examples of one stream each.
        let out = reference(
            b"data: YHOO\ndata: +2\ndata: 10\n\n",
            usize::MAX / 4,
            usize::MAX / 4,
        );
        assert_eq!(
            out.events,
            [("message".into(), "YHOO\n+2\n10".into(), "".into())]
        );
        let out = reference(
            b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n",
            1000,
            1000,
        );
        let data: Vec<_> = out.events.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(data, ["first event", "second event"]);
        assert_eq!(out.events[0].2, "1");
        assert_eq!(out.events[1].2, "");
        let out = reference(b"data\n\ndata\ndata\n\ndata:", 1000, 1000);
        let data: Vec<_> = out.events.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(data, ["", "\n"]);
        let out = reference(b"data:test\n\ndata: test\n\n", 1000, 1000);
        assert_eq!(out.events[0].1, out.events[1].1);
    }

    #[test]
    fn seeds_hold() {
        check(&[255, 0, 2, 1, 3, b'd', b'a', b't', b'a', b'\r', b'\n', b'\r']);
        check(&[
            1, 0, 0, b'd', b'a', b't', b'a', b':', b'1', b'2', b'3', b'4', b'5', b'\n', b'\n',
        ]);
        check(b"\x00\x00\x00\xEF\xBB");
    }
}
