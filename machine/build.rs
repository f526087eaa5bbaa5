//! Generates the connection table's Rust from `spec/transitions.toml` into `OUT_DIR`.

use std::{env, fs, path::PathBuf, process::ExitCode};

fn main() -> ExitCode {
    let spec = PathBuf::from("../spec/transitions.toml");
    println!("cargo::rerun-if-changed=../spec/transitions.toml");
    let source = match fs::read_to_string(&spec) {
        Ok(s) => s,
        Err(e) => {
            println!("cargo::error=cannot read {}: {e}", spec.display());
            return ExitCode::FAILURE;
        }
    };
    match mcp_codegen::generate(&source, "spec/transitions.toml") {
        Ok(generated) => {
            let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
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
