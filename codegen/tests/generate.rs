//! Snapshots of what is generated from the real spec and the fixtures, and properties of the
//! generated text.

use mcp_codegen::Sources;

/// The real spec (`spec/`: the manifest and its concern files), named as from the workspace root.
fn real_sources() -> Sources {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec");
    let read = |name: &str| {
        std::fs::read_to_string(format!("{dir}/{name}"))
            .unwrap_or_else(|e| panic!("spec/{name}: {e}"))
    };
    let manifest = read("machine.toml");
    let mut files = vec![("spec/machine.toml".to_owned(), manifest.clone())];
    for concern in mcp_codegen::manifest_concerns(&manifest) {
        let name = format!("{concern}.toml");
        files.push((format!("spec/{name}"), read(&name)));
    }
    Sources::new(files.iter().map(|(p, t)| (p.as_str(), t.as_str())))
}

fn real() -> mcp_codegen::Generated {
    match mcp_codegen::generate_sources(&real_sources(), "spec/") {
        Ok(g) => g,
        Err(d) => panic!("spec/ has errors:\n{d}"),
    }
}
const MINIMAL: &str = include_str!("fixtures/minimal.toml");
const MINIMAL_PATH: &str = "tests/fixtures/minimal.toml";
const TYPED: &str = include_str!("fixtures/typed.toml");
const TYPED_PATH: &str = "tests/fixtures/typed.toml";

/// Every one-file spec the generator is run on here (the real one is [`real`]).
const FIXTURES: [(&str, &str); 2] = [(MINIMAL, MINIMAL_PATH), (TYPED, TYPED_PATH)];

/// Every spec the generator is run on here, generated, with its name.
fn all() -> Vec<(&'static str, mcp_codegen::Generated)> {
    let mut out = vec![("spec/", real())];
    out.extend(FIXTURES.map(|(source, path)| (path, generated(source, path))));
    out
}

fn generated(source: &str, path: &str) -> mcp_codegen::Generated {
    match mcp_codegen::generate(source, path) {
        Ok(g) => g,
        Err(d) => panic!("{path} has errors:\n{d}"),
    }
}

#[test]
fn real_spec_rust() {
    insta::assert_snapshot!("transitions_rust", real().rust);
}

#[test]
fn real_spec_interpreter() {
    insta::assert_snapshot!("transitions_interpreter", real().interpreter);
}

#[test]
fn real_spec_mermaid() {
    insta::assert_snapshot!("transitions_mermaid", real().mermaid);
}

#[test]
fn real_spec_markdown() {
    insta::assert_snapshot!("transitions_markdown", real().markdown);
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
    for (path, g) in all() {
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
/// spec file and line of its row, and that line is the row's `[[row]]` header.
#[test]
fn dispatch_rows_are_commented_with_their_spec_lines() {
    let mut specs: Vec<(Sources, mcp_codegen::Generated)> = vec![(real_sources(), real())];
    for (source, path) in FIXTURES {
        specs.push((Sources::one(path, source), generated(source, path)));
    }
    for (sources, g) in specs {
        let path = sources.files()[0].path.clone();
        let lines = dispatch_lines(&g.rust);
        assert!(lines.len() > 3, "{path}: no dispatch");
        let mut arms = 0;
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if !(t.starts_with("(State::") || t.starts_with("if ")) {
                continue;
            }
            arms += usize::from(t.starts_with("(State::"));
            let comment = lines[i - 1].trim_start();
            let Some(rest) = comment.strip_prefix("// ") else {
                panic!("{path}: no row comment before `{t}`");
            };
            let place = rest.split(' ').next().unwrap();
            let (file, line_no) = place.rsplit_once(':').unwrap();
            let index = sources
                .files()
                .iter()
                .position(|f| f.path == file)
                .unwrap_or_else(|| panic!("{path}: `{comment}` names no file of the spec"));
            let (text, _) = sources.file_text(index);
            let line_no: usize = line_no.parse().unwrap();
            assert_eq!(
                text.lines().nth(line_no - 1),
                Some("[[row]]"),
                "{path}: `{comment}`"
            );
        }
        let m = mcp_codegen::load_sources(&sources).unwrap();
        assert_eq!(arms, m.cells.len(), "{path}: one arm per cell");
    }
}

/// The per-state view in docs/table.md is what the spec generates (run
/// `cargo run -p mcp-codegen -- cells > docs/table.md` after changing a row).
#[test]
fn docs_table_is_fresh() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/table.md");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == real().cells,
        "docs/table.md is stale: run `cargo run -p mcp-codegen -- cells > docs/table.md`"
    );
}

/// The per-state view of the bridge front's table, docs/front-table.md, is what
/// spec/front.toml generates (run `cargo run -p mcp-codegen -- cells spec/front.toml >
/// docs/front-table.md` after changing a row).
#[test]
fn docs_front_table_is_fresh() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let spec = std::fs::read_to_string(format!("{root}/spec/front.toml")).unwrap();
    let generated = mcp_codegen::generate(&spec, "spec/front.toml").unwrap();
    let committed =
        std::fs::read_to_string(format!("{root}/docs/front-table.md")).unwrap_or_default();
    assert!(
        committed == generated.cells,
        "docs/front-table.md is stale: run `cargo run -p mcp-codegen -- cells spec/front.toml > docs/front-table.md`"
    );
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(real(), real());
    assert_eq!(generated(TYPED, TYPED_PATH), generated(TYPED, TYPED_PATH));
}

#[test]
fn generated_mermaid_is_the_mermaid_constant() {
    let g = real();
    assert!(
        g.rust
            .contains(&format!("pub const MERMAID: &str = r#\"{}\"#;", g.mermaid))
    );
}

#[test]
fn real_spec_shape() {
    let m = mcp_codegen::load_sources(&real_sources()).unwrap();
    assert_eq!(m.states.len(), 7);
    assert_eq!(m.events.len(), 32);
    assert_eq!(m.cells.len(), 7 * 32);
    assert_eq!(m.concerns.len(), 8);
    // Every cell: all guarded rows but the last; rows of one file in file order.
    for cell in &m.cells {
        let (last, rest) = cell.rows.split_last().unwrap();
        assert!(m.rows[*last].guard.is_none());
        assert!(rest.iter().all(|&r| m.rows[r].guard.is_some()));
        for w in rest.windows(2) {
            let (a, b) = (&m.rows[w[0]], &m.rows[w[1]]);
            assert!(a.file != b.file || a.index < b.index);
        }
    }
    // Every guard and action belongs to a concern; rows name their own file.
    assert!(m.guards.iter().all(|g| g.concern.is_some()));
    assert!(m.actions.iter().all(|a| a.concern.is_some()));
    assert!(
        m.rows
            .iter()
            .all(|r| r.file.starts_with("spec/") && r.file != "spec/machine.toml")
    );
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
