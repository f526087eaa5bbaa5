//! The spec as written: serde structures with the span of every value.
//!
//! This is only the *shape* of the spec (`spec/`) (`deny_unknown_fields` everywhere, every
//! value wrapped in [`Spanned`]); names are not resolved and no rule is checked here: that is
//! [`crate::validate`]. Declarations keep their file order (TOML tables are sorted by the parser;
//! they are put back in the order of their names' positions).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use toml::Spanned;

use crate::diagnostic::{Diagnostic, SpecError};

/// The whole spec as written (one file, or the concatenation of a manifest and its concern
/// files, see [`crate::source`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// `[machine]`.
    pub machine: Spanned<MachineDecl>,
    /// `[concerns.<name>]`, in file order: one per concern file of a split spec.
    #[serde(default)]
    pub concerns: Decls<ConcernDecl>,
    /// `[states.<name>]`, in file order.
    #[serde(default)]
    pub states: Decls<StateDecl>,
    /// `[events.<name>]`, in file order.
    #[serde(default)]
    pub events: Decls<EventDecl>,
    /// `[timers.<name>]`, in file order.
    #[serde(default)]
    pub timers: Decls<TimerDecl>,
    /// `[guards.<name>]`, in file order.
    #[serde(default)]
    pub guards: Decls<GuardDecl>,
    /// `[actions.<name>]`, in file order.
    #[serde(default)]
    pub actions: Decls<ActionDecl>,
    /// `[sequences.<name>]`, in file order: named lists of actions a row's `do` may name as
    /// `"@name"`.
    #[serde(default)]
    pub sequences: Decls<SequenceDecl>,
    /// `[[row]]`, in file order.
    #[serde(default)]
    pub row: Vec<Spanned<RowDecl>>,
    /// `[[order]]`: the declared order of the guarded rows of cells.
    #[serde(default)]
    pub order: Vec<Spanned<OrderDecl>>,
}

/// `[concerns.<name>]`: the header of a concern file (its name is the file's stem).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConcernDecl {
    /// `doc`.
    pub doc: Spanned<String>,
}

/// `[sequences.<name>]`: a named, ordered list of actions, expanded where a row names it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceDecl {
    /// `doc`.
    pub doc: Spanned<String>,
    /// `do`: the actions, in order.
    #[serde(rename = "do")]
    pub actions: Spanned<Vec<Spanned<String>>>,
}

/// `[[order]]`: the order in which the guarded rows of some cells are tried, by guard.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderDecl {
    /// `doc`: why this order.
    pub doc: Spanned<String>,
    /// `from`: a state, a list of states, or `"*"`.
    pub from: Spanned<Names>,
    /// `on`: an event or a list of events.
    pub on: Spanned<Names>,
    /// `guards`: every guard of the cells' guarded rows, first tried first.
    pub guards: Spanned<Vec<Spanned<String>>>,
}

/// `[machine.credit]`: an action the generator appends to rows by rule.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreditDecl {
    /// `doc`: the rule in words.
    pub doc: Spanned<String>,
    /// `action`: the action appended (last) to every row the rule selects.
    pub action: Spanned<String>,
    /// `events`: a row on any of these events (and only these) is selected...
    pub events: Spanned<Vec<Spanned<String>>>,
    /// `unless`: ...unless it is an ignore row or runs one of these actions.
    pub unless: Spanned<Vec<Spanned<String>>>,
}

/// `[machine]`: the machine's name and the actions run once at construction.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineDecl {
    /// `name`.
    pub name: Spanned<String>,
    /// `initial_actions` (absent means none).
    #[serde(default)]
    pub initial_actions: Vec<Spanned<String>>,
    /// `concerns`: the concern files of a split spec, in order (absent: a one-file spec).
    #[serde(default)]
    pub concerns: Vec<Spanned<String>>,
    /// `[machine.credit]`: the derived action, if any.
    pub credit: Option<Spanned<CreditDecl>>,
}

/// `[states.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateDecl {
    /// `doc`.
    pub doc: Spanned<String>,
    /// `initial` (absent means false).
    pub initial: Option<Spanned<bool>>,
    /// `terminal` (absent means false).
    pub terminal: Option<Spanned<bool>>,
}

/// Where an event declared in `[events]` comes from (timer events are declared by `[timers]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceDecl {
    /// `source = "transport"`.
    Transport,
    /// `source = "caller"`.
    Caller,
}

/// `[events.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventDecl {
    /// `doc`.
    pub doc: Spanned<String>,
    /// `source`.
    pub source: Spanned<SourceDecl>,
    /// `payload`: the Rust type the event carries, if any.
    pub payload: Option<Spanned<String>>,
}

/// A timer's `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimerKindDecl {
    /// Armed on entering some states, cancelled on leaving them.
    State,
    /// One per key (for example per request id).
    Keyed,
    /// Re-armed each time it fires, while in some states.
    Periodic,
}

/// `[timers.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimerDecl {
    /// `doc`.
    pub doc: Spanned<String>,
    /// `kind`.
    pub kind: Spanned<TimerKindDecl>,
    /// `states` (state and periodic timers only).
    pub states: Option<Spanned<Vec<Spanned<String>>>>,
    /// `key` (keyed timers only).
    pub key: Option<Spanned<String>>,
    /// `payload`: the Rust type the timer's event carries, if any.
    pub payload: Option<Spanned<String>>,
}

/// `[guards.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardDecl {
    /// `doc`.
    pub doc: Spanned<String>,
    /// `yields`: the witness type the guard returns (`Option<T>` instead of `bool`).
    pub yields: Option<Spanned<String>>,
}

/// How an action takes a value of its row: by reference or by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UseDecl {
    /// `&T`.
    Ref,
    /// `T`, the last use in the row.
    Move,
}

/// `[actions.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionDecl {
    /// `doc`.
    pub doc: Spanned<String>,
    /// `payload`: how the action takes its row's event payload.
    pub payload: Option<Spanned<UseDecl>>,
    /// `witness`: how the action takes its row's guard's witness.
    pub witness: Option<Spanned<UseDecl>>,
}

/// One `[[row]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowDecl {
    /// `from`: a state, a list of states, or `"*"`.
    pub from: Spanned<Names>,
    /// `on`: an event or a list of events.
    pub on: Spanned<Names>,
    /// `guard`.
    pub guard: Option<Spanned<String>>,
    /// `do`.
    #[serde(rename = "do")]
    pub actions: Option<Spanned<Vec<Spanned<String>>>>,
    /// `to`.
    pub to: Option<Spanned<String>>,
    /// `ignore`.
    pub ignore: Option<Spanned<bool>>,
    /// `impossible`: an ignore row the model checker proves never fires.
    pub impossible: Option<Spanned<bool>>,
}

/// A field that takes one name or a list of names (`from`, `on`).
#[derive(Debug)]
pub enum Names {
    /// A single string; its span is the span of the enclosing [`Spanned`].
    One(String),
    /// A list of strings.
    Many(Vec<Spanned<String>>),
}

impl Names {
    /// The names with their spans (`outer` is the span of the whole field).
    pub fn items(&self, outer: Range<usize>) -> Vec<(String, Range<usize>)> {
        match self {
            Names::One(s) => vec![(s.clone(), outer)],
            Names::Many(v) => v.iter().map(|s| (s.get_ref().clone(), s.span())).collect(),
        }
    }
}

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Names;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name or a list of names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Names, E> {
                Ok(Names::One(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Names, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<Spanned<String>>()? {
                    out.push(item);
                }
                Ok(Names::Many(out))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// One declaration: its name (with the span of the name in the table header) and its body.
#[derive(Debug)]
pub struct Decl<T> {
    /// The name, spanned where it is written.
    pub name: Spanned<String>,
    /// The body, spanned (for a `[x.name]` table: its header).
    pub value: Spanned<T>,
}

/// A table of declarations (`[states]`, `[events]`, ...), in file order.
#[derive(Debug)]
pub struct Decls<T> {
    /// The span of the table's name, where it has one.
    pub span: Option<Range<usize>>,
    /// The declarations, in the order their names appear in the file.
    pub entries: Vec<Decl<T>>,
}

impl<T> Default for Decls<T> {
    fn default() -> Self {
        Decls {
            span: None,
            entries: Vec::new(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Decls<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map: Spanned<BTreeMap<Spanned<String>, Spanned<T>>> =
            Spanned::deserialize(deserializer)?;
        let span = map.span();
        let mut entries: Vec<Decl<T>> = map
            .into_inner()
            .into_iter()
            .map(|(name, value)| Decl { name, value })
            .collect();
        entries.sort_by_key(|d| d.name.span().start);
        Ok(Decls {
            span: Some(span),
            entries,
        })
    }
}

/// Parses the spec's text: all TOML syntax errors, or else the first structural error.
///
/// Does not check any rule beyond the shape (see [`crate::validate`]).
pub fn parse(source: &str) -> Result<Spec, Vec<Diagnostic>> {
    let (table, errors) = toml::de::DeTable::parse_recoverable(source);
    if !errors.is_empty() {
        return Err(errors
            .iter()
            .map(|e| {
                Diagnostic::new(
                    SpecError::InvalidToml {
                        message: e.message().to_owned(),
                    },
                    e.span().unwrap_or(0..0),
                    "here",
                )
            })
            .collect());
    }
    let deserializer = toml::de::Deserializer::from(table);
    Spec::deserialize(deserializer).map_err(|e| {
        vec![Diagnostic::new(
            SpecError::Structure {
                message: e.message().to_owned(),
            },
            e.span().unwrap_or(0..0),
            "here",
        )]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_keep_file_order() {
        let src =
            "[machine]\nname = \"m\"\n[states.zeta]\ndoc = \"z\"\n[states.alpha]\ndoc = \"a\"\n";
        let spec = parse(src).unwrap();
        let names: Vec<&str> = spec
            .states
            .entries
            .iter()
            .map(|d| d.name.get_ref().as_str())
            .collect();
        assert_eq!(names, ["zeta", "alpha"]);
    }

    #[test]
    fn names_accept_one_or_many() {
        let src =
            "[machine]\nname = \"m\"\n[[row]]\nfrom = \"a\"\non = [\"x\", \"y\"]\nignore = true\n";
        let spec = parse(src).unwrap();
        let row = spec.row[0].get_ref();
        let from = row.from.get_ref().items(row.from.span());
        assert_eq!(from.len(), 1);
        assert_eq!(&src[from[0].1.clone()], "\"a\"");
        let on = row.on.get_ref().items(row.on.span());
        assert_eq!(
            on.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
        assert_eq!(&src[on[1].1.clone()], "\"y\"");
    }

    #[test]
    fn unknown_field_is_a_structure_error() {
        let src = "[machine]\nname = \"m\"\n[states.a]\ndox = \"\"\n";
        let errs = parse(src).unwrap_err();
        assert_eq!(errs[0].error.code(), "structure");
        assert_eq!(&src[errs[0].primary.span.clone()], "dox");
    }

    #[test]
    fn syntax_errors_are_invalid_toml() {
        let errs = parse("[machine\nname = 1\n").unwrap_err();
        assert!(errs.iter().all(|e| e.error.code() == "invalid-toml"));
    }
}
