//! The `mcp-codegen` command: checks the connection table and prints what is generated from it.
//!
//! Exit codes: 0 on success, 1 when the spec has errors (or, for `handlers --impl`, methods are
//! missing or have other signatures), 2 when a file cannot be read or the command line is wrong.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mcp_codegen::handlers::{self, MethodKind};
use mcp_codegen::{Diagnostics, Generated, Machine, Sources};

const DEFAULT_SPEC: &str = "spec/";

/// Checks the spec (spec/) and prints the Rust, diagram, table or handler skeleton made from it.
#[derive(Debug, Parser)]
#[command(name = "mcp-codegen", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validates the spec: diagnostics on stderr and exit 1 on error, a summary line on success.
    Check {
        /// The spec: a directory with machine.toml and its concern files, or one file.
        #[arg(default_value = DEFAULT_SPEC)]
        path: PathBuf,
    },
    /// Prints the Mermaid stateDiagram-v2.
    Diagram {
        /// The spec: a directory with machine.toml and its concern files, or one file.
        #[arg(default_value = DEFAULT_SPEC)]
        path: PathBuf,
    },
    /// Prints the Markdown table of the rows.
    Table {
        /// The spec: a directory with machine.toml and its concern files, or one file.
        #[arg(default_value = DEFAULT_SPEC)]
        path: PathBuf,
    },
    /// Prints the per-state view (docs/table.md): for each state and event, the rows in the
    /// order they are tried.
    Cells {
        /// The spec: a directory with machine.toml and its concern files, or one file.
        #[arg(default_value = DEFAULT_SPEC)]
        path: PathBuf,
    },
    /// Prints the generated Rust (what the machine runs), or with --interpreter the table
    /// interpreter the model checker uses for mutated tables.
    Rust {
        /// The spec: a directory with machine.toml and its concern files, or one file.
        #[arg(default_value = DEFAULT_SPEC)]
        path: PathBuf,
        /// Print the interpreter instead.
        #[arg(long)]
        interpreter: bool,
    },
    /// Prints an `impl Handlers` skeleton, or with --impl compares an existing impl to the spec.
    Handlers {
        /// The spec: a directory with machine.toml and its concern files, or one file.
        #[arg(default_value = DEFAULT_SPEC)]
        path: PathBuf,
        /// A Rust file holding an `impl ... Handlers for ...` block: prints the methods it lacks,
        /// those whose arguments or return differ from the spec's, and those the spec no longer
        /// has; exit 1 if any is missing or differs.
        #[arg(long = "impl", value_name = "FILE.rs|DIR")]
        impl_file: Option<PathBuf>,
    },
}

fn read(path: &Path) -> Result<String, ExitCode> {
    std::fs::read_to_string(path).map_err(|e| {
        eprintln!("error: cannot read `{}`: {e}", path.display());
        ExitCode::from(2)
    })
}

fn report(d: &Diagnostics) -> ExitCode {
    eprintln!("{d}");
    ExitCode::from(1)
}

fn sources(path: &Path) -> Result<Sources, ExitCode> {
    Sources::read(path).map_err(|e| {
        eprintln!("error: cannot read `{}`: {e}", path.display());
        ExitCode::from(2)
    })
}

fn machine(path: &Path) -> Result<Machine, ExitCode> {
    mcp_codegen::load_sources(&sources(path)?).map_err(|d| report(&d))
}

fn generated(path: &Path) -> Result<Generated, ExitCode> {
    mcp_codegen::generate_sources(&sources(path)?, &path.display().to_string())
        .map_err(|d| report(&d))
}

/// The Rust of `path`: the file, or every `.rs` file under the directory (sorted), joined.
fn rust_of(path: &Path) -> Result<String, ExitCode> {
    if !path.is_dir() {
        return read(path);
    }
    let mut files = Vec::new();
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| {
            eprintln!("error: cannot read `{}`: {e}", dir.display());
            ExitCode::from(2)
        })?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut text = String::new();
    for f in files {
        text.push_str(&read(&f)?);
        text.push('\n');
    }
    Ok(text)
}

fn compare(m: &Machine, file: &Path) -> Result<(), ExitCode> {
    let rust = rust_of(file)?;
    let diff = handlers::compare_impl(m, &rust).map_err(|e| {
        eprintln!("error: {}: {e}", file.display());
        ExitCode::from(1)
    })?;
    for method in &diff.missing {
        let kind = match method.kind {
            MethodKind::Guard => "guard",
            MethodKind::Action => "action",
        };
        println!("missing {kind}: {};", method.signature());
    }
    for method in &diff.mismatched {
        println!("signature differs, the spec says: {};", method.signature());
    }
    for name in &diff.extra {
        println!("not in the spec: fn {name}");
    }
    let complete = diff.missing.is_empty() && diff.mismatched.is_empty();
    if complete && diff.extra.is_empty() {
        println!(
            "ok: `{}` implements the {} methods the spec requires",
            file.display(),
            handlers::required_methods(m).len()
        );
    }
    if complete {
        Ok(())
    } else {
        Err(ExitCode::from(1))
    }
}

fn run(cli: Cli) -> Result<(), ExitCode> {
    match cli.command {
        Command::Check { path } => {
            // Generating too makes sure the emitters accept what validation accepted.
            generated(&path)?;
            let m = machine(&path)?;
            println!(
                "ok: {} states, {} events, {} rows, {} cells",
                m.states.len(),
                m.events.len(),
                m.rows.len(),
                m.cells.len()
            );
        }
        Command::Diagram { path } => print!("{}", generated(&path)?.mermaid),
        Command::Table { path } => print!("{}", generated(&path)?.markdown),
        Command::Cells { path } => print!("{}", generated(&path)?.cells),
        Command::Rust { path, interpreter } => {
            let g = generated(&path)?;
            print!("{}", if interpreter { g.interpreter } else { g.rust });
        }
        Command::Handlers { path, impl_file } => {
            let m = machine(&path)?;
            match impl_file {
                None => print!("{}", handlers::skeleton(&m)),
                Some(file) => compare(&m, &file)?,
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}
