//! `mcpc`: the command-line client of the MCP client library (`mcp-runtime`).
//!
//! It starts a server over stdio (`--stdio 'command args…'`), and lists or calls its tools,
//! reads its resources, gets its prompts, completes arguments, pings, watches notifications
//! or the connection's state transitions. Output is aligned plain text, or one JSON document
//! with `--json`. Failures end with one line on stderr, `mcpc: <what failed>: <why>`, and an
//! exit code from the table in [`error::EXIT_CODES`]. With `--config FILE` it runs every
//! server of a host's configuration file as one group ([`group`]). `mcpc demo` is a guided
//! run against the in-repo test server, in process, and a group of two.

#[macro_use]
mod sanitize;

mod args;
mod auth;
mod bridge;
mod capture;
mod children;
mod commands;
mod conformance;
mod connect;
mod demo;
mod error;
mod group;
mod headers;
mod interact;
#[cfg(feature = "otel")]
mod otel;
mod output;
mod progress;
mod signals;
mod typed;

use clap::{CommandFactory, Parser};

use crate::args::{Cli, Command};
use crate::error::{CliError, Exit};
use crate::signals::Interrupt;

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::TestServer {
            chaos,
            linger,
            instructions,
            hostile,
            server_flags,
        } => test_server(chaos, linger, instructions, hostile, server_flags),
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
                    let result = runtime.block_on(async {
                        #[cfg(feature = "otel")]
                        let exporting = otel::start();
                        let result = run(cli).await;
                        #[cfg(feature = "otel")]
                        if let Some(exporting) = exporting {
                            exporting.shutdown().await;
                        }
                        result
                    });
                    // A blocking read of the terminal (an elicitation prompt) may still be
                    // under way: do not wait for it. Dropping the tasks kills what is left of
                    // the server (SIGKILL to its process group); reap it before exiting.
                    runtime.shutdown_background();
                    children::reap(children::REAP_BOUND);
                    match result {
                        Ok(()) => Exit::Ok.code(),
                        Err(e) => {
                            errln!("{e}");
                            e.exit.code()
                        }
                    }
                }
                Err(e) => {
                    errln!("mcpc: cannot start the async runtime: {e}");
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
        Command::Bridge(args) => bridge::run(&g, &args, &interrupt).await,
        command if g.group() => group::run(&g, command, &interrupt).await,
        command @ (Command::Servers | Command::Info { server: Some(_) }) => Err(CliError::usage(
            command.label(),
            "this command is for the servers of a configuration: --config FILE",
        )),
        Command::State => commands::state(&g, &interrupt).await,
        Command::Conformance { url } => conformance::run(&g, &url, &interrupt).await,
        Command::Login => auth::login(&g, &interrupt).await,
        Command::Logout => auth::logout(&g),
        Command::Auth(args::AuthCommand::Status) => auth::status(&g),
        command => {
            let what = command.label();
            // `tools call` and `watch` end on a signal by themselves (a task call reports the
            // task's state after its cancel): they get up to 3 s to do so.
            let own_signals = matches!(
                command,
                Command::Tools(args::ToolsCommand::Call(_)) | Command::Watch(_)
            );
            let result = async {
                let client = connect::connect(&g, &interrupt, &what).await?;
                let dispatch = commands::dispatch(&client, &g, command, &interrupt);
                tokio::pin!(dispatch);
                let result = tokio::select! {
                    biased;
                    r = &mut dispatch => r,
                    caught = interrupt.fired() => {
                        let signalled = Err(CliError::signalled(&what, caught));
                        if own_signals {
                            let grace = std::time::Duration::from_secs(3);
                            tokio::time::timeout(grace, &mut dispatch).await.unwrap_or(signalled)
                        } else {
                            signalled
                        }
                    }
                };
                connect::finish(&client).await;
                result
            }
            .await;
            // A server that asked for a login no person could do here: one line saying how.
            match result {
                Err(e)
                    if auth::login_needed()
                        && !matches!(
                            e.exit,
                            Exit::Usage | Exit::Interrupted | Exit::Terminated | Exit::HangUp
                        ) =>
                {
                    Err(auth::needs_login(&g))
                }
                other => other,
            }
        }
    }
}

/// `mcpc __test-server [--chaos] [--linger MODE] [--instructions TEXT] [--hostile] [-- SERVER
/// FLAGS]`: the in-repo test server on stdin/stdout (for tests); the flags after `--` are those
/// of the server binaries (`mcp_testserver::cli`).
fn test_server(
    chaos: bool,
    linger: Option<mcp_testserver::Linger>,
    instructions: Option<String>,
    hostile: bool,
    server_flags: Vec<String>,
) -> i32 {
    let opts = match mcp_testserver::cli::parse_args(server_flags) {
        Ok(opts) => opts.for_this_process(),
        Err(e) => {
            errln!("mcpc __test-server: {e}");
            return 2;
        }
    };
    if opts.die_on_start {
        return 1;
    }
    let mut config = if chaos {
        mcp_testserver::ServerConfig::chaos()
    } else {
        mcp_testserver::ServerConfig::echo()
    };
    if let Some(linger) = linger {
        config.linger = linger;
    }
    if instructions.is_some() {
        config.instructions = instructions;
    }
    if hostile {
        config = config.with_hostile_text();
    }
    let config = mcp_testserver::cli::apply(&opts, config);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("mcpc __test-server: cannot start the runtime: {e}");
            return 1;
        }
    };
    let ended = runtime.block_on(mcp_testserver::cli::serve_stdio(config));
    runtime.shutdown_background();
    mcp_testserver::cli::exit_code(ended)
}
