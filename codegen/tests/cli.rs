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
    assert!(stdout.starts_with("ok: 7 states, 32 events, "), "{stdout}");
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
        ("rust --interpreter", "// Generated"),
        ("handlers", "// Skeleton"),
    ] {
        let out = bin().args(cmd.split(' ')).output().unwrap();
        assert!(out.status.success(), "{cmd}");
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(start),
            "{cmd}"
        );
    }
}

#[test]
fn rust_interpreter_prints_the_interpreter() {
    let out = bin()
        .args(["rust", "--interpreter", TYPED])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("pub fn interpret<H: Handlers + ?Sized>"),
        "{stdout}"
    );
    assert!(!stdout.contains("pub fn dispatch"), "{stdout}");
}

/// The typed fixture (paths are relative to the workspace root, where the binary runs).
const TYPED: &str = "codegen/tests/fixtures/typed.toml";

#[test]
fn handlers_impl_reports_missing_mismatched_and_extra_methods() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("handlers_partial.rs");
    std::fs::write(
        &file,
        "mod inner {\n    impl generated::Handlers for Ctx {\n        \
         fn is_ping(&self, _: &Frame) -> bool { true }\n        \
         fn is_reply(&self, _: &Frame) -> bool { true }\n        \
         fn answer(&mut self, _: Frame) {}\n        \
         fn gone_action(&mut self) {}\n    }\n}\n",
    )
    .unwrap();
    let out = bin()
        .args(["handlers", TYPED, "--impl"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in [
        "missing guard: fn is_ready(&self) -> bool;",
        "missing guard: fn can_send(&self, p: &Call) -> Option<Box<Slot>>;",
        "missing action: fn note_call(&mut self, w: &CallId);",
        "signature differs, the spec says: fn is_reply(&self, p: &Frame) -> Option<CallId>;",
        "signature differs, the spec says: fn answer(&mut self, p: Frame, w: CallId);",
        "not in the spec: fn gone_action",
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
    assert!(!stdout.contains("fn is_ping("), "{stdout}");

    // The skeleton itself is complete, for the typed fixture and the real spec.
    for spec in [TYPED, "spec"] {
        let skeleton = bin().args(["handlers", spec]).output().unwrap().stdout;
        let file = dir.join("handlers_full.rs");
        std::fs::write(&file, skeleton).unwrap();
        let out = bin()
            .args(["handlers", spec, "--impl"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
