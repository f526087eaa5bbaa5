//! [`Prefix`]: what a faulty SSE answer sends before its real events (garbage, broken or
//! lenient framing, a keep-alive flood).

use bytes::Bytes;

/// What an SSE answer starts with before its events (and before its priming event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prefix {
    /// These chunks, one body frame each.
    Chunks(&'static [&'static [u8]]),
    /// At least this many bytes of `: keepalive` comments, each ended by an empty line.
    Keepalive(usize),
}

/// One keep-alive comment of a flood.
pub(super) const KEEPALIVE_LINE: &[u8] = b": keepalive\n\n";

/// The size of the frames a keep-alive flood is sent in (about; whole comments only).
const FLOOD_FRAME: usize = 64 << 10;

impl Prefix {
    /// The body frames, in order. A flood's frames share one buffer: building a 64 MiB flood
    /// costs one 64 KiB frame.
    pub(super) fn frames(self) -> Vec<Bytes> {
        match self {
            Prefix::Chunks(chunks) => chunks.iter().map(|c| Bytes::from_static(c)).collect(),
            Prefix::Keepalive(bytes) => {
                let per_frame = FLOOD_FRAME / KEEPALIVE_LINE.len();
                let lines = bytes.div_ceil(KEEPALIVE_LINE.len());
                let frame = Bytes::from(KEEPALIVE_LINE.repeat(per_frame.min(lines)));
                let mut frames = vec![frame; lines / per_frame];
                let rest = lines % per_frame;
                if rest > 0 {
                    frames.push(Bytes::from(KEEPALIVE_LINE.repeat(rest)));
                }
                frames
            }
        }
    }
}

/// The garbage a `garbage-sse` stream starts with: well framed.
pub(super) const GARBAGE: &[&[u8]] = &[
    b"data: this is not JSON\n\n",
    b"a line without a colon\n\n",
    b"data: {\"jsonrpc\": \"2.0\", \"method\":\n\n",
    b"data: \"notifications/message\"}\n\n",
    b"event: surprise\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n",
    b": a comment\n\n",
];

/// What a `broken-sse` stream starts with: not UTF-8, then a field line never ended by an
/// empty line before the next field's garbage.
pub(super) const BROKEN: &[&[u8]] = &[
    b"data: \xff\xfe not UTF-8\n\n",
    b"id: \xc3\x28\n",
    b"data: {\"half\": \r\r\n\n",
];

/// What a `lenient-sse` stream starts with: all of it legal by the WHATWG event-stream rules
/// (a byte order mark at the start is skipped; a line without a colon is a field with an
/// empty value; unknown fields and a `retry` that is not all digits are ignored; repeated
/// `data` fields are joined by line feeds; CR, LF and CRLF all end lines; the space after
/// the colon is optional). Two log notifications come out of it, then the real answer.
/// The byte order mark is the first chunk alone: only a stream's first bytes may carry it.
pub(super) const LENIENT: &[&[u8]] = &[
    b"\xef\xbb\xbf",
    b": a comment first\n",
    b"a line without a colon\n",
    b"unknown-field: ignored\n",
    b"retry: abc\n",
    b"retry\n",
    b"\n",
    b"data:{\"jsonrpc\":\"2.0\",\n",
    b"data: \"method\":\"notifications/message\",\n",
    b"data: \"params\":{\"level\":\"info\",\"data\":\"split over three data fields\"}}\n\n",
    b"event: message\rx-unknown\rdata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\
\"params\":{\"level\":\"info\",\"data\":\"lines ended by CR\"}}\r\r",
    b"event:message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\
\"params\":{\"level\":\"info\",\"data\":\"CRLF\"}}\r\n\r\n",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_whole_comments_of_at_least_its_size() {
        for bytes in [1, 13, 14, FLOOD_FRAME, 17 << 20, (17 << 20) + 5] {
            let frames = Prefix::Keepalive(bytes).frames();
            let total: usize = frames.iter().map(Bytes::len).sum();
            assert!(
                total >= bytes && total < bytes + KEEPALIVE_LINE.len(),
                "{bytes}: {total}"
            );
            for f in &frames {
                assert_eq!(f.len() % KEEPALIVE_LINE.len(), 0);
                assert!(f.len() <= FLOOD_FRAME);
                assert!(f.starts_with(KEEPALIVE_LINE));
            }
        }
        assert!(Prefix::Keepalive(0).frames().is_empty());
    }

    #[test]
    fn the_lenient_prefix_starts_with_the_bom_alone() {
        assert_eq!(LENIENT[0], b"\xef\xbb\xbf");
        assert!(LENIENT[1..].iter().all(|c| !c.starts_with(b"\xef")));
        let frames = Prefix::Chunks(LENIENT).frames();
        assert_eq!(frames.len(), LENIENT.len());
    }
}
