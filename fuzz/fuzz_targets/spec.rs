//! `spec`: any bytes, read as UTF-8 (lossily), as a spec for `mcp_codegen::load`. Errors are
//! fine and must render; a valid spec must emit its diagram, table and Rust; a panic is a bug. See `mcp_fuzz::spec`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_fuzz::spec::check_text(&String::from_utf8_lossy(data), true);
});
