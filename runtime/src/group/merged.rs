//! [`MergedView`]: the tools, prompts, resources and resource templates of every server of a
//! group in one view, each item carrying its server and its own name; and [`GroupChange`],
//! what changed from one view to the next.
//!
//! Tools and prompts are named by the group's [`NamingRule`] (each list apart). Resources and
//! templates keep their URI (the key a `resources/read` routes by): two servers listing the
//! same URI are both listed, and reading that URI without naming the server is an error
//! ([`super::GroupError::AmbiguousResource`]), never a silent pick.
//!
//! A server's items are those of its last fetched lists ([`crate::LiveLists`]): a server that
//! is reconnecting keeps its items listed (see the group's documentation for why); a server
//! never connected lists nothing; a removed server's items are gone.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::naming::NamingRule;
use super::template;
use crate::live_lists::{ListKind, Lists};
use crate::types::{Prompt, Resource, ResourceTemplate, Tool};

/// One item of the merged view: the name the group lists it under, its server, its name (or
/// URI) on that server, and the item as the server listed it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Merged<T> {
    /// The name the group lists it under (tools, prompts: by the naming rule; resources: the
    /// URI; templates: the URI template).
    pub name: String,
    /// The server that listed it.
    pub server: Arc<str>,
    /// Its name (or URI, or URI template) on that server: what a call sends.
    pub original: String,
    /// The item as the server listed it (its own name unchanged).
    pub item: T,
}

impl Merged<Tool> {
    /// The tool as a host lists it to a model: the server's tool under its merged name.
    pub fn listed(&self) -> Tool {
        Tool {
            name: self.name.clone(),
            ..self.item.clone()
        }
    }
}

impl Merged<Prompt> {
    /// The prompt as a host lists it: the server's prompt under its merged name.
    pub fn listed(&self) -> Prompt {
        Prompt {
            name: self.name.clone(),
            ..self.item.clone()
        }
    }
}

/// Every server's lists in one view (see the module documentation). Servers in name order,
/// each server's items in its listing order. Cheap to share ([`super::ClientGroup::view`]
/// gives an `Arc`).
#[derive(Clone, Debug, Default)]
pub struct MergedView {
    /// Every tool.
    pub tools: Vec<Merged<Tool>>,
    /// Every prompt.
    pub prompts: Vec<Merged<Prompt>>,
    /// Every resource.
    pub resources: Vec<Merged<Resource>>,
    /// Every resource template.
    pub resource_templates: Vec<Merged<ResourceTemplate>>,
    tool_index: HashMap<String, usize>,
    prompt_index: HashMap<String, usize>,
    resource_index: HashMap<String, Vec<usize>>,
}

/// Where a URI routes to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum UriRoute {
    /// One server.
    One(Arc<str>),
    /// Several servers list it (or templates of several match it).
    Ambiguous(Vec<String>),
    /// No server lists it and no template matches it.
    None,
}

impl MergedView {
    /// The view of `servers`' lists (in the order given), named by `naming`.
    pub(crate) fn build(servers: &[(Arc<str>, Lists)], naming: &NamingRule) -> Self {
        let tools = named(servers, naming, |l| l.tools.as_deref(), |t| &t.name);
        let prompts = named(servers, naming, |l| l.prompts.as_deref(), |p| &p.name);
        let resources = keyed(servers, |l| l.resources.as_deref(), |r| &r.uri);
        let resource_templates = keyed(
            servers,
            |l| l.resource_templates.as_deref(),
            |t| &t.uri_template,
        );
        let index = |items: &[(String, usize)]| items.iter().cloned().collect();
        let tool_index = index(
            &tools
                .iter()
                .enumerate()
                .map(|(i, m)| (m.name.clone(), i))
                .collect::<Vec<_>>(),
        );
        let prompt_index = index(
            &prompts
                .iter()
                .enumerate()
                .map(|(i, m)| (m.name.clone(), i))
                .collect::<Vec<_>>(),
        );
        let mut resource_index: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, r) in resources.iter().enumerate() {
            resource_index.entry(r.name.clone()).or_default().push(i);
        }
        MergedView {
            tools,
            prompts,
            resources,
            resource_templates,
            tool_index,
            prompt_index,
            resource_index,
        }
    }

    /// The tool listed as `name`.
    pub fn tool(&self, name: &str) -> Option<&Merged<Tool>> {
        self.tool_index.get(name).map(|i| &self.tools[*i])
    }

    /// The prompt listed as `name`.
    pub fn prompt(&self, name: &str) -> Option<&Merged<Prompt>> {
        self.prompt_index.get(name).map(|i| &self.prompts[*i])
    }

    /// Every resource listed with URI `uri` (one per server that lists it).
    pub fn resources_at(&self, uri: &str) -> impl Iterator<Item = &Merged<Resource>> {
        self.resource_index
            .get(uri)
            .into_iter()
            .flatten()
            .map(|i| &self.resources[*i])
    }

    /// The servers a `resources/read` of `uri` goes to: those listing it exactly, else those
    /// with a template matching it.
    pub(crate) fn route_uri(&self, uri: &str) -> UriRoute {
        let mut servers: Vec<&Arc<str>> = self.resources_at(uri).map(|r| &r.server).collect();
        if servers.is_empty() {
            servers = self
                .resource_templates
                .iter()
                .filter(|t| template::matches(&t.original, uri))
                .map(|t| &t.server)
                .collect();
        }
        servers.dedup();
        match servers.as_slice() {
            [] => UriRoute::None,
            [one] => UriRoute::One(Arc::clone(one)),
            many => UriRoute::Ambiguous(many.iter().map(|s| s.to_string()).collect()),
        }
    }

    /// How many items of `kind` the view holds.
    pub fn count(&self, kind: ListKind) -> usize {
        match kind {
            ListKind::Tools => self.tools.len(),
            ListKind::Prompts => self.prompts.len(),
            ListKind::Resources => self.resources.len(),
            ListKind::ResourceTemplates => self.resource_templates.len(),
        }
    }
}

/// The items of one list across servers, named by the rule.
fn named<T: Clone>(
    servers: &[(Arc<str>, Lists)],
    naming: &NamingRule,
    list: impl Fn(&Lists) -> Option<&[T]>,
    key: fn(&T) -> &String,
) -> Vec<Merged<T>> {
    let items: Vec<(&Arc<str>, &T)> = servers
        .iter()
        .flat_map(|(server, lists)| list(lists).unwrap_or(&[]).iter().map(move |t| (server, t)))
        .collect();
    let pairs: Vec<(&str, &str)> = items
        .iter()
        .map(|(server, t)| (&***server, key(t).as_str()))
        .collect();
    naming
        .assign(&pairs)
        .into_iter()
        .zip(items)
        .map(|(name, (server, item))| Merged {
            name,
            server: Arc::clone(server),
            original: key(item).clone(),
            item: item.clone(),
        })
        .collect()
}

/// The items of one list across servers, under their own key.
fn keyed<T: Clone>(
    servers: &[(Arc<str>, Lists)],
    list: impl Fn(&Lists) -> Option<&[T]>,
    key: fn(&T) -> &String,
) -> Vec<Merged<T>> {
    servers
        .iter()
        .flat_map(|(server, lists)| {
            list(lists).unwrap_or(&[]).iter().map(move |item| Merged {
                name: key(item).clone(),
                server: Arc::clone(server),
                original: key(item).clone(),
                item: item.clone(),
            })
        })
        .collect()
}

/// One item of a [`GroupChange`]: its merged name, its server, its name on that server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ChangedItem {
    /// The name the group lists (or listed) it under.
    pub name: String,
    /// Its server.
    pub server: Arc<str>,
    /// Its name (or URI) on that server.
    pub original: String,
}

/// What changed in one list of the merged view, each item tagged with its server. An item
/// renamed (a new collision prefixes it, or one gone unprefixes it) is removed under its old
/// name and added under its new one. Never empty when published.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupChange {
    /// Which list.
    pub kind: ListKind,
    /// Items new to the view (or under a new name).
    pub added: Vec<ChangedItem>,
    /// Items gone from the view (or from their old name).
    pub removed: Vec<ChangedItem>,
    /// Items under the same name whose content changed.
    pub changed: Vec<ChangedItem>,
}

impl GroupChange {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// The servers this change touches, each once, in name order.
    pub fn servers(&self) -> Vec<Arc<str>> {
        let mut servers: Vec<Arc<str>> = [&self.added, &self.removed, &self.changed]
            .into_iter()
            .flatten()
            .map(|i| Arc::clone(&i.server))
            .collect();
        servers.sort();
        servers.dedup();
        servers
    }

    /// The approximate size in bytes, for the feed's bound.
    pub(crate) fn size(&self) -> usize {
        [&self.added, &self.removed, &self.changed]
            .into_iter()
            .flatten()
            .map(|i| i.name.len() + i.server.len() + i.original.len() + 16)
            .sum::<usize>()
            + 16
    }
}

/// What changed from `old` to `new`, one [`GroupChange`] per list that changed.
pub(crate) fn diff(old: &MergedView, new: &MergedView) -> Vec<GroupChange> {
    [
        diff_list(ListKind::Tools, &old.tools, &new.tools),
        diff_list(ListKind::Prompts, &old.prompts, &new.prompts),
        diff_list(ListKind::Resources, &old.resources, &new.resources),
        diff_list(
            ListKind::ResourceTemplates,
            &old.resource_templates,
            &new.resource_templates,
        ),
    ]
    .into_iter()
    .filter(|c| !c.is_empty())
    .collect()
}

fn diff_list<T: PartialEq>(kind: ListKind, old: &[Merged<T>], new: &[Merged<T>]) -> GroupChange {
    let key = |m: &Merged<T>| ChangedItem {
        name: m.name.clone(),
        server: Arc::clone(&m.server),
        original: m.original.clone(),
    };
    let before: HashMap<ChangedItem, &T> = old.iter().map(|m| (key(m), &m.item)).collect();
    let after: HashSet<ChangedItem> = new.iter().map(key).collect();
    let mut change = GroupChange {
        kind,
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
    };
    for m in new {
        let k = key(m);
        match before.get(&k) {
            None => change.added.push(k),
            Some(item) if **item != m.item => change.changed.push(k),
            Some(_) => {}
        }
    }
    for m in old {
        let k = key(m);
        if !after.contains(&k) {
            change.removed.push(k);
        }
    }
    change
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({"name": name, "inputSchema": {}})).unwrap()
    }

    fn lists(tools: &[&str]) -> Lists {
        Lists {
            tools: Some(tools.iter().map(|t| tool(t)).collect()),
            ..Lists::default()
        }
    }

    fn server(name: &str, tools: &[&str]) -> (Arc<str>, Lists) {
        (Arc::from(name), lists(tools))
    }

    #[test]
    fn the_view_names_routes_and_keeps_every_item() {
        let view = MergedView::build(
            &[server("a", &["read", "only_a"]), server("b", &["read"])],
            &NamingRule::default(),
        );
        let names: Vec<&str> = view.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a__read", "only_a", "b__read"]);
        let read_b = view.tool("b__read").unwrap();
        assert_eq!((&*read_b.server, read_b.original.as_str()), ("b", "read"));
        assert_eq!(read_b.listed().name, "b__read");
        assert!(view.tool("read").is_none());
    }

    #[test]
    fn a_new_collision_renames_the_old_item_as_removed_and_added() {
        let naming = NamingRule::default();
        let before = MergedView::build(&[server("a", &["read"]), server("b", &[])], &naming);
        let after = MergedView::build(&[server("a", &["read"]), server("b", &["read"])], &naming);
        let changes = diff(&before, &after);
        assert_eq!(changes.len(), 1);
        let c = &changes[0];
        assert_eq!(c.kind, ListKind::Tools);
        let added: Vec<&str> = c.added.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(added, ["a__read", "b__read"]);
        assert_eq!(c.removed.len(), 1);
        assert_eq!(c.removed[0].name, "read");
        assert_eq!(&*c.removed[0].server, "a");
        assert_eq!(c.servers(), [Arc::from("a"), Arc::from("b")]);
        assert!(diff(&after, &after).is_empty());
    }

    #[test]
    fn uris_route_by_listing_then_by_template_and_a_shared_uri_is_ambiguous() {
        let a = Lists {
            resources: Some(
                vec![
                    serde_json::from_value(serde_json::json!({"uri": "x://1", "name": "1"}))
                        .unwrap(),
                ]
                .into(),
            ),
            ..Lists::default()
        };
        let mut b = a.clone();
        b.resource_templates = Some(
            vec![
                serde_json::from_value(serde_json::json!({"uriTemplate": "y://{id}", "name": "y"}))
                    .unwrap(),
            ]
            .into(),
        );
        let view = MergedView::build(
            &[(Arc::from("a"), a), (Arc::from("b"), b)],
            &NamingRule::default(),
        );
        assert_eq!(
            view.route_uri("x://1"),
            UriRoute::Ambiguous(vec!["a".into(), "b".into()])
        );
        assert_eq!(view.route_uri("y://7"), UriRoute::One(Arc::from("b")));
        assert_eq!(view.route_uri("z://1"), UriRoute::None);
    }
}
