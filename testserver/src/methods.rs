//! The handshake era's methods: the table that routes a request to the catalogue, the tools
//! or the session record, and the capabilities the server declares. The modern era answers
//! through the same table after its own checks.

use serde_json::{Value, json};

use crate::catalog;
use crate::connection::Shared;
use crate::protocol::codes;
use crate::rpc::{Handled, Reply, RpcError};
use crate::tasks;
use crate::tools;

/// The server's capabilities (the same in both eras).
pub(crate) fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {},
        "completions": {},
    })
}

/// The capabilities of a handshake: [`capabilities`], and `tasks` with [`ServerConfig::tasks`].
pub(crate) fn capabilities_for(config: &crate::config::ServerConfig) -> Value {
    let mut caps = capabilities();
    if config.tasks {
        caps["tasks"] = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
    }
    caps
}

/// The handshake era's methods (the modern era's `modern::dispatch` ends up here too).
pub(crate) async fn dispatch(shared: &Shared, method: &str, params: Value, id: &Value) -> Handled {
    let ok = |v: Value| Ok(Reply::Result(v));
    match method {
        "ping" => ok(json!({})),
        "tools/list" => ok(catalog::list_tools(&shared.config, &params, false)?),
        "tools/call" => match params.get("name").and_then(Value::as_str) {
            Some(name) if tasks::is_task_tool(&shared.config, name) => {
                tasks::call_legacy(&shared.config, name, &params).await
            }
            _ => tools::call(shared, &params, id).await,
        },
        "tasks/get" if shared.config.tasks => tasks::get(&shared.config, &params),
        "tasks/result" if shared.config.tasks => tasks::result(shared, &params).await,
        "tasks/cancel" if shared.config.tasks => tasks::cancel(&shared.config, &params),
        "tasks/list" if shared.config.tasks => tasks::list(&shared.config),
        "resources/list" => ok(catalog::list_resources(&shared.config)),
        "resources/templates/list" => ok(catalog::list_resource_templates(&shared.config)),
        "resources/read" => ok(catalog::read_resource(&shared.config, &params)?),
        "resources/subscribe" | "resources/unsubscribe" => {
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::invalid_params("missing uri"))?;
            let mut s = shared.session();
            if method == "resources/subscribe" {
                s.subscriptions.insert(uri.to_owned());
            } else {
                s.subscriptions.remove(uri);
            }
            ok(json!({}))
        }
        "prompts/list" => ok(catalog::list_prompts(&shared.config)),
        "prompts/get" => ok(catalog::get_prompt(&shared.config, &params)?),
        "completion/complete" => ok(catalog::complete(&params)),
        "logging/setLevel" => {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::invalid_params("missing level"))?;
            if catalog::level_rank(level).is_none() {
                return Err(RpcError::invalid_params(format!(
                    "unknown logging level: {level}"
                )));
            }
            shared.session().log_level = Some(level.to_owned());
            ok(json!({}))
        }
        _ => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
}
