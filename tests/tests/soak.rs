//! A short soak (the `soak` binary for 10 s, the server killed every second): memory, descriptors,
//! tasks and child processes come back, and every caller is answered in time. The full run is
//! `cargo run --release -p mcp-tests --bin soak -- --seconds 120 --min-calls 1000000`.

use std::process::Command;

#[test]
fn a_short_soak_leaks_nothing() {
    let out = Command::new(env!("CARGO_BIN_EXE_soak"))
        .args([
            "--seconds",
            "10",
            "--kill-every-ms",
            "1000",
            "--callers",
            "32",
        ])
        .output()
        .expect("the soak runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the soak failed: {stdout}");
    assert!(stdout.contains("soak: OK"), "{stdout}");
}
