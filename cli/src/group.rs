//! `mcpc --config FILE …` (or `--config-from HOST`): every server of a host's configuration
//! file as one [`ClientGroup`] of the library, started at once and fail-open (a server that
//! cannot start is shown as such and keeps retrying; the others answer), each call waiting
//! for its server's handshake up to its timeout (`wait_for_ready`).
//!
//! - `servers`: each server's state, era, tools count, pid and last error;
//! - `tools list`, `prompts list`, `resources list`, `resources templates`: the merged view
//!   (a name several servers list is prefixed `server__name`), with each item's server and its
//!   own name;
//! - `tools call NAME` (the merged name) or `tools call SERVER/TOOL`, routed to the server;
//! - `info SERVER`: that server's handshake, state and pid;
//! - `watch`: every server's notifications and transitions, and the merged lists' changes,
//!   tagged with their server, until Ctrl-C.
//!
//! What is not here: the commands that talk to one server only (`ping`, `resources read`,
//! `prompts get`, `complete`, `tasks`, `state`, `login`) are usage errors with `--config`.
//! The group is stopped before mcpc exits (every server in parallel, within
//! [`crate::connect::FINISH_BOUND`]; what is left is killed and reaped by `main`).

mod call;
pub mod demo;
pub mod load;
mod show;
pub mod start;
mod watch;

use mcp_runtime::ClientGroup;
use mcp_runtime::group::GroupConfig;

use crate::args::{Command, Global, PromptsCommand, ResourcesCommand, ToolsCommand};
use crate::error::CliError;
use crate::signals::Interrupt;

/// Runs `command` against the group of the configuration the global options name.
pub async fn run(g: &Global, command: Command, interrupt: &Interrupt) -> Result<(), CliError> {
    let what = command.label();
    supported(&command, &what)?;
    let config = load::load(g)?;
    if let Command::Info { server } = &command {
        show::check_server(&config, server.as_deref(), &what)?;
    }
    let group = start::start(g, &config, interrupt, &what).await?;
    // `tools call` and `watch` end on a signal by themselves (a task call reports the task's
    // state after its cancel): they get up to 3 s to do so, as with one server.
    let own_signals = matches!(
        command,
        Command::Tools(ToolsCommand::Call(_)) | Command::Watch(_)
    );
    let result = {
        let dispatch = dispatch(&group, &config, g, command, interrupt);
        tokio::pin!(dispatch);
        tokio::select! {
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
        }
    };
    finish(&group).await;
    result
}

/// A usage error for the commands that talk to one server only.
fn supported(command: &Command, what: &str) -> Result<(), CliError> {
    match command {
        Command::Servers
        | Command::Info { .. }
        | Command::Tools(_)
        | Command::Prompts(PromptsCommand::List)
        | Command::Resources(ResourcesCommand::List | ResourcesCommand::Templates)
        | Command::Watch(_) => Ok(()),
        _ => Err(CliError::usage(
            what,
            "not available with --config (servers, info SERVER, tools list|call, prompts list, \
             resources list|templates, watch are): name one server with --stdio or --http",
        )),
    }
}

async fn dispatch(
    group: &ClientGroup,
    config: &GroupConfig,
    g: &Global,
    command: Command,
    interrupt: &Interrupt,
) -> Result<(), CliError> {
    let what = command.label();
    match command {
        Command::Servers => {
            show::servers(group, config, g.json);
            Ok(())
        }
        Command::Info { server } => show::info(group, server.as_deref().unwrap_or(""), g.json),
        Command::Tools(ToolsCommand::List) => {
            show::tools(group, g.json);
            Ok(())
        }
        Command::Tools(ToolsCommand::Call(c)) => {
            call::tools_call(group, config, g, c, interrupt).await
        }
        Command::Prompts(PromptsCommand::List) => {
            show::prompts(group, g.json);
            Ok(())
        }
        Command::Resources(ResourcesCommand::List) => {
            show::resources(group, g.json);
            Ok(())
        }
        Command::Resources(ResourcesCommand::Templates) => {
            show::templates(group, g.json);
            Ok(())
        }
        Command::Watch(w) => watch::watch(group, g.json, w, interrupt).await,
        other => supported(&other, &what),
    }
}

/// Stops every server of the group and waits, at most [`crate::connect::FINISH_BOUND`], for
/// them to be reaped (what is left then is killed when the runtime shuts down).
pub async fn finish(group: &ClientGroup) {
    let _ = tokio::time::timeout(crate::connect::FINISH_BOUND, group.stop()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<crate::args::Cli, clap::Error> {
        let mut all = vec!["mcpc"];
        all.extend_from_slice(args);
        crate::args::Cli::try_parse_from(all)
    }

    #[test]
    fn config_excludes_the_single_server_flags() {
        assert!(
            parse(&["--config", "f.json", "servers"])
                .unwrap()
                .global
                .group()
        );
        for flag in [
            ["--stdio", "srv"],
            ["--http", "http://x/mcp"],
            ["--sse", "http://x/sse"],
            ["--env", "A=b"],
            ["-H", "A: b"],
        ] {
            let mut args = vec!["--config", "f.json"];
            args.extend_from_slice(&flag);
            args.push("servers");
            assert!(parse(&args).is_err(), "{flag:?}");
        }
        let from = parse(&["--config-from", "vscode", "tools", "list"]).unwrap();
        assert_eq!(
            from.global.config_from,
            Some(crate::args::ConfigHost::VsCode)
        );
        assert!(
            parse(&[
                "--config-from",
                "claude-desktop",
                "--config",
                "f",
                "servers"
            ])
            .is_err()
        );
    }

    #[test]
    fn commands_for_one_server_are_usage_errors() {
        assert!(supported(&Command::Servers, "servers").is_ok());
        let e = supported(&Command::Ping, "ping").unwrap_err();
        assert_eq!(e.exit, crate::error::Exit::Usage);
    }
}
