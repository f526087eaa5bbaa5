//! Tests of reading configuration files: the shapes of real hosts' files (in
//! `runtime/tests/fixtures/config/`), expansion, errors and their positions, warnings, secrets,
//! and the builders the entries make.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

const SECRET: &str = "s3cr3t-value-never-shown";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config")
        .join(name)
}

/// A fixed environment: `HOME`, the secrets (`API_KEY`, `TOKEN`, …) set to [`SECRET`], and
/// `GITHUB_TOKEN` unset.
fn env(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/me".into()),
        "API_KEY" | "EVENTS_KEY" | "SEARCH_TOKEN" | "TOKEN" => Some(SECRET.into()),
        "DB_DSN" => Some("postgres://db".into()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn parse(text: &str) -> Result<GroupConfig, ConfigError> {
    GroupConfig::parse_with_env(text, "test.json", env)
}

fn invalid(text: &str) -> ConfigError {
    match parse(text) {
        Ok(config) => panic!("parsed: {config:?}"),
        Err(e) => e,
    }
}

/// A stdio entry's command, arguments, environment and directory.
type Stdio<'a> = (
    &'a str,
    &'a [String],
    &'a [(String, Secret)],
    Option<&'a Path>,
);

fn stdio(entry: &ServerEntry) -> Stdio<'_> {
    match &entry.transport {
        ServerTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => (command, args, env, cwd.as_deref()),
        other => panic!("not stdio: {other:?}"),
    }
}

fn pairs(pairs: &[(String, Secret)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.expose()))
        .collect()
}

fn names(config: &GroupConfig) -> Vec<&str> {
    config.servers().iter().map(|e| e.name.as_str()).collect()
}

#[test]
fn a_claude_desktop_file_reads_in_order_with_its_variables_expanded() {
    let config = GroupConfig::load_with_env(fixture("claude_desktop_config.json"), env).unwrap();
    assert_eq!(names(&config), ["filesystem", "github", "memory"]);
    assert!(config.file().ends_with("claude_desktop_config.json"));
    let (command, args, vars, cwd) = stdio(&config.servers()[0]);
    assert_eq!(command, "npx");
    assert_eq!(
        args,
        [
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/home/me/Desktop",
            "/home/me/Downloads"
        ]
    );
    assert!(vars.is_empty() && cwd.is_none());
    // An unset variable stays as written, and is said (by name, never a value).
    let (_, _, vars, _) = stdio(config.server("github").unwrap());
    assert_eq!(
        pairs(vars),
        [("GITHUB_PERSONAL_ACCESS_TOKEN", "${GITHUB_TOKEN}")]
    );
    // A default stands in for an unset variable.
    let (_, _, vars, _) = stdio(config.server("memory").unwrap());
    assert_eq!(pairs(vars), [("MEMORY_FILE_PATH", "/tmp/memory.json")]);
    assert_eq!(
        config.warnings(),
        [ConfigWarning::UnsetVariable {
            file: config.file().into(),
            server: "github".into(),
            field: "env.GITHUB_PERSONAL_ACCESS_TOKEN".into(),
            variable: "GITHUB_TOKEN".into(),
        }]
    );
    // The host's other settings are skipped silently.
    assert!(
        config
            .servers()
            .iter()
            .all(|e| e.enabled && e.extra.is_empty())
    );
}

#[test]
fn a_claude_code_file_has_http_with_headers_sse_oauth_and_stdio() {
    let config = GroupConfig::load_with_env(fixture("claude_code_mcp.json"), env).unwrap();
    assert_eq!(
        names(&config),
        ["api-server", "legacy-events", "sentry", "local-db"]
    );
    let api = config.server("api-server").unwrap();
    let ServerTransport::Http { url, headers } = &api.transport else {
        panic!("{api:?}")
    };
    assert_eq!(url, "https://api.example.com/mcp");
    assert_eq!(
        pairs(headers),
        [
            ("Authorization", &*format!("Bearer {SECRET}")),
            ("X-Team", "core")
        ]
    );
    assert_eq!(api.timeout, Some(Duration::from_secs(45)));
    let events = config.server("legacy-events").unwrap();
    let ServerTransport::Sse { url, headers } = &events.transport else {
        panic!("{events:?}")
    };
    assert_eq!(url, "https://events.example.com/sse");
    assert_eq!(pairs(headers), [("X-API-Key", SECRET)]);

    let oauth = config.server("sentry").unwrap().oauth.as_ref().unwrap();
    assert_eq!(oauth.client_id.as_deref(), Some("sentry-cli"));
    assert_eq!(oauth.callback_port, Some(8080));
    assert_eq!(oauth.scopes, ["org:read", "project:read"]);
    assert_eq!(oauth.issuer().as_deref(), Some("https://sentry.io"));

    let (command, args, vars, cwd) = stdio(config.server("local-db").unwrap());
    assert_eq!(command, "/usr/local/bin/db-mcp");
    assert_eq!(args, ["--dsn", "postgres://db"]);
    assert_eq!(pairs(vars), [("LOG_LEVEL", "debug")]);
    assert_eq!(cwd, Some(Path::new("/srv/project")));

    // The OAuth settings the runtime cannot apply are said; nothing else.
    let ignored: Vec<_> = config
        .warnings()
        .iter()
        .map(|w| match w {
            ConfigWarning::IgnoredField { server, field, .. } => (server.as_str(), field.as_str()),
            other => panic!("{other}"),
        })
        .collect();
    assert_eq!(
        ignored,
        [("sentry", "oauth.scopes"), ("sentry", "oauth.callbackPort")]
    );
}

#[test]
fn a_vs_code_file_has_servers_and_inputs() {
    let config = GroupConfig::load_with_env(fixture("vscode_mcp.json"), env).unwrap();
    assert_eq!(names(&config), ["Perplexity", "fetch", "github"]);
    let inputs = config.inputs().unwrap();
    assert_eq!(inputs[0]["id"], "perplexity-key");
    let perplexity = config.server("Perplexity").unwrap();
    let (command, _, vars, _) = stdio(perplexity);
    assert_eq!(command, "npx");
    assert_eq!(
        pairs(vars),
        [("PERPLEXITY_API_KEY", "${input:perplexity-key}")]
    );
    // `envFile` is kept, unread.
    assert_eq!(
        perplexity.extra.get("envFile"),
        Some(&serde_json::json!("${workspaceFolder}/.env"))
    );
    assert!(matches!(
        &config.server("github").unwrap().transport,
        ServerTransport::Http { url, .. } if url == "https://api.githubcopilot.com/mcp/"
    ));
    let file = config.file().to_owned();
    assert_eq!(
        config.warnings(),
        [
            ConfigWarning::UnknownField {
                file: file.clone(),
                server: "Perplexity".into(),
                field: "envFile".into(),
            },
            ConfigWarning::InputVariable {
                file,
                server: "Perplexity".into(),
                field: "env.PERPLEXITY_API_KEY".into(),
                id: "perplexity-key".into(),
            },
        ]
    );
}

#[test]
fn a_cursor_file_with_env_colon_variables_disabled_servers_and_filters() {
    let config = GroupConfig::load_with_env(fixture("cursor_mcp.json"), env).unwrap();
    assert_eq!(names(&config), ["linear", "notes", "search"]);
    // `url` without `type`: HTTP, the transport picked when connecting.
    assert!(matches!(
        &config.server("linear").unwrap().transport,
        ServerTransport::Http { url, .. } if url == "https://mcp.linear.app/sse"
    ));
    let notes = config.server("notes").unwrap();
    assert!(!notes.enabled);
    let (_, args, vars, _) = stdio(notes);
    assert_eq!(args, ["/home/me/mcp/notes/index.js"]);
    assert_eq!(pairs(vars), [("NOTES_TOKEN", "${env:NOTES_TOKEN}")]);
    let search = config.server("search").unwrap();
    let ServerTransport::Http { headers, .. } = &search.transport else {
        panic!()
    };
    assert_eq!(
        pairs(headers),
        [("Authorization", &*format!("Bearer {SECRET}"))]
    );
    assert_eq!(search.era, Some(EraMode::Modern));
    assert!(search.tools.allows("search_docs"));
    assert!(search.tools.allows("get_x"));
    assert!(!search.tools.allows("get_xy"));
    assert!(!search.tools.allows("search_admin_users"), "deny wins");
    assert!(!search.tools.allows("delete"));
    assert!(
        matches!(config.warnings(), [ConfigWarning::UnsetVariable { server, field, variable, .. }]
            if server == "notes" && field == "env.NOTES_TOKEN" && variable == "NOTES_TOKEN"),
        "{:?}",
        config.warnings()
    );
}

#[test]
fn both_shapes_merge_in_file_order_and_a_name_in_both_is_an_error() {
    let config = parse(
        r#"{"servers": {"b": {"command": "b"}}, "mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp"}}}"#,
    )
    .unwrap();
    assert_eq!(names(&config), ["b", "a"]);

    let text = "{\n  \"mcpServers\": {\"a\": {\"command\": \"a\"}},\n  \"servers\": {\"a\": {\"command\": \"b\"}}\n}";
    let e = invalid(text);
    assert_eq!(e.server(), Some("a"));
    assert_eq!(e.field(), Some("servers"));
    // Just after the second `"a"`.
    assert_eq!(e.position(), Some((3, 17)));
    assert_eq!(
        e.to_string(),
        "test.json:3:17: server `a`, field `servers`: server `a` is in both `mcpServers` and `servers`"
    );
}

#[test]
fn a_server_given_twice_in_one_object_is_an_error_naming_it() {
    let e = invalid(r#"{"mcpServers": {"x": {"command": "a"}, "x": {"command": "b"}}}"#);
    assert!(matches!(&e, ConfigError::Invalid { reason, .. } if reason.contains("given twice")));
    assert_eq!(e.server(), Some("x"));
    // The closing quote of the second `"x"`.
    assert_eq!(e.position(), Some((1, 42)));
}

#[test]
fn a_file_without_servers_or_not_an_object_is_an_error() {
    assert!(matches!(
        invalid(r#"{"globalShortcut": ""}"#),
        ConfigError::NoServers { file } if file == "test.json"
    ));
    let e = invalid(&format!("\"{SECRET}\""));
    assert!(matches!(e, ConfigError::Invalid { .. }), "{e}");
    assert!(!e.to_string().contains(SECRET), "{e}");
    assert!(e.to_string().contains("must be a JSON object"), "{e}");
    let e = invalid(r#"{"mcpServers": ["a"]}"#);
    assert_eq!(e.field(), Some("mcpServers"));
}

#[test]
fn an_entry_with_neither_command_nor_url_names_the_server_at_its_closing_brace() {
    let text = "{\n  \"mcpServers\": {\n    \"empty\": {\n      \"args\": []\n    }\n  }\n}";
    let e = invalid(text);
    let ConfigError::Invalid {
        file,
        line,
        column,
        server,
        field,
        reason,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(file, "test.json");
    assert_eq!((*line, *column), (5, 5));
    assert_eq!(server.as_deref(), Some("empty"));
    assert_eq!(field.as_deref(), Some("command"));
    assert!(reason.contains("neither `command`"), "{reason}");
}

#[test]
fn entries_that_do_not_fit_name_the_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"command": "a", "url": "http://x"}"#,
            "url",
            "both `command` and `url`",
        ),
        (
            r#"{"type": "stdio", "url": "http://x"}"#,
            "url",
            "takes `command`",
        ),
        (
            r#"{"type": "http", "command": "a"}"#,
            "command",
            "takes `url`",
        ),
        (r#"{"type": "sse"}"#, "url", "needs `url`"),
        (
            r#"{"type": "websocket", "url": "ws://x"}"#,
            "type",
            "unsupported `type` \"websocket\"",
        ),
        (
            r#"{"url": "http://x", "httpUrl": "http://y"}"#,
            "httpUrl",
            "both `url` and `httpUrl`",
        ),
        (r#"{"command": ""}"#, "command", "must not be empty"),
        (
            r#"{"command": 5}"#,
            "command",
            "must be a string, not a number",
        ),
        (
            r#"{"command": "a", "timeout": -1}"#,
            "timeout",
            "whole number of milliseconds",
        ),
        (
            r#"{"command": "a", "timeout": "soon"}"#,
            "timeout",
            "whole number of milliseconds",
        ),
        (
            r#"{"command": "a", "timeout": 0}"#,
            "timeout",
            "more than zero",
        ),
        (
            r#"{"command": "a", "timeout": "25h"}"#,
            "timeout",
            "at most 24 hours",
        ),
        (
            r#"{"command": "a", "era": "future"}"#,
            "era",
            "unknown era \"future\"",
        ),
        (
            r#"{"type": "sse", "url": "http://x", "era": "modern"}"#,
            "era",
            "legacy era only",
        ),
        (
            r#"{"command": "a", "enabled": true, "disabled": true}"#,
            "disabled",
            "contradicts",
        ),
        (
            r#"{"command": "a", "enabled": "yes"}"#,
            "enabled",
            "true or false",
        ),
        (
            r#"{"command": "a", "args": ["x", 8080]}"#,
            "args[1]",
            "must be a string, not a number",
        ),
        (
            r#"{"command": "a", "args": "x y"}"#,
            "args",
            "an array of strings, not a string",
        ),
        (
            r#"{"command": "a", "env": {"A": true}}"#,
            "env.A",
            "must be a string, not a boolean",
        ),
        (
            r#"{"command": "a", "command": "b"}"#,
            "command",
            "given twice",
        ),
        (
            r#"{"command": "a", "tools": ["x"]}"#,
            "tools",
            "must be an object",
        ),
        (
            r#"{"command": "a", "tools": {"allow": [1]}}"#,
            "tools.allow[0]",
            "must be a string",
        ),
        (
            r#"{"url": "http://x", "oauth": {"callbackPort": 70000}}"#,
            "oauth.callbackPort",
            "port number",
        ),
        (
            r#"{"url": "http://x", "oauth": {"scopes": 1}}"#,
            "oauth.scopes",
            "a string or an array",
        ),
    ];
    for (entry, field, reason) in cases {
        let e = invalid(&format!(r#"{{"mcpServers": {{"srv": {entry}}}}}"#));
        assert!(
            matches!(&e, ConfigError::Invalid { reason: r, .. } if r.contains(reason)),
            "{entry}: {e}"
        );
        assert_eq!(e.server(), Some("srv"), "{entry}");
        assert_eq!(e.field(), Some(*field), "{entry}: {e}");
        let (line, column) = e.position().unwrap();
        assert_eq!(line, 1, "{entry}");
        assert!(column > 16, "{entry}: column {column}");
    }
}

#[test]
fn a_bad_value_is_placed_just_after_it() {
    let text = "{\"mcpServers\": {\n  \"srv\": {\n    \"command\": \"a\",\n    \"timeout\": \"never\",\n    \"args\": []\n  }\n}}";
    let e = invalid(text);
    assert_eq!(e.field(), Some("timeout"));
    // Line 4 `    "timeout": "never",`: the closing quote is column 22.
    assert_eq!(e.position(), Some((4, 22)));
    assert_eq!(
        e.to_string(),
        "test.json:4:22: server `srv`, field `timeout`: must be a whole number of milliseconds or a string such as \"500ms\", \"30s\", \"2m\""
    );
    let text = "{\"mcpServers\": {\"srv\": {\"command\": \"a\",\n  \"args\": [\"ok\",\n    7]}}}";
    let e = invalid(text);
    assert_eq!(e.field(), Some("args[1]"));
    // serde_json has read the `]` after the number.
    assert_eq!(e.position(), Some((3, 6)));
}

#[test]
fn a_syntax_error_in_an_entry_names_the_server_and_field_with_its_position() {
    let text = "{\"mcpServers\": {\n  \"srv\": {\n    \"command\": \"a\",\n    \"args\": [\"x\" \"y\"]\n  }\n}}";
    let e = invalid(text);
    let ConfigError::Syntax {
        line,
        column,
        server,
        field,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    // Line 4 `    "args": ["x" "y"]`: the unexpected `"` is column 18.
    assert_eq!((*line, *column), (4, 18));
    assert_eq!(server.as_deref(), Some("srv"));
    assert_eq!(field.as_deref(), Some("args"));
    assert_eq!(
        e.to_string(),
        "test.json:4:18: server `srv`, field `args`: not valid JSON: expected `,` or `]`"
    );
    // Cut short: no server.
    let e = invalid("{\"mcpServers\": ");
    assert!(
        matches!(e, ConfigError::Syntax { server: None, .. }),
        "{e:?}"
    );
    // Trailing characters after the object.
    assert!(matches!(
        invalid(r#"{"mcpServers": {}} x"#),
        ConfigError::Syntax { .. }
    ));
}

#[test]
fn unknown_fields_are_kept_warned_and_not_compared() {
    let text = r#"{"mcpServers": {"srv": {
        "command": "a", "autoApprove": ["x"], "trust": true,
        "tools": {"allow": ["a*"], "transform": {}}, "headers": {"X": "y"}
    }}}"#;
    let config = parse(text).unwrap();
    let entry = &config.servers()[0];
    assert_eq!(
        entry.extra.keys().collect::<Vec<_>>(),
        ["autoApprove", "trust"]
    );
    let fields: Vec<String> = config
        .warnings()
        .iter()
        .map(|w| match w {
            ConfigWarning::UnknownField { field, .. } => format!("unknown {field}"),
            ConfigWarning::IgnoredField { field, .. } => format!("ignored {field}"),
            other => panic!("{other}"),
        })
        .collect();
    assert_eq!(
        fields,
        [
            "unknown autoApprove",
            "unknown trust",
            "unknown tools.transform",
            "ignored headers"
        ]
    );
    assert_eq!(
        config.warnings()[0].to_string(),
        "test.json: server `srv`: unknown field `autoApprove` ignored"
    );
    let mut other = entry.clone();
    other.extra.clear();
    assert_eq!(&other, entry, "fields this crate ignores are not compared");
}

#[test]
fn entries_compare_after_expansion() {
    let with_var =
        parse(r#"{"mcpServers": {"s": {"url": "http://h/mcp", "headers": {"A": "${TOKEN}"}}}}"#)
            .unwrap();
    let literal = parse(&format!(
        r#"{{"mcpServers": {{"s": {{"url": "http://h/mcp", "headers": {{"A": "{SECRET}"}}}}}}}}"#
    ))
    .unwrap();
    assert_eq!(with_var.servers(), literal.servers());
    let changed =
        parse(r#"{"mcpServers": {"s": {"url": "http://h/mcp", "headers": {"A": "other"}}}}"#)
            .unwrap();
    assert_ne!(with_var.servers(), changed.servers());
    let timed = parse(r#"{"mcpServers": {"s": {"url": "http://h/mcp", "headers": {"A": "${TOKEN}"}, "timeout": 1000}}}"#)
        .unwrap();
    assert_ne!(with_var.servers(), timed.servers());
}

#[test]
fn expansion_covers_its_fields_and_leaves_bare_dollars() {
    let text = r#"{"mcpServers": {
        "s": {"command": "${HOME}/bin/srv", "args": ["$HOME", "${EMPTY}", "${NOPE:-d}"],
              "cwd": "${HOME}/work", "env": {"K": "$TOKEN ${TOKEN}", "N": 5}},
        "h": {"url": "https://${NOPE:-example.com}/mcp", "headers": {"A": "${MISSING_ONE}"},
              "oauth": {"clientId": "${NOPE:-cli}", "clientSecret": "${TOKEN}"}}
    }}"#;
    let config = parse(text).unwrap();
    let (command, args, vars, cwd) = stdio(&config.servers()[0]);
    assert_eq!(command, "/home/me/bin/srv");
    assert_eq!(args, ["$HOME", "", "d"]);
    assert_eq!(cwd, Some(Path::new("/home/me/work")));
    assert_eq!(
        pairs(vars),
        [("K", &*format!("$TOKEN {SECRET}")), ("N", "5")]
    );
    let h = &config.servers()[1];
    assert!(
        matches!(&h.transport, ServerTransport::Http { url, .. } if url == "https://example.com/mcp")
    );
    let oauth = h.oauth.as_ref().unwrap();
    assert_eq!(oauth.client_id.as_deref(), Some("cli"));
    assert_eq!(oauth.client_secret.as_ref().unwrap().expose(), SECRET);
    let unset: Vec<_> = config
        .warnings()
        .iter()
        .filter_map(|w| match w {
            ConfigWarning::UnsetVariable {
                server,
                field,
                variable,
                ..
            } => Some((server.as_str(), field.as_str(), variable.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(unset, [("h", "headers.A", "MISSING_ONE")]);
    assert_eq!(
        config
            .warnings()
            .iter()
            .find(|w| matches!(w, ConfigWarning::UnsetVariable { .. }))
            .unwrap()
            .to_string(),
        "test.json: server `h`, field `headers.A`: variable `MISSING_ONE` is not set: left as written"
    );
}

#[test]
fn options_map_to_their_values() {
    let text = r#"{"mcpServers": {
        "a": {"command": "a", "timeout": 1500, "enabled": false, "era": "legacy"},
        "b": {"command": "b", "timeout": "2m", "disabled": false, "era": "auto"},
        "c": {"command": "c", "timeout": "250ms", "enabled": true, "disabled": false,
              "includeTools": ["x", "y*"], "excludeTools": ["yz"]},
        "d": {"httpUrl": "https://d/mcp"},
        "e": {"serverUrl": "https://e/mcp", "type": "streamableHttp"}
    }}"#;
    let config = parse(text).unwrap();
    let s = config.servers();
    assert_eq!(
        (s[0].timeout, s[0].enabled, s[0].era),
        (
            Some(Duration::from_millis(1500)),
            false,
            Some(EraMode::Legacy)
        )
    );
    assert_eq!(
        (s[1].timeout, s[1].enabled, s[1].era),
        (Some(Duration::from_secs(120)), true, Some(EraMode::Auto))
    );
    assert_eq!(
        (s[2].timeout, s[2].enabled),
        (Some(Duration::from_millis(250)), true)
    );
    assert!(s[2].tools.allows("x") && s[2].tools.allows("yes") && !s[2].tools.allows("yz"));
    assert!(!s[2].tools.allows("z"));
    assert!(s[3].tools.allows_all() && s[3].timeout.is_none() && s[3].era.is_none());
    assert!(matches!(&s[3].transport, ServerTransport::Http { url, .. } if url == "https://d/mcp"));
    assert!(matches!(&s[4].transport, ServerTransport::Http { url, .. } if url == "https://e/mcp"));
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());

    // Cline writes seconds: a small number is read as milliseconds, and said.
    let config = parse(r#"{"mcpServers": {"c": {"command": "c", "timeout": 60}}}"#).unwrap();
    assert_eq!(config.servers()[0].timeout, Some(Duration::from_millis(60)));
    assert_eq!(
        config.warnings(),
        [ConfigWarning::ShortTimeout {
            file: "test.json".into(),
            server: "c".into(),
            timeout: Duration::from_millis(60),
        }]
    );
    assert!(config.warnings()[0].to_string().contains("60 ms"));
}

#[test]
fn secrets_reach_no_error_warning_or_debug_output() {
    // A header value the transport refuses (a line feed): the error names the header only.
    let text = format!(
        r#"{{"mcpServers": {{"s": {{"url": "https://h/mcp", "headers": {{"Authorization": "Bearer {SECRET}\n"}}}}}}}}"#
    );
    let config = parse(&text).unwrap();
    let e = config.servers()[0].builder().unwrap_err();
    assert!(
        matches!(&e, BuildError::Header { server, header, .. } if server == "s" && header == "Authorization"),
        "{e:?}"
    );
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("headers.Authorization"), "{shown}");

    // A header of the wrong kind: named, its value not shown.
    let e = invalid(&format!(
        r#"{{"mcpServers": {{"s": {{"url": "https://h/mcp", "headers": {{"X-Key": ["{SECRET}"]}}}}}}}}"#
    ));
    let shown = format!("{e} {e:?}");
    assert_eq!(e.field(), Some("headers.X-Key"));
    assert!(!shown.contains(SECRET), "{shown}");
    // An entry that is a string.
    let e = invalid(&format!(r#"{{"mcpServers": {{"s": "{SECRET}"}}}}"#));
    assert!(!e.to_string().contains(SECRET), "{e}");
    // A header given twice.
    let e = invalid(&format!(
        r#"{{"mcpServers": {{"s": {{"url": "https://h/mcp", "headers": {{"A": "{SECRET}", "A": "{SECRET}"}}}}}}}}"#
    ));
    assert_eq!(e.field(), Some("headers.A"));
    assert!(!format!("{e} {e:?}").contains(SECRET), "{e}");

    // Debug of entries, OAuth settings and the URL's query.
    let config = parse(&format!(
        r#"{{"mcpServers": {{
            "a": {{"command": "a", "env": {{"K": "{SECRET}"}}}},
            "b": {{"url": "https://h/mcp?key={SECRET}", "headers": {{"A": "{SECRET}"}},
                   "oauth": {{"clientSecret": "{SECRET}", "other": "{SECRET}"}}}},
            "c": {{"command": "c", "unknown": "{SECRET}"}}
        }}}}"#
    ))
    .unwrap();
    let shown = format!("{config:?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(
        shown.contains("\"K\"") && shown.contains("\"A\""),
        "{shown}"
    );
}

#[test]
fn builders_are_made_for_each_transport() {
    let config = GroupConfig::load_with_env(fixture("claude_code_mcp.json"), env).unwrap();
    for entry in config.servers() {
        let builder = entry.builder().unwrap_or_else(|e| panic!("{e}"));
        // Header values are not in the builder's `Debug` either.
        assert!(!format!("{builder:?}").contains(SECRET), "{builder:?}");
    }
    let config = GroupConfig::load_with_env(fixture("vscode_mcp.json"), env).unwrap();
    for entry in config.servers() {
        entry.builder().unwrap();
    }
    let made = ServerEntry::stdio("x", "mcp-echo-server", ["--stdio"]);
    assert!(made.enabled && made.builder().is_ok());
    assert!(
        ServerEntry::sse("y", "http://127.0.0.1:1/sse")
            .builder()
            .is_ok()
    );
}

#[test]
fn a_url_that_is_not_http_is_a_typed_build_error() {
    let config =
        parse(r#"{"mcpServers": {"ftp": {"url": "ftp://files.example.com/mcp"}}}"#).unwrap();
    let e = config.servers()[0].builder().unwrap_err();
    assert!(
        matches!(&e, BuildError::Url { server, .. } if server == "ftp"),
        "{e:?}"
    );
    assert!(std::error::Error::source(&e).is_some());
    let e = ServerEntry::sse("s", "not a url").builder().unwrap_err();
    assert!(matches!(e, BuildError::Url { .. }));
}

#[test]
fn oauth_settings_apply_a_client_id_with_its_issuer() {
    let text = r#"{"mcpServers": {"s": {"url": "https://h/mcp", "oauth": {
        "clientId": "my-client", "clientSecret": "${TOKEN}",
        "authServerMetadataUrl": "https://as.example/tenant/.well-known/openid-configuration",
        "audiences": ["x"]
    }}}}"#;
    let config = parse(text).unwrap();
    let oauth = config.servers()[0].oauth.as_ref().unwrap();
    assert_eq!(oauth.issuer().as_deref(), Some("https://as.example/tenant"));
    assert_eq!(oauth.extra.keys().collect::<Vec<_>>(), ["audiences"]);
    let agent = std::sync::Arc::new(crate::auth::HeadlessUserAgent::new("http://127.0.0.1/cb"));
    let settings = oauth.apply(crate::auth::OAuth::builder(agent)).build();
    let shown = format!("{settings:?}");
    assert!(
        shown.contains("my-client") && shown.contains("https://as.example/tenant"),
        "{shown}"
    );
    assert!(!shown.contains(SECRET), "{shown}");

    let mut path_style = OAuthSettings {
        auth_server_metadata_url: Some(
            "https://as.example/.well-known/oauth-authorization-server/t1".into(),
        ),
        ..OAuthSettings::default()
    };
    assert_eq!(
        path_style.issuer().as_deref(),
        Some("https://as.example/t1")
    );
    path_style.auth_server_metadata_url = Some("https://as.example/metadata".into());
    assert_eq!(path_style.issuer(), None);

    // A client id without a metadata URL cannot be used: said.
    let config =
        parse(r#"{"mcpServers": {"s": {"url": "https://h/mcp", "oauth": {"clientId": "c"}}}}"#)
            .unwrap();
    assert!(matches!(
        config.warnings(),
        [ConfigWarning::IgnoredField { field, .. }] if field == "oauth.clientId"
    ));
}

#[test]
fn a_file_over_the_bound_is_not_read() {
    let mut text = String::from(r#"{"mcpServers": {}, "pad": ""#);
    text.push_str(&" ".repeat(MAX_CONFIG_BYTES));
    text.push_str("\"}");
    assert!(matches!(
        invalid(&text),
        ConfigError::TooLarge {
            limit: MAX_CONFIG_BYTES,
            ..
        }
    ));
}

#[test]
fn a_missing_file_is_a_read_error_naming_its_path() {
    let path = fixture("no-such-file.json");
    let e = GroupConfig::load(&path).unwrap_err();
    assert!(
        matches!(&e, ConfigError::Read { path: p, cause } if *p == path && cause.kind() == std::io::ErrorKind::NotFound),
        "{e:?}"
    );
    assert!(e.to_string().contains("no-such-file.json"), "{e}");
}

#[test]
fn from_entries_refuses_a_name_twice() {
    let a = ServerEntry::http("a", "http://127.0.0.1:1/mcp");
    let config = GroupConfig::from_entries("code", [a.clone()]).unwrap();
    assert_eq!(config.servers(), std::slice::from_ref(&a));
    let e = GroupConfig::from_entries("code", [a.clone(), a]).unwrap_err();
    assert_eq!(e.server(), Some("a"));
}

#[test]
fn globs_match_runs_and_single_characters() {
    assert!(glob("*", ""));
    assert!(glob("*", "anything"));
    assert!(glob("a*c", "abbbc"));
    assert!(glob("a*c", "ac"));
    assert!(!glob("a*c", "abcd"));
    assert!(glob("a?c", "abc"));
    assert!(!glob("a?c", "ac"));
    assert!(glob("*_*_*", "x_y_z"));
    assert!(glob("é?", "éü"));
    assert!(!glob("read", "read_file"));
    assert!(glob("read", "read"));
    // No exponential blow-up on many stars.
    assert!(!glob(&"*a".repeat(50), &"a".repeat(49)));
    let filter = ToolFilter::new(None::<Vec<String>>, ["rm*"]);
    assert!(filter.allows("ls") && !filter.allows("rm_rf"));
    assert!(ToolFilter::default().allows_all());
}

#[test]
fn well_known_paths_for_linux_and_macos() {
    let linux = paths_for(Some("/home/me".into()), None, false);
    let shown: Vec<(HostKind, &str)> = linux
        .iter()
        .map(|(k, p)| (*k, p.to_str().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            (
                HostKind::ClaudeDesktop,
                "/home/me/.config/Claude/claude_desktop_config.json"
            ),
            (HostKind::ClaudeCode, "/home/me/.claude.json"),
            (HostKind::Cursor, "/home/me/.cursor/mcp.json"),
            (HostKind::VsCode, "/home/me/.config/Code/User/mcp.json"),
            (HostKind::ClaudeCode, ".mcp.json"),
            (HostKind::Cursor, ".cursor/mcp.json"),
            (HostKind::VsCode, ".vscode/mcp.json"),
        ]
    );
    let xdg = paths_for(Some("/home/me".into()), Some("/cfg".into()), false);
    assert_eq!(
        xdg[0].1,
        Path::new("/cfg/Claude/claude_desktop_config.json")
    );
    let mac = paths_for(Some("/Users/me".into()), Some("/ignored".into()), true);
    assert_eq!(
        mac[0].1,
        Path::new("/Users/me/Library/Application Support/Claude/claude_desktop_config.json")
    );
    assert_eq!(
        mac[3].1,
        Path::new("/Users/me/Library/Application Support/Code/User/mcp.json")
    );
    let homeless = paths_for(None, None, false);
    assert_eq!(homeless.len(), 3);
    assert_eq!(HostKind::VsCode.to_string(), "VS Code");
}
