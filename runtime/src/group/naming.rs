//! [`NamingRule`]: the names of a group's merged view (the rule is on the type).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The default separator between a server's name and an item's: `__`.
pub const DEFAULT_SEPARATOR: &str = "__";

/// When a merged name carries its server's name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Naming {
    /// A name only one server lists stays bare; a name several list becomes
    /// `server<sep>name` for each of them.
    #[default]
    PrefixOnCollision,
    /// Every name becomes `server<sep>name`.
    AlwaysPrefix,
}

/// A host's own renaming: `(server, name)` to the name to list it under.
pub type RenameHook = Arc<dyn Fn(&str, &str) -> String + Send + Sync>;

/// How a group names the items of its merged view, so that no two share a name and none is
/// dropped or overwritten: a [`Naming`] policy, a separator, and an optional rename hook. A
/// pure rule: the same servers and lists always give the same names.
///
/// The rule, for one list (tools and prompts are named apart), as [`NamingRule::assign`]
/// applies it:
///
/// 1. **Candidate.** With a rename hook, the hook's answer for `(server, name)`. Otherwise
///    [`Naming::PrefixOnCollision`] (the default) keeps the server's own name, and
///    [`Naming::AlwaysPrefix`] makes it `server<sep>name`.
/// 2. **Collisions are prefixed.** A candidate that two or more items share becomes
///    `server<sep>candidate` for every one of them (all of them, so that which server keeps
///    the bare name never depends on the order servers happened to start). With
///    [`Naming::AlwaysPrefix`] and no hook, candidates are already prefixed, and this step is
///    skipped.
/// 3. **Never a duplicate.** A name still shared after that (a prefixed name equal to another
///    server's bare one, a server listing one name twice, a separator inside server names)
///    stays with the first item in the order given (servers by name, then listing order); each
///    later one gets `<sep>2`, `<sep>3`, ... (the first number no other item uses).
///
/// The separator is `__` by default ([`DEFAULT_SEPARATOR`]): many hosts pass tool names to
/// model APIs that accept only `^[a-zA-Z0-9_-]{1,64}$`, which rules out `/`, `.` and `:`; a
/// single `_` or `-` is common inside tool names, a double underscore rarely is (Claude Code's
/// `mcp__server__tool` uses it too). The group never parses a merged name (it looks it up), so
/// any separator routes correctly; the 64-character bound is the host's to keep (a hook can
/// shorten names), the rule does not cut names.
#[derive(Clone)]
pub struct NamingRule {
    naming: Naming,
    separator: String,
    rename: Option<RenameHook>,
}

impl std::fmt::Debug for NamingRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamingRule")
            .field("naming", &self.naming)
            .field("separator", &self.separator)
            .field("rename", &self.rename.is_some())
            .finish()
    }
}

impl Default for NamingRule {
    /// [`Naming::PrefixOnCollision`], [`DEFAULT_SEPARATOR`], no hook.
    fn default() -> Self {
        NamingRule::new(Naming::default())
    }
}

impl NamingRule {
    /// The rule `naming` with [`DEFAULT_SEPARATOR`] and no hook.
    pub fn new(naming: Naming) -> Self {
        NamingRule {
            naming,
            separator: DEFAULT_SEPARATOR.to_owned(),
            rename: None,
        }
    }

    /// The separator between a server's name and an item's.
    pub fn separator(mut self, separator: impl Into<String>) -> Self {
        self.separator = separator.into();
        self
    }

    /// The policy.
    pub fn naming(mut self, naming: Naming) -> Self {
        self.naming = naming;
        self
    }

    /// A hook naming each item: `f(server, name)` is its candidate name, in place of what the
    /// policy would give. Candidates that collide are still prefixed: nothing is dropped.
    pub fn rename(mut self, f: impl Fn(&str, &str) -> String + Send + Sync + 'static) -> Self {
        self.rename = Some(Arc::new(f));
        self
    }

    /// The separator in use.
    pub fn separator_str(&self) -> &str {
        &self.separator
    }

    /// The policy in use.
    pub fn policy(&self) -> Naming {
        self.naming
    }

    /// `server<sep>name`.
    pub fn prefixed(&self, server: &str, name: &str) -> String {
        format!("{server}{}{name}", self.separator)
    }

    /// The merged name of each `(server, name)` item, in the same order: all distinct.
    /// Give the items in a stable order (servers by name, each in its listing order): step 3
    /// of the rule keeps a still-shared name with the first.
    pub fn assign(&self, items: &[(&str, &str)]) -> Vec<String> {
        let candidates: Vec<String> = items
            .iter()
            .map(|(server, name)| match (&self.rename, self.naming) {
                (Some(hook), _) => hook(server, name),
                (None, Naming::PrefixOnCollision) => (*name).to_owned(),
                (None, Naming::AlwaysPrefix) => self.prefixed(server, name),
            })
            .collect();
        let prefix_collisions = self.rename.is_some() || self.naming == Naming::PrefixOnCollision;
        let mut counts: HashMap<&str, usize> = HashMap::with_capacity(candidates.len());
        for c in &candidates {
            *counts.entry(c.as_str()).or_default() += 1;
        }
        let named: Vec<String> = candidates
            .iter()
            .zip(items)
            .map(|(c, (server, _))| {
                if prefix_collisions && counts[c.as_str()] > 1 {
                    self.prefixed(server, c)
                } else {
                    c.clone()
                }
            })
            .collect();
        self.deduplicated(named)
    }

    /// Step 3: the first of a shared name keeps it, the others get the first free `<sep>N`.
    fn deduplicated(&self, named: Vec<String>) -> Vec<String> {
        let taken: HashSet<String> = named.iter().cloned().collect();
        if taken.len() == named.len() {
            return named;
        }
        let mut used = HashSet::with_capacity(named.len());
        named
            .into_iter()
            .map(|name| {
                if used.insert(name.clone()) {
                    return name;
                }
                let free = (2u64..)
                    .map(|n| format!("{name}{}{n}", self.separator))
                    .find(|c| !taken.contains(c) && !used.contains(c))
                    .unwrap_or_default();
                used.insert(free.clone());
                free
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(rule: &NamingRule, items: &[(&str, &str)]) -> Vec<String> {
        let names = rule.assign(items);
        let distinct: HashSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), names.len(), "duplicates in {names:?}");
        names
    }

    #[test]
    fn a_name_one_server_lists_stays_bare_and_a_shared_one_is_prefixed_for_all() {
        let rule = NamingRule::default();
        let got = names(
            &rule,
            &[
                ("files", "read"),
                ("files", "write"),
                ("web", "read"),
                ("web", "fetch"),
            ],
        );
        assert_eq!(got, ["files__read", "write", "web__read", "fetch"]);
    }

    #[test]
    fn always_prefix_prefixes_everything_with_the_chosen_separator() {
        let rule = NamingRule::new(Naming::AlwaysPrefix).separator("-");
        let got = names(&rule, &[("a", "x"), ("b", "x"), ("b", "y")]);
        assert_eq!(got, ["a-x", "b-x", "b-y"]);
    }

    #[test]
    fn the_hook_names_items_and_its_collisions_are_prefixed_not_dropped() {
        let rule = NamingRule::default().rename(|server, name| {
            if server == "web" {
                format!("www_{name}")
            } else {
                name.to_owned()
            }
        });
        // `web`'s fetch becomes www_fetch; files' own `www_fetch` then collides with it: both
        // prefixed.
        let got = names(
            &rule,
            &[("files", "www_fetch"), ("files", "read"), ("web", "fetch")],
        );
        assert_eq!(got, ["files__www_fetch", "read", "web__www_fetch"]);
        // A hook that names everything the same: each gets its server's prefix.
        let flat = NamingRule::default().rename(|_, _| "tool".to_owned());
        assert_eq!(
            names(&flat, &[("a", "x"), ("b", "y")]),
            ["a__tool", "b__tool"]
        );
    }

    #[test]
    fn a_name_still_shared_after_prefixing_is_numbered_never_dropped() {
        let rule = NamingRule::default();
        // b's and c's `x` become b__x and c__x; a lists a bare `b__x` itself.
        let got = names(&rule, &[("a", "b__x"), ("b", "x"), ("c", "x")]);
        assert_eq!(got, ["b__x", "b__x__2", "c__x"]);
        // A server listing one name twice.
        let got = names(&rule, &[("a", "x"), ("a", "x"), ("b", "y")]);
        assert_eq!(got, ["a__x", "a__x__2", "y"]);
        // Always prefix with a separator inside names: a__b + c and a + b__c.
        let always = NamingRule::new(Naming::AlwaysPrefix);
        let got = names(&always, &[("a", "b__c"), ("a__b", "c")]);
        assert_eq!(got, ["a__b__c", "a__b__c__2"]);
        // The number skips names another item already has.
        let got = names(&always, &[("a", "x"), ("a", "x"), ("a", "x__2")]);
        assert_eq!(got, ["a__x", "a__x__3", "a__x__2"]);
    }

    #[test]
    fn nothing_listed_names_nothing() {
        assert!(NamingRule::default().assign(&[]).is_empty());
    }
}
