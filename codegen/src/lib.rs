//! `mcp-codegen`: turns the connection table (`spec/`) into Rust, a Mermaid
//! diagram and a Markdown table.
//!
//! The pipeline:
//!
//! 1. parse ([`spec`]): the TOML's shape, every value with its span;
//! 2. resolve ([`validate`], stage 1): names become indexes; unknown names, bad names and bad
//!    payload/witness types ([`rust_type`]) are reported;
//! 3. check ([`validate`], stage 2): the table's rules: cells covered with a fallback row,
//!    terminal states, reachability, unused declarations, and the typing and ownership of
//!    event payloads and guard witnesses;
//! 4. lower ([`validate`], stage 3): the [`ir::Machine`];
//! 5. emit: [`emit_rust::emit`] (the module `include!`d by the machine: enums, rows, the typed
//!    `Event`, the `Handlers` trait, the exhaustive `dispatch`), [`emit_rust::emit_interpreter`]
//!    (the table interpreter the model checker runs mutated tables with), [`emit_mermaid`],
//!    [`emit_markdown`]; [`handlers`] prints an `impl Handlers` skeleton or compares one.
//!
//! Every error of a spec is collected and rendered like rustc ([`Diagnostics`]); nothing is
//! generated from a spec with errors.
//!
//! A spec is one file, or a directory (`spec/`) holding a manifest (`machine.toml`: the
//! machine's name, its initial actions, its concerns in order, the derived credit rule and the
//! declared order of cells whose rows span concerns) and one file per concern, each with the
//! declarations it introduces beside its rows. The files are read as one document
//! ([`Sources`]); diagnostics and the generated row table name each row's own file and line,
//! and each concern gets its own handler trait.
//!
//! What this crate is not: it writes no file and reads none except in [`Sources::read`]
//! ([`generate`] takes the text; the binary and build scripts do I/O), it runs no machine, and
//! it does not compile the Rust it emits (the machine crate does, with `include!`).

#![warn(missing_docs)]

pub mod diagnostic;
pub mod emit_markdown;
pub mod emit_mermaid;
pub mod emit_rust;
pub mod handlers;
pub mod ir;
mod method;
pub mod rust_type;
pub mod source;
pub mod spec;
pub mod validate;

pub use diagnostic::{DeclKind, Diagnostic, Diagnostics, Label, SpecError};
pub use ir::Machine;
pub use source::{Sources, manifest_concerns};

/// Everything generated from one valid spec.
///
/// Plain text: writing it anywhere is the caller's job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The Rust module body, to be `include!`d inside a module (no inner attributes).
    pub rust: String,
    /// The table interpreter (for the model checker), to be `include!`d in the same module.
    pub interpreter: String,
    /// The Mermaid `stateDiagram-v2` (also the generated `MERMAID` constant).
    pub mermaid: String,
    /// The Markdown table of the rows.
    pub markdown: String,
    /// The per-state view: for each state and event, the rows in the order they are tried
    /// (`docs/table.md`).
    pub cells: String,
}

/// Parses and validates a one-file spec: the lowered machine, or every error found.
///
/// `path` is only used in diagnostics. Never panics, whatever the text.
pub fn load(source: &str, path: &str) -> Result<Machine, Diagnostics> {
    load_sources(&Sources::one(path, source))
}

/// Parses and validates a spec of one or several files (see [`Sources`]).
///
/// Never panics, whatever the texts.
pub fn load_sources(sources: &Sources) -> Result<Machine, Diagnostics> {
    let fail = |e| Diagnostics::of(sources.clone(), e);
    let spec = spec::parse(sources.text()).map_err(fail)?;
    validate::validate(&spec, sources).map_err(fail)
}

/// Generates the Rust, the Mermaid diagram and the Markdown tables of the one-file spec `source`,
/// read from `path` (used in diagnostics and in the generated header lines).
///
/// Returns every error of the spec instead when there is any. Never panics, whatever the text.
pub fn generate(source: &str, path: &str) -> Result<Generated, Diagnostics> {
    generate_sources(&Sources::one(path, source), path)
}

/// Generates everything from a spec of one or several files; `label` names the spec in the
/// generated header lines (for example `spec/`).
///
/// Returns every error of the spec instead when there is any. Never panics, whatever the texts.
pub fn generate_sources(sources: &Sources, label: &str) -> Result<Generated, Diagnostics> {
    let machine = load_sources(sources)?;
    let mermaid = emit_mermaid::emit(&machine, label);
    let markdown = emit_markdown::emit(&machine, label);
    let cells = emit_markdown::emit_cells(&machine, label);
    let internal = |message| {
        let error = SpecError::Internal { message };
        let d = Diagnostic::new(error, 0..0, "while generating from this spec");
        Diagnostics::of(sources.clone(), vec![d])
    };
    let rust = emit_rust::emit(&machine, label, &mermaid).map_err(internal)?;
    let interpreter = emit_rust::emit_interpreter(&machine, label).map_err(internal)?;
    Ok(Generated {
        rust,
        interpreter,
        mermaid,
        markdown,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real spec's files, concatenated (read as one file here: the cuts below are about
    /// never panicking, not about being valid).
    const SPEC: &str = concat!(
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

    /// How many variants of each kind the test below tries: spread evenly over the whole spec
    /// (every one a full run of the generator, in a debug build: the spec grew past 3,000
    /// lines and trying them all took minutes). The fuzz targets `spec` and `spec_splice`
    /// try arbitrary ones.
    const VARIANTS: usize = 100;

    /// Every `len / VARIANTS`-th of `items` (all of them when there are fewer).
    fn spread<T: Copy>(items: &[T]) -> impl Iterator<Item = T> + '_ {
        items
            .iter()
            .copied()
            .step_by(items.len().div_ceil(VARIANTS).max(1))
    }

    /// Truncations and single-line deletions of the real spec never panic; every truncation that
    /// fails renders its diagnostics.
    #[test]
    fn broken_variants_of_the_real_spec_never_panic() {
        let at_bytes: Vec<usize> = (0..SPEC.len()).collect();
        let at_lines: Vec<usize> = SPEC.match_indices('\n').map(|(i, _)| i).collect();
        let in_strings: Vec<usize> = SPEC.match_indices('"').map(|(i, _)| i + 1).collect();
        let mut cuts: Vec<usize> = spread(&at_bytes).collect();
        cuts.extend(spread(&at_lines));
        cuts.extend(spread(&in_strings));
        cuts.push(SPEC.len());
        for cut in cuts {
            if !SPEC.is_char_boundary(cut) {
                continue;
            }
            if let Err(d) = generate(&SPEC[..cut], "cut.toml") {
                assert!(!d.items().is_empty());
                let _ = d.to_string();
            }
        }
        let lines: Vec<&str> = SPEC.lines().collect();
        // Deleting a blank or comment line changes nothing.
        let meaningful: Vec<usize> = (0..lines.len())
            .filter(|&i| !lines[i].trim().is_empty() && !lines[i].starts_with('#'))
            .collect();
        for skip in spread(&meaningful) {
            let text: String = lines
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != skip)
                .map(|(_, l)| format!("{l}\n"))
                .collect();
            if let Err(d) = generate(&text, "cut.toml") {
                let _ = d.to_string();
            }
        }
    }

    #[test]
    fn odd_inputs_never_panic() {
        for text in [
            "",
            "\u{feff}",
            "[",
            "x = 1",
            "[machine]\nname = \"m\"\n",
            "[machine]\nname = \"m\"\n[states.a]\ndoc = \"\"\ninitial = true\n",
            "[machine]\nname = \"m\"\n[states.a]\ndoc = \"\"\ninitial = true\n[events.e]\ndoc = \"\"\nsource = \"caller\"\n[[row]]\nfrom = []\non = []\n",
            "[machine]\nname = \"m\"\n[[row]]\nfrom = \"*\"\non = \"*\"\ndo = []\nignore = false\n",
            "[machine]\nname = \"m\"\n[states.\"é\"]\ndoc = \"\"\n",
        ] {
            if let Err(d) = generate(text, "odd.toml") {
                let _ = d.to_string();
            }
        }
    }
}
