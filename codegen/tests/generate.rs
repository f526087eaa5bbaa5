//! Snapshots of what is generated from the real spec and the fixtures, and properties of the
//! generated text.

const SPEC: &str = include_str!("../../spec/transitions.toml");
const SPEC_PATH: &str = "spec/transitions.toml";
const MINIMAL: &str = include_str!("fixtures/minimal.toml");
const MINIMAL_PATH: &str = "tests/fixtures/minimal.toml";
const TYPED: &str = include_str!("fixtures/typed.toml");
const TYPED_PATH: &str = "tests/fixtures/typed.toml";

/// Every spec the generator is run on here.
const ALL: [(&str, &str); 3] = [
    (SPEC, SPEC_PATH),
    (MINIMAL, MINIMAL_PATH),
    (TYPED, TYPED_PATH),
];

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
fn real_spec_interpreter() {
    insta::assert_snapshot!(
        "transitions_interpreter",
        generated(SPEC, SPEC_PATH).interpreter
    );
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
    insta::assert_snapshot!("minimal_rust", generated(MINIMAL, MINIMAL_PATH).rust);
}

#[test]
fn typed_rust() {
    insta::assert_snapshot!("typed_rust", generated(TYPED, TYPED_PATH).rust);
}

#[test]
fn typed_interpreter() {
    insta::assert_snapshot!(
        "typed_interpreter",
        generated(TYPED, TYPED_PATH).interpreter
    );
}

#[test]
fn generated_rust_parses_and_has_no_wildcard_arm() {
    for (source, path) in ALL {
        let g = generated(source, path);
        for (what, rust) in [("rust", &g.rust), ("interpreter", &g.interpreter)] {
            if let Err(e) = syn::parse_file(rust) {
                panic!("{path} ({what}): generated Rust does not parse: {e}");
            }
            assert!(!rust.contains("_ =>"), "{path} ({what}): a wildcard arm");
            assert!(!rust.contains("#!["), "{path} ({what}): an inner attribute");
            assert!(
                !rust.contains("//!"),
                "{path} ({what}): an inner doc comment"
            );
            assert!(
                !rust.contains("@@"),
                "{path} ({what}): a comment marker left"
            );
            assert!(rust.starts_with("// Generated from "), "{path} ({what})");
        }
    }
}

/// The lines of the generated `dispatch` function.
fn dispatch_lines(rust: &str) -> Vec<&str> {
    rust.lines()
        .skip_while(|l| !l.starts_with("pub fn dispatch"))
        .take_while(|l| *l != "}")
        .collect()
}

/// Every arm of `dispatch`, and every guarded branch in it, comes after a comment naming the
/// spec line of its row, and that line is the row's `[[row]]` header.
#[test]
fn dispatch_rows_are_commented_with_their_spec_lines() {
    for (source, path) in ALL {
        let rust = generated(source, path).rust;
        let lines = dispatch_lines(&rust);
        assert!(lines.len() > 3, "{path}: no dispatch");
        let spec_lines: Vec<&str> = source.lines().collect();
        let prefix = format!("// {path}:");
        let mut arms = 0;
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if !(t.starts_with("(State::") || t.starts_with("if ")) {
                continue;
            }
            arms += usize::from(t.starts_with("(State::"));
            let comment = lines[i - 1].trim_start();
            let Some(rest) = comment.strip_prefix(&prefix) else {
                panic!("{path}: no row comment before `{t}`");
            };
            let line_no: usize = rest.split(' ').next().unwrap().parse().unwrap();
            assert_eq!(spec_lines[line_no - 1], "[[row]]", "{path}: `{comment}`");
        }
        let m = mcp_codegen::load(source, path).unwrap();
        assert_eq!(arms, m.cells.len(), "{path}: one arm per cell");
    }
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(generated(SPEC, SPEC_PATH), generated(SPEC, SPEC_PATH));
    assert_eq!(generated(TYPED, TYPED_PATH), generated(TYPED, TYPED_PATH));
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
    assert_eq!(m.states.len(), 7);
    assert_eq!(m.events.len(), 28);
    assert_eq!(m.cells.len(), 7 * 28);
    // Every cell: rows in file order, all guarded but the last.
    for cell in &m.cells {
        let (last, rest) = cell.rows.split_last().unwrap();
        assert!(m.rows[*last].guard.is_none());
        assert!(rest.iter().all(|&r| m.rows[r].guard.is_some()));
        assert!(cell.rows.windows(2).all(|w| w[0] < w[1]));
    }
}

/// What the typed fixture lowers to: payloads per event, takes/yields per guard, uses and types
/// per action.
#[test]
fn typed_fixture_lowers_its_types() {
    use mcp_codegen::ir::Use;
    let m = mcp_codegen::load(TYPED, TYPED_PATH).unwrap();
    let event = |n: &str| m.events.iter().find(|e| e.decl.name == n).unwrap();
    assert_eq!(event("frame").payload.as_deref(), Some("Frame"));
    assert_eq!(event("deadline").payload.as_deref(), Some("CallId"));
    assert_eq!(event("up").payload, None);
    let guard = |n: &str| m.guards.iter().find(|g| g.decl.name == n).unwrap();
    assert_eq!(guard("is_ready").takes, None);
    assert_eq!(guard("is_reply").takes.as_deref(), Some("Frame"));
    assert_eq!(guard("can_send").yields.as_deref(), Some("Box<Slot>"));
    let action = |n: &str| m.actions.iter().find(|a| a.decl.name == n).unwrap();
    let answer = action("answer");
    assert_eq!(
        (answer.payload, answer.witness),
        (Some(Use::Move), Some(Use::Move))
    );
    assert_eq!(answer.payload_type.as_deref(), Some("Frame"));
    assert_eq!(answer.witness_type.as_deref(), Some("CallId"));
    let note = action("note_call");
    assert_eq!((note.payload, note.witness), (None, Some(Use::Ref)));
    assert_eq!(note.payload_type, None);
}
