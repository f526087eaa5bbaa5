//! `mcpc conformance URL`: the client side of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`; `scripts/conformance` runs it).
//!
//! The harness starts a mock server for one scenario, then runs `mcpc conformance <URL>` with
//! the scenario in `MCP_CONFORMANCE_SCENARIO`, its data (JSON) in `MCP_CONFORMANCE_CONTEXT` and
//! the wire revision in `MCP_CONFORMANCE_PROTOCOL_VERSION`; it grades the traffic it saw. mcpc
//! does what the scenario asks over Streamable HTTP and exits 0, or exits non-zero with one
//! `mcpc: conformance <scenario>: <why>` line. Scenarios of the 2025-11-25 set (the handshake
//! era) are supported; the 2026-07-28 wire and the `auth/*` scenarios are refused with exit 2.

use mcp_runtime::{
    Client, ClientBuilder, ElicitParams, ElicitResult, Handlers, RequestContext, RpcError,
};
use serde_json::{Map, Value, json};

use crate::args::Global;
use crate::connect::{configure, connect_built, finish, redact_url};
use crate::error::{CliError, Exit};
use crate::output::content_text;
use crate::signals::Interrupt;

/// The scenario's name.
pub const SCENARIO_VAR: &str = "MCP_CONFORMANCE_SCENARIO";
/// The scenario's data, JSON (optional).
pub const CONTEXT_VAR: &str = "MCP_CONFORMANCE_CONTEXT";
/// The wire revision the mock server speaks (unset by harnesses before 0.2: the handshake era).
pub const VERSION_VAR: &str = "MCP_CONFORMANCE_PROTOCOL_VERSION";

/// The scenarios mcpc performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Connect (the initialize handshake), list the tools, close.
    Initialize,
    /// List the tools and call `add_numbers` with numbers.
    ToolsCall,
    /// SEP-1034: accept the server's elicitation with every default of its schema.
    ElicitationDefaults,
    /// SEP-1699: call `test_reconnection`, whose answer comes after the server broke the SSE
    /// stream (the transport resumes it with `Last-Event-ID` after the server's `retry`).
    SseRetry,
    /// Echo the focal tool's inputSchema back unchanged (JSON Schema 2020-12 keywords).
    JsonSchemaPreservation,
}

impl Scenario {
    /// Every scenario mcpc performs, by the suite's name.
    pub const ALL: [(&'static str, Scenario); 5] = [
        ("initialize", Scenario::Initialize),
        ("tools_call", Scenario::ToolsCall),
        (
            "elicitation-sep1034-client-defaults",
            Scenario::ElicitationDefaults,
        ),
        ("sse-retry", Scenario::SseRetry),
        (
            "json-schema-2020-12-preservation",
            Scenario::JsonSchemaPreservation,
        ),
    ];

    /// The scenario named `name`, or why mcpc does not perform it (exit 2).
    pub fn from_name(name: &str) -> Result<Scenario, CliError> {
        if let Some((_, s)) = Self::ALL.iter().find(|(n, _)| *n == name) {
            return Ok(*s);
        }
        let what = format!("conformance {name}");
        let known: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
        Err(CliError::usage(
            what,
            if name.starts_with("auth/") {
                format!(
                    "authorization scenarios are not supported yet (mcpc has no OAuth); \
                     supported: {}",
                    known.join(", ")
                )
            } else {
                format!(
                    "not supported yet (supported: {}; the 2026-07-28 scenarios need the \
                     stateless era)",
                    known.join(", ")
                )
            },
        ))
    }
}

/// The scenario, its data and the wire revision, from the environment.
#[derive(Debug)]
pub struct Setup {
    /// The scenario's name as given.
    pub name: String,
    /// The scenario.
    pub scenario: Scenario,
    /// `MCP_CONFORMANCE_CONTEXT`, parsed (`{}` when unset).
    pub context: Value,
    /// `MCP_CONFORMANCE_PROTOCOL_VERSION`, if set.
    pub version: Option<String>,
}

impl Setup {
    /// Reads the harness's variables through `var`; usage errors (exit 2) for what mcpc does
    /// not support.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Setup, CliError> {
        let Some(name) = var(SCENARIO_VAR).filter(|s| !s.is_empty()) else {
            return Err(CliError::usage(
                "conformance",
                format!("{SCENARIO_VAR} is not set (the conformance harness sets it)"),
            ));
        };
        let version = var(VERSION_VAR).filter(|v| !v.is_empty());
        // The handshake era: 2024-11-05 … 2025-11-25 (and unset, from harnesses before 0.2).
        if let Some(v) = &version
            && !(v.starts_with("2024-") || v.starts_with("2025-"))
        {
            return Err(CliError::usage(
                format!("conformance {name}"),
                format!(
                    "protocol version {v} is not supported yet (mcpc speaks the handshake era, \
                     2024-11-05 … 2025-11-25; the stateless 2026-07-28 wire is not available yet)"
                ),
            ));
        }
        let scenario = Scenario::from_name(&name)?;
        let context = match var(CONTEXT_VAR).filter(|c| !c.trim().is_empty()) {
            None => json!({}),
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                CliError::usage(
                    format!("conformance {name}"),
                    format!("{CONTEXT_VAR} is not JSON: {e}"),
                )
            })?,
        };
        Ok(Setup {
            name,
            scenario,
            context,
            version,
        })
    }
}

/// The answer to a form elicitation that takes every default: `accept`, with each property
/// of the requested schema that has a `default` set to it (SEP-1034).
pub fn accept_defaults(params: &ElicitParams) -> ElicitResult {
    match params {
        ElicitParams::Form(form) => {
            let content: Map<String, Value> = form
                .requested_schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, p)| Some((k.clone(), p.get("default")?.clone())))
                .collect();
            ElicitResult::accept(content)
        }
        _ => ElicitResult::decline(),
    }
}

/// `mcpc conformance URL`: performs the scenario the environment names against `url`.
pub async fn run(g: &Global, url: &str, interrupt: &Interrupt) -> Result<(), CliError> {
    let setup = Setup::from_vars(|k| std::env::var(k).ok())?;
    let what = format!("conformance {}", setup.name);
    outln!(
        "scenario={} wire={} url={}",
        setup.name,
        setup.version.as_deref().unwrap_or("(unset: 2025-11-25)"),
        redact_url(url)
    );
    if setup.context.as_object().is_some_and(|c| !c.is_empty()) {
        outln!(
            "context keys: {:?}",
            setup
                .context
                .as_object()
                .map(|c| c.keys().collect::<Vec<_>>())
        );
    }
    let mut handlers = Handlers::new();
    if setup.scenario == Scenario::ElicitationDefaults {
        handlers = handlers.elicitation(|params: ElicitParams, _cx: RequestContext| async move {
            let answer = accept_defaults(&params);
            outln!(
                "elicitation -> {}",
                serde_json::to_string(&answer).unwrap_or_default()
            );
            Ok::<_, RpcError>(answer)
        });
    }
    let builder = ClientBuilder::streamable_http(url).map_err(|e| {
        CliError::usage(
            format!("{what}: {}", redact_url(url)),
            format!("not a usable URL ({e})"),
        )
    })?;
    let builder = configure(builder, g, handlers);
    let client = connect_built(builder, redact_url(url), g, interrupt, &what).await?;
    let result = tokio::select! {
        biased;
        r = perform(&client, setup.scenario, &what) => r,
        caught = interrupt.fired() => Err(CliError::signalled(&what, caught)),
    };
    finish(&client).await;
    if result.is_ok() {
        outln!("RESULT {} ok", setup.name);
    }
    result
}

/// The scenario's requests, on a connected client.
async fn perform(client: &Client, scenario: Scenario, what: &str) -> Result<(), CliError> {
    let fail = |step: &str, e: mcp_runtime::Error| {
        let mut err = CliError::call(what, &e);
        err.why = format!("{step}: {}", err.why);
        err
    };
    if let Some(info) = client.server_info() {
        outln!(
            "connected: {} {}, protocol {}",
            info.name(),
            info.version(),
            info.protocol_version
        );
    }
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| fail("tools/list", e))?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    outln!("tools: {}", names.join(", "));
    let (tool, arguments) = match scenario {
        Scenario::Initialize => return Ok(()),
        Scenario::ToolsCall => ("add_numbers", json!({"a": 2, "b": 3})),
        Scenario::ElicitationDefaults => ("test_client_elicitation_defaults", json!({})),
        Scenario::SseRetry => ("test_reconnection", json!({})),
        Scenario::JsonSchemaPreservation => {
            let Some(focal) = tools.iter().find(|t| t.name == "json_schema_2020_12_tool") else {
                return Err(CliError::new(
                    Exit::Server,
                    what,
                    "the server lists no json_schema_2020_12_tool",
                ));
            };
            ("json_schema_echo", json!({"schema": focal.input_schema}))
        }
    };
    let result = client
        .call_tool(tool, arguments)
        .await
        .map_err(|e| fail(&format!("tools/call {tool}"), e))?;
    let text: Vec<String> = result
        .content
        .iter()
        .map(|c| content_text(&serde_json::to_value(c).unwrap_or_default()))
        .collect();
    let text = text.join(" ");
    outln!("{tool} -> {}", text.trim_end());
    if result.is_error == Some(true) {
        return Err(CliError::new(
            Exit::Server,
            what,
            format!("{tool} reported isError: {}", text.trim_end()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_environment_names_the_scenario() {
        let s = Setup::from_vars(vars(&[
            (SCENARIO_VAR, "tools_call"),
            (VERSION_VAR, "2025-11-25"),
            (CONTEXT_VAR, r#"{"name":"x"}"#),
        ]))
        .unwrap();
        assert_eq!(s.scenario, Scenario::ToolsCall);
        assert_eq!(s.context["name"], "x");
        let s = Setup::from_vars(vars(&[(SCENARIO_VAR, "initialize")])).unwrap();
        assert_eq!((s.scenario, s.version), (Scenario::Initialize, None));
    }

    #[test]
    fn what_is_not_supported_is_a_usage_error() {
        for v in [
            vars(&[]),
            vars(&[(SCENARIO_VAR, "auth/metadata-default")]),
            vars(&[(SCENARIO_VAR, "request-metadata")]),
            vars(&[(SCENARIO_VAR, "tools_call"), (VERSION_VAR, "2026-07-28")]),
            vars(&[(SCENARIO_VAR, "tools_call"), (CONTEXT_VAR, "{bad")]),
        ] {
            let e = Setup::from_vars(v).unwrap_err();
            assert_eq!(e.exit, Exit::Usage, "{e}");
        }
        let e = Setup::from_vars(vars(&[(SCENARIO_VAR, "auth/metadata-default")])).unwrap_err();
        assert!(e.to_string().contains("not supported yet"), "{e}");
        let e = Setup::from_vars(vars(&[
            (SCENARIO_VAR, "tools_call"),
            (VERSION_VAR, "2026-07-28"),
        ]))
        .unwrap_err();
        assert!(
            e.to_string().contains("2026-07-28 is not supported yet"),
            "{e}"
        );
    }

    #[test]
    fn an_elicitation_is_accepted_with_the_defaults() {
        let params = ElicitParams::from_value(json!({
            "message": "defaults please",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "nickname": {"type": "string"}
            }}
        }))
        .unwrap();
        let answer = serde_json::to_value(accept_defaults(&params)).unwrap();
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30,
                "score": 95.5, "status": "active", "verified": true}})
        );
    }
}
