//! `spec_splice`: the real `spec/transitions.toml` with the input's edits spliced in (deletions,
//! insertions, copies of its own text elsewhere), so that most inputs are valid TOML and reach the
//! validator's rules. Same checks as `spec`, except that the Rust of a valid spec is not emitted
//! (ten times the cost of the rest: the `spec` target emits it for small specs). See `mcp_fuzz::spec::splice`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_fuzz::spec::check_text(&mcp_fuzz::spec::splice(data), false);
});
