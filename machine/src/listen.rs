//! The listen of a 2026-07-28 connection (`subscriptions/listen`): what the client asks the
//! server to tell it (list changes, resource updates), the wire shapes of the request, of its
//! acknowledgement and of the tag its notifications carry, and what the machine keeps of the
//! listens open. Which listen is opened, replaced, ended or reopened is decided by the table;
//! this module only holds the data and the pure functions the handlers use.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::event::Notification;
use crate::request::RequestId;

/// The method of the request that opens a listen.
pub(crate) const LISTEN_METHOD: &str = "subscriptions/listen";
/// The method of the server's acknowledgement of a listen.
pub(crate) const ACK_METHOD: &str = "notifications/subscriptions/acknowledged";
/// The notifications a listen carries (besides its acknowledgement).
pub(crate) const NOTIFICATION_METHODS: [&str; 4] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
];
/// The `_meta` key that tags a listen's notifications with the listen's request id.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What a listen asks for, or what a server honors of it (the `SubscriptionFilter` of
/// 2026-07-28): list changes by kind, and updates of resources by URI.
///
/// Not a subscription by itself: the machine keeps one listen per connection for everything
/// the client wants.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListenFilter {
    /// `notifications/tools/list_changed`.
    pub tools: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts: bool,
    /// `notifications/resources/list_changed`.
    pub resources: bool,
    /// `notifications/resources/updated` for these URIs.
    pub uris: BTreeSet<String>,
}

impl ListenFilter {
    /// Whether it asks for nothing.
    pub fn is_empty(&self) -> bool {
        !self.tools && !self.prompts && !self.resources && self.uris.is_empty()
    }

    /// What both ask for.
    pub fn intersect(&self, other: &ListenFilter) -> ListenFilter {
        ListenFilter {
            tools: self.tools && other.tools,
            prompts: self.prompts && other.prompts,
            resources: self.resources && other.resources,
            uris: self.uris.intersection(&other.uris).cloned().collect(),
        }
    }

    /// What either asks for.
    pub fn union(&self, other: &ListenFilter) -> ListenFilter {
        ListenFilter {
            tools: self.tools || other.tools,
            prompts: self.prompts || other.prompts,
            resources: self.resources || other.resources,
            uris: self.uris.union(&other.uris).cloned().collect(),
        }
    }

    /// What `self` asks for and `other` does not.
    pub fn minus(&self, other: &ListenFilter) -> ListenFilter {
        ListenFilter {
            tools: self.tools && !other.tools,
            prompts: self.prompts && !other.prompts,
            resources: self.resources && !other.resources,
            uris: self.uris.difference(&other.uris).cloned().collect(),
        }
    }

    /// Whether everything `self` asks for is in `other`.
    pub fn is_subset(&self, other: &ListenFilter) -> bool {
        (!self.tools || other.tools)
            && (!self.prompts || other.prompts)
            && (!self.resources || other.resources)
            && self.uris.is_subset(&other.uris)
    }

    /// The filter as the request's `notifications` object: only the kinds asked for, and the
    /// URIs (sorted) only when there are some.
    pub fn to_json(&self) -> Value {
        let mut o = serde_json::Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                o.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.uris.is_empty() {
            o.insert(
                "resourceSubscriptions".into(),
                self.uris.iter().cloned().collect(),
            );
        }
        Value::Object(o)
    }

    /// The filter a `notifications` object names. Anything malformed counts as not asked
    /// for (a flag that is not `true`, a URI that is not a string): an acknowledgement that
    /// says nothing honors nothing.
    pub fn from_json(v: Option<&Value>) -> ListenFilter {
        let flag = |key: &str| v.and_then(|v| v.get(key)) == Some(&Value::Bool(true));
        let uris = v
            .and_then(|v| v.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        ListenFilter {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            uris,
        }
    }
}

/// What the client wants told and what its listens cover now: emitted by the machine
/// ([`crate::Action::Listening`]) whenever either changes.
///
/// `covered` is what acknowledged listens honor; a kind in `wanted` but not in `covered` may
/// change unheard (before the first acknowledgement, or while a lost listen is reopened).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListenStatus {
    /// Everything the client wants told.
    pub wanted: ListenFilter,
    /// What the server honors, by the listens acknowledged and open.
    pub covered: ListenFilter,
}

/// Why the server ended a listen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListenEndReason {
    /// Its result: the graceful end (the server is shutting the subscription down).
    Complete,
    /// The server's `notifications/cancelled` naming it (stdio).
    Cancelled,
    /// An error response (its code and message), including a broken stream (-32098).
    Error {
        /// The JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// A response that is not valid JSON-RPC.
    Invalid,
}

impl std::fmt::Display for ListenEndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenEndReason::Complete => f.write_str("the server completed it"),
            ListenEndReason::Cancelled => f.write_str("the server cancelled it"),
            ListenEndReason::Error { code, message } => write!(f, "error {code}: {message}"),
            ListenEndReason::Invalid => f.write_str("an invalid response"),
        }
    }
}

/// The witness of a guard that found the server ending the open listen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ListenEnd {
    /// The listen's request id.
    pub id: RequestId,
    /// How it ended.
    pub reason: ListenEndReason,
}

/// One listen the client opened and has not ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct OpenListen {
    /// Its request id, which tags its notifications.
    pub(crate) id: RequestId,
    /// What it asked for.
    pub(crate) asked: ListenFilter,
    /// Once acknowledged: what the server honors of it (within what was asked), and when.
    pub(crate) acked: Option<(ListenFilter, Duration)>,
}

/// The listens of the current connection.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Listens {
    /// The listen asking for what is wanted (sent; acknowledged or not).
    pub(crate) current: Option<OpenListen>,
    /// The acknowledged listen it replaces: delivered until its successor is acknowledged,
    /// then cancelled.
    pub(crate) previous: Option<OpenListen>,
    /// What the last listen sent asked for (also while it is lost and being reopened).
    pub(crate) filter: ListenFilter,
    /// Listens opened again since ready (reset by one that stayed acknowledged long enough).
    pub(crate) reopened: u8,
    /// The server refused the last listen: none is opened again until the filter changes.
    pub(crate) refused: bool,
    /// The last status told to the driver.
    pub(crate) told: ListenStatus,
}

impl Listens {
    /// What the acknowledged listens honor.
    pub(crate) fn covered(&self) -> ListenFilter {
        [&self.current, &self.previous]
            .into_iter()
            .flatten()
            .filter_map(|l| l.acked.as_ref().map(|(f, _)| f))
            .fold(ListenFilter::default(), |acc, f| acc.union(f))
    }
}

/// The params of a `subscriptions/listen` request for `filter`.
pub(crate) fn params(filter: &ListenFilter) -> Value {
    json!({ "notifications": filter.to_json() })
}

/// The listen id a notification is tagged with: an integer `_meta` subscription id (ours are
/// never anything else, so a string or a fraction is nobody's). `Err(())` when the tag is
/// present but names none of ours.
pub(crate) fn tag(n: &Notification) -> Option<Result<RequestId, ()>> {
    let v = n.params.as_ref()?.get("_meta")?.get(META_SUBSCRIPTION_ID)?;
    Some(v.as_u64().ok_or(()))
}

/// The `requestId` a `notifications/cancelled` names, when it is one of our integer ids.
pub(crate) fn cancelled_id(n: &Notification) -> Option<RequestId> {
    n.param("notifications/cancelled", "requestId")?.as_u64()
}

/// What an acknowledgement says the server honors.
pub(crate) fn honored(n: &Notification) -> ListenFilter {
    ListenFilter::from_json(n.params.as_ref().and_then(|p| p.get("notifications")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(params: Value) -> Notification {
        Notification {
            method: "notifications/tools/list_changed".into(),
            params: Some(params),
        }
    }

    #[test]
    fn params_name_only_what_is_asked() {
        let f = ListenFilter {
            tools: true,
            uris: ["b://2".to_owned(), "a://1".to_owned()].into(),
            ..ListenFilter::default()
        };
        assert_eq!(
            params(&f),
            json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["a://1", "b://2"]}})
        );
        assert_eq!(
            params(&ListenFilter::default()),
            json!({"notifications": {}})
        );
    }

    #[test]
    fn a_filter_round_trips_and_malformed_parts_count_as_not_asked() {
        let f = ListenFilter {
            tools: true,
            prompts: true,
            resources: true,
            uris: ["x".to_owned()].into(),
        };
        assert_eq!(ListenFilter::from_json(Some(&f.to_json())), f);
        let bad = json!({"toolsListChanged": "yes", "promptsListChanged": 1,
            "resourceSubscriptions": ["ok", 3, null]});
        let parsed = ListenFilter::from_json(Some(&bad));
        assert!(!parsed.tools && !parsed.prompts);
        assert_eq!(parsed.uris, ["ok".to_owned()].into());
        assert!(ListenFilter::from_json(Some(&json!("nonsense"))).is_empty());
        assert!(ListenFilter::from_json(None).is_empty());
    }

    #[test]
    fn intersect_union_and_subset() {
        let a = ListenFilter {
            tools: true,
            uris: ["x".to_owned(), "y".to_owned()].into(),
            ..ListenFilter::default()
        };
        let b = ListenFilter {
            tools: true,
            prompts: true,
            uris: ["y".to_owned()].into(),
            ..ListenFilter::default()
        };
        let both = a.intersect(&b);
        assert!(both.tools && !both.prompts);
        assert_eq!(both.uris, ["y".to_owned()].into());
        assert!(both.is_subset(&a) && both.is_subset(&b));
        assert!(!a.is_subset(&b));
        let either = a.union(&b);
        assert!(either.tools && either.prompts && either.uris.len() == 2);
    }

    #[test]
    fn only_an_integer_tag_names_a_listen() {
        let tagged = |v: Value| note(json!({"_meta": {META_SUBSCRIPTION_ID: v}}));
        assert_eq!(tag(&tagged(json!(12))), Some(Ok(12)));
        assert_eq!(tag(&tagged(json!("12"))), Some(Err(())));
        assert_eq!(tag(&tagged(json!(-1))), Some(Err(())));
        assert_eq!(tag(&tagged(json!(1.5))), Some(Err(())));
        assert_eq!(tag(&note(json!({"uri": "x"}))), None);
        assert_eq!(
            tag(&Notification {
                method: "m".into(),
                params: None
            }),
            None
        );
    }

    #[test]
    fn covered_is_what_acknowledged_listens_honor() {
        let f = |tools: bool, prompts: bool| ListenFilter {
            tools,
            prompts,
            ..ListenFilter::default()
        };
        let mut l = Listens {
            current: Some(OpenListen {
                id: 2,
                asked: f(true, true),
                acked: None,
            }),
            previous: Some(OpenListen {
                id: 1,
                asked: f(true, false),
                acked: Some((f(true, false), Duration::ZERO)),
            }),
            ..Listens::default()
        };
        assert_eq!(l.covered(), f(true, false));
        if let Some(c) = l.current.as_mut() {
            c.acked = Some((f(false, true), Duration::ZERO));
        }
        assert_eq!(l.covered(), f(true, true));
    }
}
