//! `mcpc`: the command-line client of the MCP client library (`mcp-runtime`).
//!
//! It starts a server over stdio (`--stdio 'command args…'`), and lists or calls its tools,
//! reads its resources, gets its prompts, completes arguments, pings, watches notifications
//! or the connection's state transitions. Output is aligned plain text, or one JSON document
//! with `--json`. Failures end with one line on stderr, `mcpc: <what failed>: <why>`, and an
//! exit code from the table in [`error::EXIT_CODES`]. `mcpc demo` is a guided run against
//! the in-repo test server, in process.

mod args;
mod capture;
mod commands;
mod demo;
mod error;
mod interact;
mod output;
mod progress;
mod typed;

use clap::{CommandFactory, Parser};

use crate::args::{Cli, Command};
use crate::commands::Interrupt;
use crate::error::{CliError, Exit};

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::TestServer { chaos } => test_server(chaos),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "mcpc", &mut std::io::stdout());
            0
        }
        _ => {
            capture::init(cli.global.verbose);
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => {
                    let result = runtime.block_on(run(cli));
                    // A blocking read of the terminal (an elicitation prompt) may still be
                    // under way: do not wait for it.
                    runtime.shutdown_background();
                    match result {
                        Ok(()) => Exit::Ok.code(),
                        Err(e) => {
                            eprintln!("{e}");
                            e.exit.code()
                        }
                    }
                }
                Err(e) => {
                    eprintln!("mcpc: cannot start the async runtime: {e}");
                    Exit::Transport.code()
                }
            }
        }
    };
    std::process::exit(code);
}

/// Runs a command that needs the async runtime.
async fn run(cli: Cli) -> Result<(), CliError> {
    let interrupt = Interrupt::install()
        .map_err(|e| CliError::new(Exit::Transport, "cannot listen for Ctrl-C", e.to_string()))?;
    let g = cli.global;
    match cli.command {
        Command::Demo => demo::run(&interrupt).await,
        Command::State => commands::state(&g, &interrupt).await,
        command => {
            let what = command.label();
            let client = tokio::select! {
                biased;
                r = commands::connect(&g) => r?,
                () = interrupt.fired() => return Err(CliError::cancelled(what)),
            };
            let result = tokio::select! {
                biased;
                r = commands::dispatch(&client, &g, command, &interrupt) => r,
                () = interrupt.fired() => Err(CliError::cancelled(what)),
            };
            commands::finish(&client).await;
            result
        }
    }
}

/// `mcpc __test-server [--chaos]`: the in-repo test server on stdin/stdout (for tests).
fn test_server(chaos: bool) -> i32 {
    let config = if chaos {
        mcp_testserver::ServerConfig::chaos()
    } else {
        mcp_testserver::ServerConfig::echo()
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcpc __test-server: cannot start the runtime: {e}");
            return 1;
        }
    };
    let ended = runtime.block_on(mcp_testserver::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        config,
    ));
    runtime.shutdown_background();
    mcp_testserver::cli::exit_code(ended)
}
