//! `spec_splice`: the real `spec/*.toml` with the input's edits spliced in (deletions,
//! insertions, copies of its own text elsewhere), so that most inputs are valid TOML and reach the
//! validator's rules. The checks of `spec`, at `Depth::Bounded`: one diagnostic of each kind is
//! rendered, and a valid spec's Rust is not emitted (the `spec` target does both, on small
//! specs). See `mcp_fuzz::spec::splice`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::spec::{Depth, check_text, splice};

fuzz_target!(|data: &[u8]| {
    check_text(&splice(data), Depth::Bounded);
});
