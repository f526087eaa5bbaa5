//! The spec parser and validator of `mcp-codegen` ([`mcp_codegen::load`]), and the emitters of a
//! spec it accepts. A spec with errors is fine; a panic is a bug (both are documented to never
//! panic, whatever the text).
//!
//! Two ways in: any text ([`check_text`]), and the real spec (`spec/*.toml`) with the fuzzer's
//! edits spliced in ([`splice`]), which gets past the TOML syntax to the validator's rules.

use std::hint::black_box;

use mcp_codegen::Diagnostics;

/// The real spec's files, concatenated: the base of the splices (read as one file, so the
/// splices reach the validator's rules on a full-size text).
pub const SPEC: &str = concat!(
    include_str!("../../spec/machine.toml"),
    include_str!("../../spec/lifecycle.toml"),
    include_str!("../../spec/handshake.toml"),
    include_str!("../../spec/calls.toml"),
    include_str!("../../spec/server_requests.toml"),
    include_str!("../../spec/listen.toml"),
    include_str!("../../spec/input.toml"),
    include_str!("../../spec/auth.toml"),
    include_str!("../../spec/tasks.toml"),
);

/// How much of the work on an accepted or rejected spec a target does per input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// Render every diagnostic; emit the Rust of a valid spec. For small texts.
    Full,
    /// Render the first diagnostic of each kind; skip the Rust of a valid spec. For texts the
    /// size of the real spec, where rendering every one of dozens of diagnostics, or emitting
    /// the Rust (about 100 ms), costs ten times the rest.
    Bounded,
}

/// Loads `text` as a spec; renders its errors, or emits its diagram and table (and its Rust).
pub fn check_text(text: &str, depth: Depth) {
    match mcp_codegen::load(text, "fuzz.toml") {
        Err(diagnostics) => {
            assert!(
                !diagnostics.items().is_empty(),
                "an error without a diagnostic"
            );
            if depth == Depth::Full {
                black_box(diagnostics.to_string());
                return;
            }
            let mut kinds = Vec::new();
            let mut firsts = diagnostics.items().to_vec();
            firsts.retain(|d| {
                let first = !kinds.contains(&d.error.code());
                if first {
                    kinds.push(d.error.code());
                }
                first
            });
            black_box(Diagnostics::new("fuzz.toml", text, firsts).to_string());
        }
        // What `generate` does with a valid spec; an emitter's error would be a validator's bug.
        Ok(machine) => {
            let mermaid = mcp_codegen::emit_mermaid::emit(&machine, "fuzz.toml");
            black_box(mcp_codegen::emit_markdown::emit(&machine, "fuzz.toml"));
            if depth == Depth::Bounded {
                return;
            }
            let rust = mcp_codegen::emit_rust::emit(&machine, "fuzz.toml", &mermaid);
            black_box(rust.expect("a valid spec emits its Rust"));
            let interpreter = mcp_codegen::emit_rust::emit_interpreter(&machine, "fuzz.toml");
            black_box(interpreter.expect("a valid spec emits its interpreter"));
        }
    }
}

/// The real spec edited by `ops`, a sequence of edits of the form
/// `[at_hi, at_lo, kind, len, bytes...]`:
///
/// - `at` (16 bits) scaled to a byte offset of the text;
/// - `kind` below 128: delete `kind % 32` bytes at `at`, then insert the next `len % 64` bytes
///   of `ops` there;
/// - `kind` from 128: copy `len` bytes of the original spec, from the offset that the next two
///   bytes scale to, to `at` (a duplicated row, a name moved elsewhere).
pub fn splice(mut ops: &[u8]) -> String {
    let original = SPEC.as_bytes();
    let mut text = original.to_vec();
    let scale =
        |hi: u8, lo: u8, len: usize| (usize::from(u16::from_be_bytes([hi, lo])) * len) >> 16;
    while let [hi, lo, kind, len, rest @ ..] = ops {
        let at = scale(*hi, *lo, text.len() + 1);
        if *kind < 128 {
            let end = (at + usize::from(kind % 32)).min(text.len());
            let take = usize::from(len % 64).min(rest.len());
            text.splice(at..end, rest[..take].iter().copied());
            ops = &rest[take..];
        } else {
            let [src_hi, src_lo, rest @ ..] = rest else {
                break;
            };
            let from = scale(*src_hi, *src_lo, original.len());
            let to = (from + usize::from(*len)).min(original.len());
            text.splice(at..at, original[from..to].iter().copied());
            ops = rest;
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}
