//! Generates the Rust of the connection table (`spec/`: the manifest `machine.toml` and
//! one file per concern) and of the bridge front's table (`spec/front.toml`) into `OUT_DIR`.

use std::{env, fs, path::Path, path::PathBuf, process::ExitCode};

fn main() -> ExitCode {
    // A directory: cargo reruns this script when any file under it changes.
    println!("cargo::rerun-if-changed=../spec");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // Read from the workspace root, so the rows name their files as `spec/<concern>.toml`.
    if let Err(e) = env::set_current_dir("..") {
        println!("cargo::error=cannot enter the workspace root: {e}");
        return ExitCode::FAILURE;
    }
    // The connection's table (a manifest and its concerns), then the bridge front's (one file).
    let specs = [
        ("spec", "spec/", "connection"),
        ("spec/front.toml", "spec/front.toml", "front"),
    ];
    for (path, label, name) in specs {
        let sources = match mcp_codegen::Sources::read(Path::new(path)) {
            Ok(s) => s,
            Err(e) => {
                println!("cargo::error=cannot read the spec {path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        match mcp_codegen::generate_sources(&sources, label) {
            Ok(generated) => {
                let files = [
                    (format!("{name}.rs"), generated.rust),
                    (format!("{name}_interpreter.rs"), generated.interpreter),
                ];
                for (file, text) in files {
                    if let Err(e) = fs::write(out.join(file), text) {
                        println!("cargo::error=cannot write generated code: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            Err(diagnostics) => {
                for line in diagnostics.to_string().lines() {
                    println!("cargo::error={line}");
                }
                eprintln!("{diagnostics}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
