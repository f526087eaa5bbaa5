//! `auth`: what a server says about authorization. The input's first line as an endpoint URL,
//! its other lines as `WWW-Authenticate` values, the rest as metadata documents: never a panic,
//! and the parse's properties hold. See `mcp_fuzz::auth`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_fuzz::auth::check(data);
});
