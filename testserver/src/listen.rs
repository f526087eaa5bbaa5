//! `subscriptions/listen` (MCP 2026-07-28): the filter a listen asks for and the part of it the
//! server honors, and the listen itself, which hears the server's changes on its
//! [`crate::ListenBus`].
//!
//! Wire shapes (`ID` is the listen request's JSON-RPC id, whatever its type):
//!
//! ```text
//! → {"id":ID,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,
//!      "resourceSubscriptions":["test://static/1"]},"_meta":{…}}}
//! ← {"method":"notifications/subscriptions/acknowledged","params":{
//!      "_meta":{"io.modelcontextprotocol/subscriptionId":ID},"notifications":{…honored…}}}
//! ← {"method":"notifications/tools/list_changed","params":{"_meta":{…subscriptionId…}}}
//! ← {"method":"notifications/resources/updated","params":{"_meta":{…},"uri":"test://static/1"}}
//! ← {"id":ID,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}
//! ```
//!
//! The acknowledgement is the first message tagged with the listen's id. The honored filter
//! holds only `true` flags, and its URIs (sorted) only when there are some. A listen ends:
//! - on the client's `notifications/cancelled {requestId: ID}` (stdio; no response, as for any
//!   cancelled request), or when its HTTP stream closes;
//! - at EOF of the connection (no response);
//! - on the `end_listens` tool: the `complete` result above, or, with
//!   [`ListenEnd::Cancel`], `notifications/cancelled {requestId: ID}` and no response;
//! - on the `break_listens` tool: no response at all (over HTTP the stream is cut).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::bus::ListenEvent;
use crate::catalog;
use crate::config::{ListenEnd, ServerConfig};
use crate::connection::Shared;
use crate::protocol::codes;
use crate::rpc::{Handled, Reply, RpcError};

/// The method.
pub(crate) const LISTEN: &str = "subscriptions/listen";
/// The acknowledgement's method.
pub(crate) const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `_meta` key tagging every message of a listen with its id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A `SubscriptionFilter`: what a listen asks for, or what the server honors of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: BTreeSet<String>,
}

impl Filter {
    /// The filter of a listen's `params.notifications` (required, an object whose flags are
    /// booleans and whose `resourceSubscriptions` is an array of strings; unknown members are
    /// ignored), else -32602.
    pub(crate) fn parse(params: &Value) -> Result<Filter, RpcError> {
        let n = params
            .get("notifications")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "{LISTEN}: params.notifications must be an object"
                ))
            })?;
        let flag = |name: &str| match n.get(name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(RpcError::invalid_params(format!(
                "{LISTEN}: notifications.{name} must be a boolean, not {other}"
            ))),
        };
        let uris = match n.get("resourceSubscriptions") {
            None => BTreeSet::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|u| {
                    u.as_str().map(str::to_owned).ok_or_else(|| {
                        RpcError::invalid_params(format!(
                            "{LISTEN}: notifications.resourceSubscriptions must hold strings, \
                             not {u}"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "{LISTEN}: notifications.resourceSubscriptions must be an array, not {other}"
                )));
            }
        };
        Ok(Filter {
            tools: flag("toolsListChanged")?,
            prompts: flag("promptsListChanged")?,
            resources: flag("resourcesListChanged")?,
            uris,
        })
    }

    /// What the server honors of this filter: everything asked, minus URIs outside the
    /// catalogue and minus [`ServerConfig::listen_honor`]'s exclusions.
    pub(crate) fn honored(&self, config: &ServerConfig) -> Filter {
        let x = &config.listen_honor;
        Filter {
            tools: self.tools && !x.no_tools,
            prompts: self.prompts && !x.no_prompts,
            resources: self.resources && !x.no_resources,
            uris: if x.no_subscriptions {
                BTreeSet::new()
            } else {
                self.uris
                    .iter()
                    .filter(|u| catalog::has_resource(u) && !x.no_uris.contains(*u))
                    .cloned()
                    .collect()
            },
        }
    }

    /// As a `SubscriptionFilter`: only the `true` flags, the URIs (sorted) only if any.
    pub(crate) fn to_json(&self) -> Value {
        let mut o = Map::new();
        for (on, name) in [
            (self.tools, "toolsListChanged"),
            (self.prompts, "promptsListChanged"),
            (self.resources, "resourcesListChanged"),
        ] {
            if on {
                o.insert(name.to_owned(), json!(true));
            }
        }
        if !self.uris.is_empty() {
            o.insert("resourceSubscriptions".to_owned(), json!(self.uris));
        }
        Value::Object(o)
    }

    /// The notification (method, params without the tag) this filter lets `event` through as.
    fn notification(&self, event: &ListenEvent) -> Option<(&'static str, Map<String, Value>)> {
        let mut params = Map::new();
        let method = match event {
            ListenEvent::ToolsChanged if self.tools => "notifications/tools/list_changed",
            ListenEvent::PromptsChanged if self.prompts => "notifications/prompts/list_changed",
            ListenEvent::ResourcesChanged if self.resources => {
                "notifications/resources/list_changed"
            }
            ListenEvent::Updated(uri) if self.uris.contains(uri) => {
                params.insert("uri".to_owned(), json!(uri));
                "notifications/resources/updated"
            }
            _ => return None,
        };
        Some((method, params))
    }
}

/// `params._meta` tagging a message with the listen `id`.
fn tag(id: &Value) -> Value {
    json!({SUBSCRIPTION_ID: id})
}

/// `params` (an object) with the listen's tag in its `_meta`.
fn tagged(id: &Value, mut params: Map<String, Value>) -> Value {
    params.insert("_meta".to_owned(), tag(id));
    Value::Object(params)
}

/// Serves one `subscriptions/listen` (its `_meta` already checked, its receipt counted): -32601
/// when [`ServerConfig::listen`] is off, -32602 for a bad filter; else the acknowledgement, then
/// the honored changes, until the listen ends (see the module's documentation). Cancelled or
/// aborted, it is forgotten (its future dropped).
pub(crate) async fn listen(shared: &Shared, params: &Value, id: &Value) -> Handled {
    let config = &shared.config;
    if !config.listen {
        return Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {LISTEN} (the server runs with --listen off)"),
        ));
    }
    let asked = Filter::parse(params)?;
    let honored = asked.honored(config);
    let bus = &shared.listen;
    // Subscribed before the acknowledgement: nothing published after it is missed.
    let mut events = bus.subscribe();
    let _registered = bus.register(id, asked.to_json(), honored.to_json());
    let mut closing = shared.closing();
    let mut ack = Map::new();
    ack.insert("notifications".to_owned(), honored.to_json());
    shared.notify(ACKNOWLEDGED, tagged(id, ack));
    tracing::debug!(%id, honored = %honored.to_json(), "listen acknowledged");
    loop {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = closing.wait_for(|c| *c) => {
                tracing::debug!(%id, "listen dropped: the connection is closing");
                return Ok(Reply::Answered);
            }
        };
        match event {
            Ok(ListenEvent::End) => {
                tracing::debug!(%id, how = config.listen_end.name(), "listen ended by the server");
                return Ok(match config.listen_end {
                    ListenEnd::Complete => Reply::Result(json!({"_meta": tag(id)})),
                    ListenEnd::Cancel => {
                        shared.notify(
                            "notifications/cancelled",
                            json!({"requestId": id, "reason": "end_listens (--listen-end cancel)"}),
                        );
                        Reply::Answered
                    }
                });
            }
            Ok(ListenEvent::Break) => {
                tracing::debug!(%id, "listen broken: no response");
                return Ok(Reply::Answered);
            }
            Ok(event) => {
                if let Some((method, params)) = honored.notification(&event) {
                    shared.notify(method, tagged(id, params));
                }
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(%id, missed = n, "listen fell behind: events missed");
            }
            // The bus lives as long as the connection: not reached.
            Err(broadcast::error::RecvError::Closed) => return Ok(Reply::Answered),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenHonor;

    #[test]
    fn filters_parse_and_reject() {
        let f = Filter::parse(&json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": false,
            "resourceSubscriptions": ["b", "a"], "future": 1}}))
        .unwrap();
        assert_eq!(
            f.to_json(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["a", "b"]})
        );
        assert_eq!(
            Filter::parse(&json!({"notifications": {}}))
                .unwrap()
                .to_json(),
            json!({})
        );
        for bad in [
            json!({}),
            json!({"notifications": []}),
            json!({"notifications": {"toolsListChanged": "yes"}}),
            json!({"notifications": {"resourceSubscriptions": "test://static/1"}}),
            json!({"notifications": {"resourceSubscriptions": [1]}}),
        ] {
            let e = Filter::parse(&bad).unwrap_err();
            assert_eq!(e.code, codes::INVALID_PARAMS, "{bad}");
        }
    }

    #[test]
    fn honored_drops_unknown_uris_and_exclusions() {
        let asked = Filter::parse(&json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["test://static/1", "test://static/2", "test://nope",
                                      "test://dynamic/7"]}}))
        .unwrap();
        let all = asked.honored(&ServerConfig::echo());
        assert_eq!(
            all.to_json()["resourceSubscriptions"],
            json!(["test://dynamic/7", "test://static/1", "test://static/2"])
        );
        let config = ServerConfig {
            listen_honor: ListenHonor::parse("-prompts,-test://static/2").unwrap(),
            ..ServerConfig::echo()
        };
        assert_eq!(
            asked.honored(&config).to_json(),
            json!({"toolsListChanged": true, "resourcesListChanged": true,
                   "resourceSubscriptions": ["test://dynamic/7", "test://static/1"]})
        );
        let config = ServerConfig {
            listen_honor: ListenHonor::parse("-tools,-resources,-subscriptions").unwrap(),
            ..ServerConfig::echo()
        };
        assert_eq!(
            asked.honored(&config).to_json(),
            json!({"promptsListChanged": true})
        );
    }

    #[test]
    fn notifications_follow_the_filter() {
        let f = Filter::parse(&json!({"notifications": {
            "toolsListChanged": true, "resourceSubscriptions": ["test://static/1"]}}))
        .unwrap();
        let method = |e: ListenEvent| f.notification(&e).map(|(m, p)| (m, Value::Object(p)));
        assert_eq!(
            method(ListenEvent::ToolsChanged),
            Some(("notifications/tools/list_changed", json!({})))
        );
        assert_eq!(method(ListenEvent::PromptsChanged), None);
        assert_eq!(method(ListenEvent::ResourcesChanged), None);
        assert_eq!(
            method(ListenEvent::Updated("test://static/1".into())),
            Some((
                "notifications/resources/updated",
                json!({"uri": "test://static/1"})
            ))
        );
        assert_eq!(method(ListenEvent::Updated("test://static/2".into())), None);
        assert_eq!(
            tagged(&json!("l-1"), Map::new()),
            json!({"_meta": {SUBSCRIPTION_ID: "l-1"}})
        );
    }
}
