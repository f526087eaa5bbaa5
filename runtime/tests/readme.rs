//! README's library quick start is the crate documentation's quick start, which `cargo test
//! --doc` compiles: the two must not drift apart.

fn rust_block_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let from = text.find(marker).expect("marker present");
    let rest = &text[from..];
    let start = rest.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let end = rest[start..].find("```").expect("block closed");
    &rest[start..start + end]
}

#[test]
fn the_readme_quick_start_is_the_compiled_crate_doc_example() {
    let readme = include_str!("../../README.md");
    let lib = include_str!("../src/lib.rs");
    let from_readme = rust_block_after(readme, "## Library quick start");
    let doc_start = lib.find("//! ```no_run\n").expect("doc example") + "//! ```no_run\n".len();
    let doc_end = doc_start + lib[doc_start..].find("//! ```").expect("closed");
    let from_doc: String = lib[doc_start..doc_end]
        .lines()
        .map(|l| {
            l.strip_prefix("//! ")
                .or(l.strip_prefix("//!"))
                .unwrap_or(l)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(from_readme, from_doc);
}
