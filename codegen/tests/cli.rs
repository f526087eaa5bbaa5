//! The `mcp-codegen` binary: exit codes and outputs.

use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mcp-codegen"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    c
}

#[test]
fn check_passes_on_the_real_spec() {
    let out = bin().args(["check"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("ok: 6 states, 22 events, "), "{stdout}");
}

#[test]
fn check_fails_on_a_broken_spec() {
    let out = bin()
        .args(["check", "codegen/tests/broken/missing-cell.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error[missing-cell]"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_missing_file_is_one_line_and_exit_2() {
    let out = bin().args(["check", "no/such/file.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn diagram_table_rust_print() {
    for (cmd, start) in [
        ("diagram", "stateDiagram-v2"),
        ("table", "<!-- Generated"),
        ("rust", "// Generated"),
        ("handlers", "// Skeleton"),
    ] {
        let out = bin().arg(cmd).output().unwrap();
        assert!(out.status.success(), "{cmd}");
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(start),
            "{cmd}"
        );
    }
}

#[test]
fn handlers_impl_reports_missing_and_extra_methods() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("handlers_partial.rs");
    std::fs::write(
        &file,
        "mod inner {\n    impl generated::Handlers for Ctx {\n        type Event = ();\n        \
         fn is_ping(&self, _: &()) -> bool { true }\n        fn gone_action(&mut self, _: &()) {}\n    }\n}\n",
    )
    .unwrap();
    let out = bin()
        .args(["handlers", "spec/transitions.toml", "--impl"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("missing guard: fn is_init_accepted(&self, ev: &Self::Event) -> bool;"),
        "{stdout}"
    );
    assert!(!stdout.contains("missing guard: fn is_ping("), "{stdout}");
    assert!(
        stdout.contains("not in the spec: fn gone_action"),
        "{stdout}"
    );

    // The skeleton itself is complete.
    let skeleton = bin().arg("handlers").output().unwrap().stdout;
    let file = dir.join("handlers_full.rs");
    std::fs::write(&file, skeleton).unwrap();
    let out = bin()
        .args(["handlers", "spec/transitions.toml", "--impl"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
