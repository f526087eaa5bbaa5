//! `mcpc conformance URL`: the client side of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`; `scripts/conformance` runs it).
//!
//! The harness starts a mock server for one scenario, then runs `mcpc conformance <URL>` with
//! the scenario in `MCP_CONFORMANCE_SCENARIO`, its data (JSON) in `MCP_CONFORMANCE_CONTEXT` and
//! the wire revision in `MCP_CONFORMANCE_PROTOCOL_VERSION`; it grades the traffic it saw. mcpc
//! does what the scenario asks over Streamable HTTP and exits 0, or exits non-zero with one
//! `mcpc: conformance <scenario>: <why>` line. At the 2025 wire revisions (the handshake era)
//! mcpc speaks the legacy era only (a probe would break the suite's per-revision schema check);
//! at 2026-07-28 it negotiates (`--era auto`), as a host would. The `auth/*` scenarios of
//! [`AUTH_SCENARIOS`] authorize as a host would, then call every tool; any other scenario is
//! refused with exit 2.

use mcp_runtime::{
    Client, ClientBuilder, ElicitParams, ElicitResult, Handlers, RequestContext, RpcError,
};
use serde_json::{Map, Value, json};

use crate::args::Global;
use crate::connect::{configure, connect_built, finish};
use crate::error::{CliError, Exit};
use crate::output::content_text;
use crate::sanitize::redact_url;
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
    /// 2026-07-28: the per-request `_meta` and the version header (list the tools).
    RequestMetadata,
    /// 2026-07-28: list the tools whose schema has a network `$ref`, never fetching it.
    JsonSchemaRefNoDeref,
    /// 2026-07-28: `Mcp-Method` / `Mcp-Name` on every POST: call every tool, read every
    /// resource, get every prompt.
    HttpStandardHeaders,
    /// 2026-07-28: `Mcp-Param-*` for `x-mcp-header` arguments: the calls the context names.
    HttpCustomHeaders,
    /// 2026-07-28: tools with invalid `x-mcp-header` annotations are left out; call the rest.
    HttpInvalidToolHeaders,
    /// 2026-07-28 (SEP-2322, MRTR): tools answering `input_required`; the elicitation is
    /// accepted with `confirmed: true`.
    RequestState,
    /// `auth/*`: authorize as a host would (OAuth 2.1 through the library's public API, the
    /// authorization server's redirect taken headlessly), then list the tools and call each.
    Auth,
}

/// The authorization scenarios mcpc performs (every required one of both revisions).
pub const AUTH_SCENARIOS: [&str; 25] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
];

/// The redirect URI mcpc's conformance client registers and sends (never listened on: the
/// suite's authorization server redirects at once, and the headless user agent reads where).
const CONFORMANCE_REDIRECT: &str = "http://localhost:3000/callback";

/// The Client ID Metadata Document URL the suite expects (it never fetches it).
const CONFORMANCE_CLIENT_METADATA: &str = "https://conformance-test.local/client-metadata.json";

impl Scenario {
    /// Every scenario mcpc performs, by the suite's name.
    pub const ALL: [(&'static str, Scenario); 11] = [
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
        ("request-metadata", Scenario::RequestMetadata),
        ("json-schema-ref-no-deref", Scenario::JsonSchemaRefNoDeref),
        ("http-standard-headers", Scenario::HttpStandardHeaders),
        ("http-custom-headers", Scenario::HttpCustomHeaders),
        (
            "http-invalid-tool-headers",
            Scenario::HttpInvalidToolHeaders,
        ),
        ("sep-2322-client-request-state", Scenario::RequestState),
    ];

    /// The scenario named `name`, or why mcpc does not perform it (exit 2).
    pub fn from_name(name: &str) -> Result<Scenario, CliError> {
        if let Some((_, s)) = Self::ALL.iter().find(|(n, _)| *n == name) {
            return Ok(*s);
        }
        if AUTH_SCENARIOS.contains(&name) {
            return Ok(Scenario::Auth);
        }
        let what = format!("conformance {name}");
        let known: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
        Err(CliError::usage(
            what,
            if name.starts_with("auth/") {
                format!(
                    "this authorization scenario is not supported (supported: {})",
                    AUTH_SCENARIOS.join(", ")
                )
            } else {
                format!("not supported yet (supported: {})", known.join(", "))
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
    /// The era mcpc speaks at this wire revision: legacy at the 2025 ones (or unset), and
    /// negotiated at 2026-07-28.
    pub fn era(&self) -> mcp_runtime::EraMode {
        match &self.version {
            Some(v) if mcp_runtime::MODERN_PROTOCOL_VERSIONS.contains(&v.as_str()) => {
                mcp_runtime::EraMode::Auto
            }
            Some(_) | None => mcp_runtime::EraMode::Legacy,
        }
    }

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
        // The handshake era: 2024-11-05 … 2025-11-25 (and unset, from harnesses before 0.2);
        // the stateless one: 2026-07-28.
        if let Some(v) = &version
            && !(v.starts_with("2024-")
                || v.starts_with("2025-")
                || mcp_runtime::MODERN_PROTOCOL_VERSIONS.contains(&v.as_str()))
        {
            return Err(CliError::usage(
                format!("conformance {name}"),
                format!(
                    "protocol version {v} is not one mcpc speaks (2024-11-05 … 2025-11-25, \
                     2026-07-28)"
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
    if setup.scenario == Scenario::RequestState {
        handlers = handlers.elicitation(|_params: ElicitParams, _cx: RequestContext| async move {
            outln!("elicitation -> accept {{\"confirmed\": true}}");
            Ok::<_, RpcError>(ElicitResult::accept(
                [("confirmed".to_owned(), json!(true))]
                    .into_iter()
                    .collect(),
            ))
        });
    }
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
    let mut builder = configure(builder, g, handlers).era(setup.era());
    if setup.scenario == Scenario::Auth {
        builder = builder.oauth(oauth_settings(&setup));
    }
    let client = connect_built(builder, redact_url(url), g, interrupt, &what).await?;
    let result = tokio::select! {
        biased;
        r = perform(&client, &setup, &what) => r,
        caught = interrupt.fired() => Err(CliError::signalled(&what, caught)),
    };
    finish(&client).await;
    if result.is_ok() {
        outln!("RESULT {} ok", setup.name);
    }
    result
}

/// The OAuth settings of an `auth/*` scenario, as a host would give them: a memory store, the
/// headless user agent, the suite's metadata document URL, and the pre-registered credentials
/// of the context, if any. Nothing is authorized before connecting: the connection authorizes
/// when the server asks (its 401 or 403), as the table says.
fn oauth_settings(setup: &Setup) -> mcp_runtime::auth::OAuth {
    use mcp_runtime::auth::{HeadlessUserAgent, OAuth};
    let mut oauth = OAuth::builder(std::sync::Arc::new(HeadlessUserAgent::new(
        CONFORMANCE_REDIRECT,
    )))
    .client_name("mcpc")
    .metadata_document(CONFORMANCE_CLIENT_METADATA);
    let field = |k: &str| setup.context.get(k).and_then(Value::as_str);
    if let (Some(id), Some(issuer)) = (field("client_id"), field("issuer")) {
        oauth = oauth.pre_registered(issuer, id, field("client_secret").map(str::to_owned));
    }
    oauth.build()
}

/// Arguments for a tool that fill every required property of its input schema with a value of
/// its type (the first of an `enum`), so that a server which checks them accepts the call.
pub fn stub_arguments(input_schema: &Value) -> Value {
    let properties = input_schema.get("properties").and_then(Value::as_object);
    let required = input_schema.get("required").and_then(Value::as_array);
    let mut args = Map::new();
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let schema = properties.and_then(|p| p.get(name));
        let value = match schema.and_then(|s| s.get("enum")).and_then(Value::as_array) {
            Some(values) if !values.is_empty() => values[0].clone(),
            _ => match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
                Some("integer" | "number") => json!(1),
                Some("boolean") => json!(true),
                Some("object") => json!({}),
                Some("array") => json!([]),
                Some("null") => Value::Null,
                _ => json!("x"),
            },
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

/// Calls `tool` with `arguments`; a tool error (`isError`) or a failed call fails the scenario.
async fn call(client: &Client, what: &str, tool: &str, arguments: Value) -> Result<(), CliError> {
    let result = client.call_tool(tool, arguments).await.map_err(|e| {
        let mut err = CliError::call(what, &e);
        err.why = format!("tools/call {tool}: {}", err.why);
        err
    })?;
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

/// The scenario's requests, on a connected client.
async fn perform(client: &Client, setup: &Setup, what: &str) -> Result<(), CliError> {
    let scenario = setup.scenario;
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
        Scenario::Initialize | Scenario::RequestMetadata | Scenario::JsonSchemaRefNoDeref => {
            return Ok(());
        }
        Scenario::RequestState => {
            for tool in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                call(client, what, tool, json!({})).await?;
            }
            return Ok(());
        }
        Scenario::HttpCustomHeaders => {
            let calls = setup.context.get("toolCalls").and_then(Value::as_array);
            for c in calls.into_iter().flatten() {
                let Some(tool) = c.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let arguments = c.get("arguments").cloned().unwrap_or_else(|| json!({}));
                call(client, what, tool, arguments).await?;
            }
            return Ok(());
        }
        Scenario::Auth => {
            for tool in &tools {
                call(client, what, &tool.name, stub_arguments(&tool.input_schema)).await?;
            }
            return Ok(());
        }
        Scenario::HttpInvalidToolHeaders | Scenario::HttpStandardHeaders => {
            for tool in &tools {
                call(client, what, &tool.name, stub_arguments(&tool.input_schema)).await?;
            }
            if scenario == Scenario::HttpInvalidToolHeaders {
                return Ok(());
            }
            let resources = client
                .list_all_resources()
                .await
                .map_err(|e| fail("resources/list", e))?;
            for r in &resources {
                client
                    .read_resource(&r.uri)
                    .await
                    .map_err(|e| fail(&format!("resources/read {}", r.uri), e))?;
                outln!("read {}", r.uri);
            }
            let prompts = client
                .list_all_prompts()
                .await
                .map_err(|e| fail("prompts/list", e))?;
            for p in &prompts {
                let args: Map<String, Value> = p
                    .arguments
                    .iter()
                    .filter(|a| a.required)
                    .map(|a| (a.name.clone(), json!("x")))
                    .collect();
                client
                    .get_prompt(&p.name, Value::Object(args))
                    .await
                    .map_err(|e| fail(&format!("prompts/get {}", p.name), e))?;
                outln!("prompt {}", p.name);
            }
            return Ok(());
        }
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
            vars(&[(SCENARIO_VAR, "auth/dpop")]),
            vars(&[(SCENARIO_VAR, "auth/2026-metadata")]),
            vars(&[(SCENARIO_VAR, "tools_call"), (VERSION_VAR, "2099-01-01")]),
            vars(&[(SCENARIO_VAR, "tools_call"), (CONTEXT_VAR, "{bad")]),
        ] {
            let e = Setup::from_vars(v).unwrap_err();
            assert_eq!(e.exit, Exit::Usage, "{e}");
        }
        let e = Setup::from_vars(vars(&[(SCENARIO_VAR, "auth/dpop")])).unwrap_err();
        assert!(e.to_string().contains("auth/metadata-default"), "{e}");
        for name in AUTH_SCENARIOS {
            let s = Setup::from_vars(vars(&[(SCENARIO_VAR, name)])).unwrap();
            assert_eq!(s.scenario, Scenario::Auth);
        }
        let e = Setup::from_vars(vars(&[
            (SCENARIO_VAR, "tools_call"),
            (VERSION_VAR, "2099-01-01"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("2099-01-01 is not one"), "{e}");
        let modern = Setup::from_vars(vars(&[
            (SCENARIO_VAR, "request-metadata"),
            (VERSION_VAR, "2026-07-28"),
        ]))
        .unwrap();
        assert_eq!(modern.era(), mcp_runtime::EraMode::Auto);
        let legacy = Setup::from_vars(vars(&[(SCENARIO_VAR, "tools_call")])).unwrap();
        assert_eq!(legacy.era(), mcp_runtime::EraMode::Legacy);
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
