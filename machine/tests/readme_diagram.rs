//! The state diagram of `docs/lifecycle.md` is the one generated from the spec.

#[test]
fn the_lifecycle_diagram_matches_the_spec() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/lifecycle.md");
    let page = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = page
        .find("<!-- diagram:begin -->")
        .expect("diagram begin marker");
    let end = page
        .find("<!-- diagram:end -->")
        .expect("diagram end marker");
    let block = &page[start..end];
    let body = block
        .split_once("```mermaid\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(body, _)| body.trim_end())
        .expect("a mermaid block between the markers");
    assert_eq!(
        body,
        mcp_machine::generated::MERMAID.trim_end(),
        "docs/lifecycle.md's diagram is stale: paste `cargo run -p mcp-codegen -- diagram` between the markers"
    );
}
