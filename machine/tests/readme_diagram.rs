//! README's state diagram is the one generated from the spec.

#[test]
fn readme_diagram_matches_the_spec() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let start = readme
        .find("<!-- diagram:begin -->")
        .expect("diagram begin marker");
    let end = readme
        .find("<!-- diagram:end -->")
        .expect("diagram end marker");
    let block = &readme[start..end];
    let body = block
        .split_once("```mermaid\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(body, _)| body.trim_end())
        .expect("a mermaid block between the markers");
    assert_eq!(
        body,
        mcp_machine::generated::MERMAID.trim_end(),
        "README's diagram is stale: paste `cargo run -p mcp-codegen -- diagram` between the markers"
    );
}
