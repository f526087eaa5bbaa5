//! README's library quick start is the crate documentation's quick start, which `cargo test
//! --doc` compiles: the two must not drift apart.

/// The body of the first ```rust block after `marker` in a Markdown text.
fn rust_block_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let from = text.find(marker).expect("marker present");
    let rest = &text[from..];
    let start = rest.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let end = rest[start..].find("```").expect("block closed");
    &rest[start..start + end]
}

/// The body of the first doc example after `marker` in the crate docs, without its `//! `
/// prefixes. The example must be one rustdoc compiles: its fence is bare or `no_run`, never
/// `ignore` or `text`.
fn doc_example_after(lib: &str, marker: &str) -> String {
    let from = lib.find(marker).expect("doc marker present");
    let rest = &lib[from..];
    let fence = rest.find("//! ```").expect("a doc example");
    let info_end = fence + rest[fence..].find('\n').expect("fence line ends");
    let info = rest[fence + "//! ```".len()..info_end].trim();
    assert!(
        matches!(info, "" | "rust" | "no_run" | "rust,no_run"),
        "the crate doc's quick start must be compiled by `cargo test --doc`, not ```{info}"
    );
    let body_start = info_end + 1;
    let body_end = body_start + rest[body_start..].find("//! ```").expect("closed");
    rest[body_start..body_end]
        .lines()
        .map(|l| {
            l.strip_prefix("//! ")
                .or(l.strip_prefix("//!"))
                .unwrap_or(l)
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn the_readme_quick_start_is_the_compiled_crate_doc_example() {
    let readme = include_str!("../../README.md");
    let lib = include_str!("../src/lib.rs");
    let from_readme = rust_block_after(readme, "## Library quick start");
    let from_doc = doc_example_after(lib, "//! # Quick start");
    assert_eq!(from_readme, from_doc);
}

#[test]
fn the_readme_group_example_is_the_compiled_crate_doc_example() {
    let readme = include_str!("../../README.md");
    let lib = include_str!("../src/lib.rs");
    let from_readme = rust_block_after(readme, "## Many servers (library)");
    let from_doc = doc_example_after(lib, "//! # Many servers");
    assert_eq!(from_readme, from_doc);
}
