//! `spec`: any bytes, read as UTF-8 (lossily), as a spec for `mcp_codegen::load`. Errors are
//! fine and must render (every one); a valid spec must emit its diagram, table and Rust; a panic
//! is a bug. See `mcp_fuzz::spec`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::spec::{Depth, check_text};

fuzz_target!(|data: &[u8]| {
    check_text(&String::from_utf8_lossy(data), Depth::Full);
});
