//! `tools call NAME` through a group: NAME is a merged name (`echo`, or `server__echo` when
//! several servers list `echo`), else `SERVER/TOOL` (the tool's own name on that server, listed
//! or not). The call goes to its server with `call_tool_on`, waits for that server's handshake
//! up to its timeout, and is shown as with one server (progress, task statuses, Ctrl-C).

use mcp_runtime::group::GroupConfig;
use mcp_runtime::types::Tool;
use mcp_runtime::{ClientGroup, GroupError};
use serde_json::{Map, Value};

use crate::args::{CallArgs, Global};
use crate::error::{CliError, Exit};
use crate::signals::Interrupt;
use crate::typed;

/// Where a `tools call` goes.
#[derive(Debug, PartialEq)]
struct Target {
    /// The server, by name.
    server: String,
    /// The tool's name on it.
    tool: String,
    /// The tool as the server listed it (`None`: not listed).
    listed: Option<Tool>,
}

/// The server and tool `name` names: a merged name first, then `SERVER/TOOL` (split at the
/// first `/`). An unknown server is a usage error (exit 2), an unknown tool exit 1 (as a
/// server's own "no such tool" is).
fn resolve(
    group: &ClientGroup,
    config: &GroupConfig,
    name: &str,
    what: &str,
) -> Result<Target, CliError> {
    let view = group.view();
    if let Some(m) = view.tool(name) {
        return Ok(Target {
            server: m.server.to_string(),
            tool: m.original.clone(),
            listed: Some(m.item.clone()),
        });
    }
    if let Some((server, tool)) = name.split_once('/') {
        if group.client(server).is_none() {
            return Err(super::show::unknown_server(config, server, what));
        }
        if config.server(server).is_some_and(|e| !e.tools.allows(tool)) {
            let refused = GroupError::ToolNotAllowed {
                server: server.to_owned(),
                tool: tool.to_owned(),
            };
            return Err(refused_error(config, what, &refused));
        }
        let listed = view
            .tools
            .iter()
            .find(|t| &*t.server == server && t.original == tool)
            .map(|t| t.item.clone());
        return Ok(Target {
            server: server.to_owned(),
            tool: tool.to_owned(),
            listed,
        });
    }
    // Which servers could still list it: those whose tools are not fetched yet.
    let unlisted: Vec<String> = group
        .snapshot()
        .servers
        .iter()
        .filter(|s| s.tools.is_none())
        .map(|s| format!("{} ({})", s.name, s.state))
        .collect();
    let mut why = GroupError::UnknownTool {
        name: name.to_owned(),
    }
    .to_string();
    if !unlisted.is_empty() {
        why.push_str(&format!(
            "; not listed yet: {}; name one as SERVER/TOOL",
            unlisted.join(", ")
        ));
    }
    why.push_str(" (see `tools list`)");
    Err(CliError::new(Exit::Server, what, why))
}

/// `tools call NAME [KEY=VALUE…] [--args JSON]` through the group.
pub async fn tools_call(
    group: &ClientGroup,
    config: &GroupConfig,
    g: &Global,
    call: CallArgs,
    interrupt: &Interrupt,
) -> Result<(), CliError> {
    let what = format!("tools call {}", call.name);
    let base = match &call.args {
        Some(text) => typed::parse_args_json(text).map_err(|e| CliError::usage(&what, e))?,
        None => Map::new(),
    };
    let target = resolve(group, config, &call.name, &what)?;
    let args = if call.pairs.is_empty() {
        base
    } else {
        let Some(tool) = &target.listed else {
            return Err(CliError::new(
                Exit::Server,
                &what,
                format!(
                    "server `{}` does not list a tool named `{}`: its arguments cannot be typed (give --args JSON)",
                    target.server, target.tool
                ),
            ));
        };
        typed::tool_arguments(&target.tool, &tool.input_schema, base, &call.pairs)
            .map_err(|e| CliError::usage(&what, e))?
    };
    let Some(client) = group.client(&target.server) else {
        return Err(super::show::unknown_server(config, &target.server, &what));
    };
    // The entry's own `timeout` wins over --timeout.
    let timeout = config
        .server(&target.server)
        .and_then(|e| e.timeout)
        .unwrap_or(g.timeout);
    let (server, tool) = (target.server.as_str(), target.tool.as_str());
    // What the group itself refuses (a tool the entry's `tools.allow` / `tools.deny` leave
    // out) is kept here and ends the command as such.
    let refused: std::sync::Mutex<Option<GroupError>> = std::sync::Mutex::new(None);
    let start = |options| {
        let refused = &refused;
        async move {
            group
                .call_tool_on_with(server, tool, Value::Object(args), options)
                .await
                .map_err(|e| match e {
                    GroupError::Server { source, .. } => source,
                    other => {
                        *refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(other);
                        mcp_runtime::Error::Shutdown
                    }
                })
        }
    };
    let result =
        crate::commands::run_call(&client, g, &what, &call.name, timeout, start, interrupt).await;
    match refused.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(refused_error(config, &what, &e)),
        None => result,
    }
}

/// A call the group refused before sending it: a tool the configuration does not allow, or
/// a server no longer there, is a usage error (exit 2); a stopped group exit 5.
fn refused_error(config: &GroupConfig, what: &str, e: &GroupError) -> CliError {
    match e {
        GroupError::ToolNotAllowed { .. } => CliError::usage(
            what,
            format!(
                "{e} (its `tools.allow` / `tools.deny` in {})",
                config.file()
            ),
        ),
        GroupError::UnknownServer { server } => super::show::unknown_server(config, server, what),
        other => CliError::new(Exit::Transport, what, other.to_string()),
    }
}
