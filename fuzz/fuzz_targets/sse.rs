//! `sse`: the runtime's incremental SSE parser (`EventStream`), fed the stream in chunks the
//! fuzzer chooses and byte by byte, must give exactly what a whole-input reference of the
//! WHATWG algorithm gives: the same events, the same end (oversized or not), the same last
//! event id and `retry`. The first bytes choose the limits and the chunks. See
//! `mcp_fuzz::sse`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_fuzz::sse::check(data);
});
