//! Every spec under `tests/broken/` is rejected with the error its first line names
//! (`# expect: <code>`), and its rendered diagnostics are snapshotted (one snapshot per file).

use std::path::Path;

#[test]
fn broken_specs_are_rejected() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/broken");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 14, "only {} broken specs", files.len());
    for file in files {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(&file).unwrap();
        let expect = source
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{stem}: first line must be `# expect: <code>`"))
            .trim()
            .to_owned();
        let path = format!("tests/broken/{stem}.toml");
        let diagnostics = match mcp_codegen::generate(&source, &path) {
            Ok(_) => panic!("{path} was accepted"),
            Err(d) => d,
        };
        assert!(
            diagnostics.codes().contains(&expect.as_str()),
            "{path}: expected `{expect}`, got {:?}\n{diagnostics}",
            diagnostics.codes()
        );
        let text = diagnostics.to_string();
        assert_eq!(
            text,
            diagnostics.to_string(),
            "{path}: rendering is not stable"
        );
        insta::assert_snapshot!(stem, text);
    }
}

#[test]
fn the_minimal_fixture_is_valid() {
    let source = include_str!("fixtures/minimal.toml");
    if let Err(d) = mcp_codegen::generate(source, "tests/fixtures/minimal.toml") {
        panic!("{d}");
    }
}
