//! Snapshots of what is generated from the real spec and the minimal fixture.

const SPEC: &str = include_str!("../../spec/transitions.toml");
const SPEC_PATH: &str = "spec/transitions.toml";
const MINIMAL: &str = include_str!("fixtures/minimal.toml");

fn generated(source: &str, path: &str) -> mcp_codegen::Generated {
    match mcp_codegen::generate(source, path) {
        Ok(g) => g,
        Err(d) => panic!("{path} has errors:\n{d}"),
    }
}

#[test]
fn real_spec_rust() {
    insta::assert_snapshot!("transitions_rust", generated(SPEC, SPEC_PATH).rust);
}

#[test]
fn real_spec_mermaid() {
    insta::assert_snapshot!("transitions_mermaid", generated(SPEC, SPEC_PATH).mermaid);
}

#[test]
fn real_spec_markdown() {
    insta::assert_snapshot!("transitions_markdown", generated(SPEC, SPEC_PATH).markdown);
}

#[test]
fn minimal_rust() {
    insta::assert_snapshot!(
        "minimal_rust",
        generated(MINIMAL, "tests/fixtures/minimal.toml").rust
    );
}

#[test]
fn generated_rust_parses_and_has_no_wildcard_arm() {
    for (source, path) in [(SPEC, SPEC_PATH), (MINIMAL, "tests/fixtures/minimal.toml")] {
        let rust = generated(source, path).rust;
        if let Err(e) = syn::parse_file(&rust) {
            panic!("{path}: generated Rust does not parse: {e}");
        }
        assert!(!rust.contains("_ =>"), "{path}: a wildcard arm");
        assert!(!rust.contains("#!["), "{path}: an inner attribute");
        assert!(!rust.contains("//!"), "{path}: an inner doc comment");
        assert!(rust.starts_with("// Generated from "), "{path}");
    }
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(generated(SPEC, SPEC_PATH), generated(SPEC, SPEC_PATH));
}

#[test]
fn generated_mermaid_is_the_mermaid_constant() {
    let g = generated(SPEC, SPEC_PATH);
    assert!(
        g.rust
            .contains(&format!("pub const MERMAID: &str = r#\"{}\"#;", g.mermaid))
    );
}

#[test]
fn real_spec_shape() {
    let m = mcp_codegen::load(SPEC, SPEC_PATH).unwrap();
    assert_eq!(m.states.len(), 6);
    assert_eq!(m.events.len(), 22);
    assert_eq!(m.cells.len(), 6 * 22);
    // Every cell: rows in file order, all guarded but the last.
    for cell in &m.cells {
        let (last, rest) = cell.rows.split_last().unwrap();
        assert!(m.rows[*last].guard.is_none());
        assert!(rest.iter().all(|&r| m.rows[r].guard.is_some()));
        assert!(cell.rows.windows(2).all(|w| w[0] < w[1]));
    }
}
