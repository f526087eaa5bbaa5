//! `framing`: the runtime's newline framing (`FrameReader`, with a frame limit) over chunked,
//! sometimes-cancelled reads must give exactly what a plain model of the framing gives. The first
//! two bytes choose the limit and the chunking. See `mcp_fuzz::lines`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_fuzz::lines::check(data);
});
