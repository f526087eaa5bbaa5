//! The spec excerpts of `docs/changing-the-table.md` are the spec's own text: every ```toml
//! block of that page must appear, line for line, in the `.toml` files under `spec/`.

use std::path::{Path, PathBuf};

const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/changing-the-table.md");
const SPEC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec");

/// The bodies of the page's ```toml blocks.
fn toml_blocks(page: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in page.lines() {
        match current.as_mut() {
            None if line.trim_start() == "```toml" => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_start().starts_with("```") => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    assert!(current.is_none(), "a ```toml block is not closed");
    blocks
}

/// Every `.toml` file under `dir`, in a stable order.
fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(toml_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "toml") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The lines of `text`, each without its leading and trailing whitespace.
fn trimmed(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).collect()
}

/// Whether `block`'s lines (blank lines at its ends left out) appear one after the other in
/// one of `specs`.
fn appears_in(block: &str, specs: &[String]) -> bool {
    let lines = trimmed(block);
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return false;
    };
    let wanted = &lines[first..=last];
    specs.iter().any(|spec| {
        trimmed(spec)
            .windows(wanted.len())
            .any(|window| window == wanted)
    })
}

fn specs() -> Vec<String> {
    let files = toml_files(Path::new(SPEC));
    assert!(!files.is_empty(), "no .toml file under {SPEC}");
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect()
}

#[test]
fn every_toml_example_of_changing_the_table_is_in_the_spec() {
    let page = std::fs::read_to_string(PAGE).unwrap_or_else(|e| panic!("{PAGE}: {e}"));
    let blocks = toml_blocks(&page);
    assert!(
        !blocks.is_empty(),
        "docs/changing-the-table.md has no ```toml block"
    );
    let specs = specs();
    for block in &blocks {
        assert!(
            appears_in(block, &specs),
            "docs/changing-the-table.md quotes a spec excerpt that is not in spec/*.toml \
             (copy the current text from the spec):\n{block}"
        );
    }
}

#[test]
fn an_excerpt_that_is_not_in_the_spec_is_refused() {
    let specs = specs();
    let page = std::fs::read_to_string(PAGE).unwrap_or_else(|e| panic!("{PAGE}: {e}"));
    let block = toml_blocks(&page)
        .into_iter()
        .next()
        .expect("a ```toml block");
    assert!(appears_in(&block, &specs));
    let edited = block.replacen("\"", "\"not_in_the_spec_", 1);
    assert!(
        !appears_in(&edited, &specs),
        "an edited excerpt was found:\n{edited}"
    );
    assert!(
        !appears_in("\n\n", &specs),
        "an empty excerpt counts as found"
    );
}
