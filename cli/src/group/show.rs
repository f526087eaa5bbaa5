//! What a group shows: `servers` (from the snapshot), `info SERVER`, and the merged lists
//! (`tools list`, `prompts list`, `resources list|templates`), as tables or one JSON document.
//! Every cell goes through [`Table`] (escaped, one line); JSON goes out exact.

use mcp_runtime::group::GroupConfig;
use mcp_runtime::{ClientGroup, ConnState, Era, TaskSupport};
use serde_json::{Value, json};

use crate::commands::to_json;
use crate::error::{CliError, Exit};
use crate::output::{Table, capabilities_summary, field, print_json, schema_summary};

fn era_name(era: Option<Era>) -> Option<&'static str> {
    era.map(|e| match e {
        Era::Modern => "modern",
        _ => "legacy",
    })
}

fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// `servers`: NAME, STATE, ERA, TOOLS, PID, LAST ERROR, one row per server in name order;
/// the disabled entries of the file after them (state `disabled`).
pub fn servers(group: &ClientGroup, config: &GroupConfig, json_out: bool) {
    let snapshot = group.snapshot();
    let disabled: Vec<&str> = config
        .servers()
        .iter()
        .filter(|e| !e.enabled)
        .map(|e| e.name.as_str())
        .collect();
    if json_out {
        let mut servers: Vec<Value> = snapshot
            .servers
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "state": s.state.name(),
                    "era": era_name(s.era),
                    "tools": s.tools,
                    "prompts": s.prompts,
                    "resources": s.resources,
                    "pid": s.pid,
                    "lastError": s.last_error.as_ref().map(ToString::to_string),
                    "calls": s.calls,
                    "errors": s.errors,
                    "reconnects": s.reconnects,
                })
            })
            .collect();
        servers.extend(
            disabled
                .iter()
                .map(|name| json!({"name": name, "state": "disabled"})),
        );
        print_json(&json!({"file": config.file(), "servers": servers}));
        return;
    }
    let mut t = Table::new(&["NAME", "STATE", "ERA", "TOOLS", "PID", "LAST ERROR"]);
    for s in &snapshot.servers {
        t.row(vec![
            s.name.clone(),
            s.state.name().to_owned(),
            or_dash(era_name(s.era)),
            or_dash(s.tools),
            or_dash(s.pid),
            s.last_error
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
        ]);
    }
    for name in disabled {
        t.row(vec![name.to_owned(), "disabled".into()]);
    }
    out!("{}", t.render());
}

/// A usage error, before anything starts, for `info` without a server or with one the file
/// does not have (or has disabled).
pub fn check_server(
    config: &GroupConfig,
    server: Option<&str>,
    what: &str,
) -> Result<(), CliError> {
    let names = || {
        config
            .servers()
            .iter()
            .filter(|e| e.enabled)
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match server.map(|s| (s, config.server(s))) {
        None => Err(CliError::usage(
            what,
            format!("name a server: info SERVER (servers: {})", names()),
        )),
        Some((name, e)) if e.is_none_or(|e| !e.enabled) => Err(unknown_server(config, name, what)),
        Some(_) => Ok(()),
    }
}

/// No server of that name (or a disabled one): exit 2, with the servers there are.
pub fn unknown_server(config: &GroupConfig, name: &str, what: &str) -> CliError {
    if config.server(name).is_some_and(|e| !e.enabled) {
        return CliError::usage(
            what,
            format!("server `{name}` is disabled in {}", config.file()),
        );
    }
    let names: Vec<&str> = config
        .servers()
        .iter()
        .filter(|e| e.enabled)
        .map(|e| e.name.as_str())
        .collect();
    CliError::usage(
        what,
        format!(
            "no server named `{name}` in {} (servers: {})",
            config.file(),
            names.join(", ")
        ),
    )
}

/// `info SERVER`: its handshake (name, version, protocol, era, capabilities, instructions),
/// state and pid. A server that is not connected is exit 3 with its state and last error.
pub fn info(group: &ClientGroup, server: &str, json_out: bool) -> Result<(), CliError> {
    let what = format!("info {server}");
    let Some(client) = group.client(server) else {
        return Err(CliError::usage(
            what,
            format!("no server named `{server}` in the group"),
        ));
    };
    let state = client.state();
    let Some(s) = client.server_info().filter(|_| state == ConnState::Ready) else {
        let why = client
            .last_error()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        return Err(CliError::new(
            Exit::Connect,
            what,
            format!("not connected ({state}){why}"),
        ));
    };
    let era = era_name(client.era()).unwrap_or("legacy");
    let pid = client.server_pid();
    if json_out {
        print_json(&json!({
            "server": server,
            "state": state.name(),
            "pid": pid,
            "serverInfo": s.server_info,
            "protocolVersion": s.protocol_version,
            "era": era,
            "capabilities": s.capabilities,
            "instructions": s.instructions,
        }));
        return Ok(());
    }
    let mut t = Table::new(&["", ""]);
    let title = field(&s.server_info, "title");
    let title = if title.is_empty() {
        String::new()
    } else {
        format!(" ({title})")
    };
    t.row(vec![
        "server".into(),
        format!("{} {}{title}", s.name(), s.version()),
    ]);
    t.row(vec!["protocol".into(), s.protocol_version.clone()]);
    let kind = if era == "modern" {
        "stateless"
    } else {
        "handshake"
    };
    t.row(vec!["era".into(), format!("{era} ({kind})")]);
    t.row(vec!["state".into(), state.name().to_owned()]);
    t.row(vec!["pid".into(), or_dash(pid)]);
    t.row(vec![
        "capabilities".into(),
        capabilities_summary(&s.capabilities),
    ]);
    t.row_multiline(vec![
        "instructions".into(),
        s.instructions.clone().unwrap_or_else(|| "(none)".into()),
    ]);
    let text = t.render();
    out!("{}", text.split_once('\n').map_or("", |(_, rest)| rest));
    Ok(())
}

/// On stderr, for a merged list: the servers whose list is not there (never connected yet).
fn not_listed(
    group: &ClientGroup,
    what: &str,
    count: impl Fn(&mcp_runtime::group::ServerSnapshot) -> Option<usize>,
) {
    for s in group
        .snapshot()
        .servers
        .iter()
        .filter(|s| count(s).is_none())
    {
        let why = s
            .last_error
            .as_ref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        errln!(
            "mcpc: {what}: server `{}` ({}) has not listed them yet{why}",
            s.name,
            s.state
        );
    }
}

/// `tools list`: the merged tools (NAME, SERVER, ORIGINAL, [RUNS,] ARGUMENTS, DESCRIPTION).
pub fn tools(group: &ClientGroup, json_out: bool) {
    let view = group.view();
    not_listed(group, "tools list", |s| s.tools);
    if json_out {
        let tools: Vec<Value> = view
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "server": &*t.server, "original": t.original, "tool": to_json(&t.item)}))
            .collect();
        print_json(&json!({ "tools": tools }));
        return;
    }
    if view.tools.is_empty() {
        outln!("(no tools)");
        return;
    }
    let runs = |tool: &mcp_runtime::types::Tool| match TaskSupport::of(tool) {
        TaskSupport::Required => "task",
        TaskSupport::Optional => "task?",
        _ => "",
    };
    let tasks = view.tools.iter().any(|t| !runs(&t.item).is_empty());
    let mut headers = vec!["NAME", "SERVER", "ORIGINAL"];
    if tasks {
        headers.push("RUNS");
    }
    headers.extend(["ARGUMENTS", "DESCRIPTION"]);
    let mut t = Table::new(&headers);
    for tool in &view.tools {
        let mut row = vec![
            tool.name.clone(),
            tool.server.to_string(),
            tool.original.clone(),
        ];
        if tasks {
            row.push(runs(&tool.item).to_owned());
        }
        row.push(schema_summary(&tool.item.input_schema));
        row.push(tool.item.description.clone().unwrap_or_default());
        t.row(row);
    }
    out!("{}", t.render());
}

/// `prompts list`: the merged prompts (NAME, SERVER, ORIGINAL, ARGUMENTS, DESCRIPTION).
pub fn prompts(group: &ClientGroup, json_out: bool) {
    let view = group.view();
    not_listed(group, "prompts list", |s| s.prompts);
    if json_out {
        let prompts: Vec<Value> = view
            .prompts
            .iter()
            .map(|p| json!({"name": p.name, "server": &*p.server, "original": p.original, "prompt": to_json(&p.item)}))
            .collect();
        print_json(&json!({ "prompts": prompts }));
        return;
    }
    if view.prompts.is_empty() {
        outln!("(no prompts)");
        return;
    }
    let mut t = Table::new(&["NAME", "SERVER", "ORIGINAL", "ARGUMENTS", "DESCRIPTION"]);
    for p in &view.prompts {
        let args: Vec<String> = p
            .item
            .arguments
            .iter()
            .map(|a| format!("{}{}", a.name, if a.required { "" } else { "?" }))
            .collect();
        t.row(vec![
            p.name.clone(),
            p.server.to_string(),
            p.original.clone(),
            args.join(" "),
            p.item.description.clone().unwrap_or_default(),
        ]);
    }
    out!("{}", t.render());
}

/// `resources list`: every server's resources (URI, SERVER, NAME, MIME, DESCRIPTION); a URI
/// two servers list is listed twice.
pub fn resources(group: &ClientGroup, json_out: bool) {
    let view = group.view();
    not_listed(group, "resources list", |s| s.resources);
    if json_out {
        let resources: Vec<Value> = view
            .resources
            .iter()
            .map(|r| json!({"server": &*r.server, "resource": to_json(&r.item)}))
            .collect();
        print_json(&json!({ "resources": resources }));
        return;
    }
    if view.resources.is_empty() {
        outln!("(no resources)");
        return;
    }
    let mut t = Table::new(&["URI", "SERVER", "NAME", "MIME", "DESCRIPTION"]);
    for r in &view.resources {
        t.row(vec![
            r.item.uri.clone(),
            r.server.to_string(),
            r.item.name.clone(),
            r.item.mime_type.clone().unwrap_or_default(),
            r.item.description.clone().unwrap_or_default(),
        ]);
    }
    out!("{}", t.render());
}

/// `resources templates`: every server's templates (URI TEMPLATE, SERVER, NAME, MIME,
/// DESCRIPTION).
pub fn templates(group: &ClientGroup, json_out: bool) {
    let view = group.view();
    if json_out {
        let templates: Vec<Value> = view
            .resource_templates
            .iter()
            .map(|r| json!({"server": &*r.server, "resourceTemplate": to_json(&r.item)}))
            .collect();
        print_json(&json!({ "resourceTemplates": templates }));
        return;
    }
    if view.resource_templates.is_empty() {
        outln!("(no resource templates)");
        return;
    }
    let mut t = Table::new(&["URI TEMPLATE", "SERVER", "NAME", "MIME", "DESCRIPTION"]);
    for r in &view.resource_templates {
        t.row(vec![
            r.item.uri_template.clone(),
            r.server.to_string(),
            r.item.name.clone(),
            r.item.mime_type.clone().unwrap_or_default(),
            r.item.description.clone().unwrap_or_default(),
        ]);
    }
    out!("{}", t.render());
}
