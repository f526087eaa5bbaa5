//! Generates the connection table's Rust from the spec (`spec/`: the manifest `machine.toml` and
//! one file per concern) into `OUT_DIR`.

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
    let sources = match mcp_codegen::Sources::read(Path::new("spec")) {
        Ok(s) => s,
        Err(e) => {
            println!("cargo::error=cannot read the spec: {e}");
            return ExitCode::FAILURE;
        }
    };
    match mcp_codegen::generate_sources(&sources, "spec/") {
        Ok(generated) => {
            let files = [
                ("connection.rs", generated.rust),
                ("connection_interpreter.rs", generated.interpreter),
            ];
            for (name, text) in files {
                if let Err(e) = fs::write(out.join(name), text) {
                    println!("cargo::error=cannot write generated code: {e}");
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
        Err(diagnostics) => {
            for line in diagnostics.to_string().lines() {
                println!("cargo::error={line}");
            }
            eprintln!("{diagnostics}");
            ExitCode::FAILURE
        }
    }
}
