//! `headers`: the modern era's HTTP headers. The input as text through the value encoding
//! (always a header value, always decoding back), and as JSON through the tool validation,
//! the standard headers and the `Mcp-Param-*` headers (never a panic). See `mcp_fuzz::headers`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_fuzz::headers::check(data);
});
