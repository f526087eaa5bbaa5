//! Stage 1, resolve: every name of the spec becomes an index.
//!
//! Reads the declarations (with their spans), checks the names themselves (snake_case, no
//! keyword, no clash between kinds or CamelCase spellings), parses the payload and witness types,
//! and resolves the names used by rows, timers and `initial_actions`: an unknown name is reported
//! with a typo suggestion and left out. Lists are read here too (empty `from`/`on`, `*` inside a
//! list, a name listed twice). No rule about the table as a whole is checked: that is
//! [`super::check`].

use std::collections::BTreeMap;
use std::ops::Range;

use crate::diagnostic::{DeclKind, Diagnostic, SpecError};
use crate::ir::{self, Use};
use crate::rust_type;
use crate::source::Sources;
use crate::spec::{self, Names as NameList, Spec, TimerKindDecl, UseDecl};

use super::names::{closest, name_problem};

/// A declaration: its name and where the name is written.
pub(super) struct Decl {
    /// The name as written.
    pub name: String,
    /// The span of the name.
    pub span: Range<usize>,
}

/// Every declaration of the spec, by kind, in file order.
pub(super) struct Decls {
    /// `[states.*]`.
    pub states: Vec<Decl>,
    /// `[events.*]` (not the timers' events).
    pub declared_events: Vec<Decl>,
    /// `[timers.*]`.
    pub timers: Vec<Decl>,
    /// Every event kind: the declared events, then one per timer.
    pub events: Vec<Decl>,
    /// `[guards.*]`.
    pub guards: Vec<Decl>,
    /// `[actions.*]`.
    pub actions: Vec<Decl>,
}

/// A payload or witness type as written: its canonical text and where it is written.
pub(super) struct Ty {
    /// The canonical text ([`rust_type::TypePath`]'s `Display`), or the text as written when it
    /// is not a type (that was reported).
    pub text: String,
    /// The span of the string.
    pub span: Range<usize>,
}

/// How an action takes a value of its row, and where that is written.
#[derive(Clone)]
pub(super) struct Taking {
    /// By reference or by value.
    pub by: Use,
    /// The span of the value (`"ref"` / `"move"`).
    pub span: Range<usize>,
}

/// What an action takes of its row.
pub(super) struct Takes {
    /// `payload = ...`.
    pub payload: Option<Taking>,
    /// `witness = ...`.
    pub witness: Option<Taking>,
}

/// One row with its names resolved as far as they resolve.
pub(super) struct Row {
    /// The span of the whole row.
    pub header: Range<usize>,
    /// The line of its `[[row]]` header (1-based, within its file).
    pub line: u32,
    /// The index of its file in the spec's [`Sources`].
    pub file: usize,
    /// The from-states (every state for `"*"`).
    pub from: Vec<usize>,
    /// `from = "*"`.
    pub from_star: bool,
    /// The span of `from`.
    pub from_span: Range<usize>,
    /// The events.
    pub on: Vec<usize>,
    /// Where each of `on` is written (parallel to `on`).
    pub on_spans: Vec<Range<usize>>,
    /// The span of `on`.
    pub on_span: Range<usize>,
    /// The guard; `Some((None, span))` did not resolve but still counts as a guard.
    pub guard: Option<(Option<usize>, Range<usize>)>,
    /// The actions that resolved, in order.
    pub actions: Vec<usize>,
    /// Where each of `actions` is written (parallel to `actions`).
    pub action_spans: Vec<Range<usize>>,
    /// The target state.
    pub to: Option<usize>,
    /// `ignore = true` or `impossible = true`.
    pub ignore: bool,
    /// `impossible = true`.
    pub impossible: bool,
}

/// The spec with its names resolved: what the check and lower stages work on.
pub(super) struct Resolved {
    /// The declarations.
    pub decls: Decls,
    /// The first state with `initial = true`.
    pub initial: Option<usize>,
    /// `terminal = true`, by state.
    pub terminal: Vec<bool>,
    /// The states each timer lists (empty for keyed timers).
    pub timer_states: Vec<Vec<usize>>,
    /// `initial_actions`, with where each is written.
    pub initial_actions: Vec<(usize, Range<usize>)>,
    /// The payload type of each event kind.
    pub payloads: Vec<Option<Ty>>,
    /// The witness type each guard yields.
    pub yields: Vec<Option<Ty>>,
    /// What each action takes.
    pub takes: Vec<Takes>,
    /// The rows, in file order.
    pub rows: Vec<Row>,
    /// `[sequences.*]`.
    pub sequences_decls: Vec<Decl>,
    /// Whether some row names each `[sequences.*]`.
    pub sequences_used: Vec<bool>,
    /// The `[[order]]`s.
    pub orders: Vec<Order>,
    /// The concern of each file of the spec (`None`: the manifest, or a one-file spec).
    pub file_concern: Vec<Option<usize>>,
    /// The file of each guard's declaration.
    pub guard_file: Vec<usize>,
    /// The file of each action's declaration.
    pub action_file: Vec<usize>,
}

/// One `[[order]]`, resolved.
pub(super) struct Order {
    /// The span of the whole entry.
    pub span: Range<usize>,
    /// The states it covers.
    pub from: Vec<usize>,
    /// The events it covers.
    pub on: Vec<usize>,
    /// The guards, first tried first, with where each is written.
    pub guards: Vec<(usize, Range<usize>)>,
}

/// Resolves `spec` (parsed from `sources`), pushing every naming error to `errors`.
pub(super) fn resolve(spec: &Spec, sources: &Sources, errors: &mut Vec<Diagnostic>) -> Resolved {
    let decls = declarations(spec);
    check_names(&decls, errors);
    let file_concern = concerns(spec, sources, errors);
    let guard_file: Vec<usize> = decls
        .guards
        .iter()
        .map(|d| sources.file_of(d.span.start))
        .collect();
    let action_file: Vec<usize> = decls
        .actions
        .iter()
        .map(|d| sources.file_of(d.span.start))
        .collect();
    if !spec.machine.get_ref().concerns.is_empty() {
        let files: Vec<usize> = guard_file.iter().chain(&action_file).copied().collect();
        for (d, file) in decls.guards.iter().chain(&decls.actions).zip(files) {
            if file_concern.get(file).copied().flatten().is_none() {
                errors.push(Diagnostic::new(
                    SpecError::ConcernFile {
                        message: format!(
                            "`{}` is declared outside a concern file; guards and actions belong \
                             to the concern whose rows use them",
                            d.name
                        ),
                    },
                    d.span.clone(),
                    "here",
                ));
            }
        }
    }
    let mut r = Resolver::new(&decls, errors);
    let sequences = r.sequences(spec);
    r.credit = r.credit_rule(spec);
    let timer_states = spec
        .timers
        .entries
        .iter()
        .map(|d| r.timer_states(d))
        .collect();
    let initial_actions = r.initial_actions(spec);
    let rows = spec
        .row
        .iter()
        .map(|row| r.row(row, sources, &sequences))
        .collect();
    let orders = spec.order.iter().map(|o| r.order(o)).collect();
    let mut sequences = sequences;
    for &i in &r.used_sequences {
        sequences[i].used = true;
    }
    let sequences_used = sequences.iter().map(|s| s.used).collect();
    let (payloads, yields) = types(spec, errors);
    Resolved {
        initial: spec
            .states
            .entries
            .iter()
            .position(|d| flag(&d.value.get_ref().initial)),
        terminal: spec
            .states
            .entries
            .iter()
            .map(|d| flag(&d.value.get_ref().terminal))
            .collect(),
        timer_states,
        initial_actions,
        payloads,
        yields,
        takes: spec.actions.entries.iter().map(takes).collect(),
        rows,
        decls,
        sequences_decls: decls_of(&spec.sequences.entries),
        sequences_used,
        orders,
        file_concern,
        guard_file,
        action_file,
    }
}

/// The concern of each file: a split spec's manifest lists its concerns, and each concern file
/// opens with the `[concerns.<name>]` the manifest names at its place. A one-file spec has none.
fn concerns(spec: &Spec, sources: &Sources, errors: &mut Vec<Diagnostic>) -> Vec<Option<usize>> {
    let n_files = sources.files().len();
    let mut file_concern = vec![None; n_files];
    let listed = &spec.machine.get_ref().concerns;
    let declared = &spec.concerns.entries;
    let err = |message: String, span: Range<usize>| {
        Diagnostic::new(SpecError::ConcernFile { message }, span, "here")
    };
    if listed.is_empty() && declared.is_empty() {
        return file_concern;
    }
    if listed.len() + 1 != n_files {
        errors.push(err(
            format!(
                "`[machine] concerns` lists {} concerns but the spec has {} concern files",
                listed.len(),
                n_files.saturating_sub(1)
            ),
            spec.machine.span(),
        ));
    }
    for (i, d) in declared.iter().enumerate() {
        let file = sources.file_of(d.name.span().start);
        let expected = listed
            .get(file.wrapping_sub(1))
            .map(|n| n.get_ref().as_str());
        if file == 0 || expected != Some(d.name.get_ref().as_str()) {
            errors.push(err(
                format!(
                    "`[concerns.{}]` is not the concern `[machine] concerns` names for this file{}",
                    d.name.get_ref(),
                    expected.map_or(String::new(), |e| format!(" (`{e}`)"))
                ),
                d.name.span(),
            ));
            continue;
        }
        let (text, start) = sources.file_text(file);
        let first_table = text
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with('['))
            .unwrap_or("");
        if first_table != format!("[concerns.{}]", d.name.get_ref()) {
            errors.push(err(
                format!(
                    "a concern file opens with its `[concerns.{}]`, before any other table",
                    d.name.get_ref()
                ),
                start..start,
            ));
        }
        if file_concern[file].replace(i).is_some() {
            errors.push(err(
                "a file declares two concerns".to_owned(),
                d.name.span(),
            ));
        }
    }
    for (k, name) in listed.iter().enumerate() {
        if file_concern.get(k + 1).copied().flatten().is_none() {
            errors.push(err(
                format!(
                    "no `[concerns.{}]` opens the concern file of `{}`",
                    name.get_ref(),
                    name.get_ref()
                ),
                name.span(),
            ));
        }
    }
    file_concern
}

/// Whether an optional boolean field is written `true`.
fn flag(value: &Option<toml::Spanned<bool>>) -> bool {
    value.as_ref().is_some_and(|v| *v.get_ref())
}

/// The names and spans of a table's declarations.
fn decls_of<T>(decls: &[spec::Decl<T>]) -> Vec<Decl> {
    decls
        .iter()
        .map(|d| Decl {
            name: d.name.get_ref().clone(),
            span: d.name.span(),
        })
        .collect()
}

/// Every declaration of `spec`.
fn declarations(spec: &Spec) -> Decls {
    let declared_events = decls_of(&spec.events.entries);
    let timers = decls_of(&spec.timers.entries);
    let events = decls_of(&spec.events.entries)
        .into_iter()
        .chain(decls_of(&spec.timers.entries))
        .collect();
    Decls {
        states: decls_of(&spec.states.entries),
        declared_events,
        timers,
        events,
        guards: decls_of(&spec.guards.entries),
        actions: decls_of(&spec.actions.entries),
    }
}

/// Name → index (the first declaration of a name wins).
fn index_of(decls: &[Decl]) -> BTreeMap<&str, usize> {
    let mut map = BTreeMap::new();
    for (i, d) in decls.iter().enumerate() {
        map.entry(d.name.as_str()).or_insert(i);
    }
    map
}

/// The names themselves: shape, clashes between kinds, clashes of CamelCase spellings.
fn check_names(d: &Decls, errors: &mut Vec<Diagnostic>) {
    for decl in d
        .states
        .iter()
        .chain(&d.declared_events)
        .chain(&d.timers)
        .chain(&d.guards)
        .chain(&d.actions)
    {
        if let Some(reason) = name_problem(&decl.name) {
            errors.push(Diagnostic::new(
                SpecError::BadName {
                    name: decl.name.clone(),
                    reason,
                },
                decl.span.clone(),
                "declared here",
            ));
        }
    }
    kind_clash(
        errors,
        (&d.guards, DeclKind::Guard),
        (&d.actions, DeclKind::Action),
    );
    kind_clash(
        errors,
        (&d.declared_events, DeclKind::Event),
        (&d.timers, DeclKind::Timer),
    );
    for list in [&d.states, &d.events, &d.timers, &d.guards, &d.actions] {
        camel_clash(errors, list);
    }
}

/// A name declared both in `a` and in `b`, whose items would collide in the generated Rust.
fn kind_clash(
    errors: &mut Vec<Diagnostic>,
    (a, ak): (&[Decl], DeclKind),
    (b, bk): (&[Decl], DeclKind),
) {
    let first = index_of(a);
    for d in b {
        let Some(&i) = first.get(d.name.as_str()) else {
            continue;
        };
        let note = match (ak, bk) {
            (DeclKind::Guard, DeclKind::Action) => {
                "guards and actions both become methods of the `Handlers` trait"
            }
            _ => "each timer declares an event of its own name",
        };
        errors.push(
            Diagnostic::new(
                SpecError::NameClash {
                    name: d.name.clone(),
                    first: ak,
                    second: bk,
                },
                d.span.clone(),
                format!("the {bk} is declared here"),
            )
            .with_context(a[i].span.clone(), format!("the {ak} is declared here"))
            .with_note(note),
        );
    }
}

/// Two names of one list that become the same CamelCase variant.
fn camel_clash(errors: &mut Vec<Diagnostic>, list: &[Decl]) {
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    for (i, d) in list.iter().enumerate() {
        let c = ir::camel_case(&d.name);
        match first.get(&c) {
            Some(&j) if list[j].name != d.name => errors.push(
                Diagnostic::new(
                    SpecError::CamelClash {
                        first: list[j].name.clone(),
                        name: d.name.clone(),
                        camel: c.clone(),
                    },
                    d.span.clone(),
                    "declared here",
                )
                .with_context(list[j].span.clone(), "the other name"),
            ),
            Some(_) => {}
            None => {
                first.insert(c, i);
            }
        }
    }
}

/// The payload type of every event kind and the witness type of every guard, each parsed.
fn types(spec: &Spec, errors: &mut Vec<Diagnostic>) -> (Vec<Option<Ty>>, Vec<Option<Ty>>) {
    let written: Vec<&Option<toml::Spanned<String>>> = spec
        .events
        .entries
        .iter()
        .map(|d| &d.value.get_ref().payload)
        .chain(
            spec.timers
                .entries
                .iter()
                .map(|d| &d.value.get_ref().payload),
        )
        .collect();
    let payloads = written
        .into_iter()
        .map(|t| t.as_ref().map(|t| parse_type(t, errors)))
        .collect();
    let yields = spec
        .guards
        .entries
        .iter()
        .map(|d| {
            let t = &d.value.get_ref().yields;
            t.as_ref().map(|t| parse_type(t, errors))
        })
        .collect();
    (payloads, yields)
}

/// One type string: its canonical text, or a `bad-type` error.
fn parse_type(t: &toml::Spanned<String>, errors: &mut Vec<Diagnostic>) -> Ty {
    let text = match rust_type::parse(t.get_ref()) {
        Ok(path) => path.to_string(),
        Err(reason) => {
            errors.push(
                Diagnostic::new(
                    SpecError::BadType {
                        text: t.get_ref().clone(),
                        reason,
                    },
                    t.span(),
                    "not a type path",
                )
                .with_note(
                    "write a type path in scope where the generated code is included, such as \
                     `Response`, `crate::io::RequestId` or `Option<Foo>`",
                ),
            );
            t.get_ref().trim().to_owned()
        }
    };
    Ty {
        text,
        span: t.span(),
    }
}

/// What an action declares it takes.
fn takes(d: &spec::Decl<spec::ActionDecl>) -> Takes {
    let taking = |u: &Option<toml::Spanned<UseDecl>>| {
        u.as_ref().map(|u| Taking {
            by: match u.get_ref() {
                UseDecl::Ref => Use::Ref,
                UseDecl::Move => Use::Move,
            },
            span: u.span(),
        })
    };
    let a = d.value.get_ref();
    Takes {
        payload: taking(&a.payload),
        witness: taking(&a.witness),
    }
}

/// The name tables, and the errors pushed while looking names up.
struct Resolver<'a> {
    tables: [(DeclKind, BTreeMap<&'a str, usize>); 4],
    n_states: usize,
    action_names: Vec<&'a str>,
    credit: Option<Credit>,
    used_sequences: Vec<usize>,
    errors: &'a mut Vec<Diagnostic>,
}

impl<'a> Resolver<'a> {
    fn new(d: &'a Decls, errors: &'a mut Vec<Diagnostic>) -> Self {
        Resolver {
            tables: [
                (DeclKind::State, index_of(&d.states)),
                (DeclKind::Event, index_of(&d.events)),
                (DeclKind::Guard, index_of(&d.guards)),
                (DeclKind::Action, index_of(&d.actions)),
            ],
            n_states: d.states.len(),
            action_names: d.actions.iter().map(|a| a.name.as_str()).collect(),
            credit: None,
            used_sequences: Vec::new(),
            errors,
        }
    }

    fn table(&self, kind: DeclKind) -> Option<&BTreeMap<&'a str, usize>> {
        self.tables.iter().find(|(k, _)| *k == kind).map(|(_, t)| t)
    }

    /// The index of `name` as a `kind`, or an `unknown-*` error.
    fn lookup(&mut self, kind: DeclKind, name: &str, span: Range<usize>) -> Option<usize> {
        let found = self.table(kind).and_then(|t| t.get(name).copied());
        if found.is_none() {
            self.unknown(kind, name, span);
        }
        found
    }

    /// An `unknown-*` error, with a suggestion: a close name of the kind, or the kind the name
    /// has.
    fn unknown(&mut self, kind: DeclKind, name: &str, span: Range<usize>) {
        let mut d = Diagnostic::new(
            SpecError::Unknown {
                kind,
                name: name.to_owned(),
            },
            span,
            format!("no `[{}.{}]` is declared", kind.table(), name),
        );
        if let Some(close) = self
            .table(kind)
            .and_then(|t| closest(name, t.keys().copied()))
        {
            d = d.with_note(format!("did you mean `{close}`?"));
        } else if let Some((other, _)) = self
            .tables
            .iter()
            .find(|(k, t)| *k != kind && t.contains_key(name))
        {
            d = d.with_note(format!(
                "`{name}` is {}, not {}",
                other.with_article(),
                kind.with_article()
            ));
        }
        self.errors.push(d.with_note(if kind == DeclKind::Event {
            "events are declared in `[events]`; every `[timers]` entry also declares one".to_owned()
        } else {
            format!("{}s are declared in `[{}]`", kind.word(), kind.table())
        }));
    }

    /// The states a state or periodic timer lists (keyed timers list none: see the check).
    fn timer_states(&mut self, d: &spec::Decl<spec::TimerDecl>) -> Vec<usize> {
        let decl = d.value.get_ref();
        let mut resolved = Vec::new();
        let (TimerKindDecl::State | TimerKindDecl::Periodic, Some(states)) =
            (decl.kind.get_ref(), &decl.states)
        else {
            return resolved;
        };
        for s in states.get_ref() {
            let Some(i) = self.lookup(DeclKind::State, s.get_ref(), s.span()) else {
                continue;
            };
            if resolved.contains(&i) {
                self.errors.push(repeated(s.get_ref(), "states", s.span()));
            } else {
                resolved.push(i);
            }
        }
        resolved
    }

    /// `initial_actions`.
    fn initial_actions(&mut self, spec: &Spec) -> Vec<(usize, Range<usize>)> {
        spec.machine
            .get_ref()
            .initial_actions
            .iter()
            .filter_map(|a| {
                self.lookup(DeclKind::Action, a.get_ref(), a.span())
                    .map(|i| (i, a.span()))
            })
            .collect()
    }

    /// The sequences, their actions resolved.
    fn sequences(&mut self, spec: &Spec) -> Vec<Sequence> {
        spec.sequences
            .entries
            .iter()
            .map(|d| {
                let list = &d.value.get_ref().actions;
                let actions = list
                    .get_ref()
                    .iter()
                    .filter_map(|a| {
                        if let Some(name) = a.get_ref().strip_prefix('@') {
                            self.errors.push(Diagnostic::new(
                                SpecError::UnknownSequence {
                                    name: name.to_owned(),
                                },
                                a.span(),
                                "a sequence names actions only",
                            ));
                            return None;
                        }
                        self.lookup(DeclKind::Action, a.get_ref(), a.span())
                    })
                    .collect();
                Sequence {
                    name: d.name.get_ref().clone(),
                    actions,
                    used: false,
                }
            })
            .collect()
    }

    /// `[machine.credit]`, resolved.
    fn credit_rule(&mut self, spec: &Spec) -> Option<Credit> {
        let c = spec.machine.get_ref().credit.as_ref()?.get_ref();
        let action = self.lookup(DeclKind::Action, c.action.get_ref(), c.action.span())?;
        let events = c
            .events
            .get_ref()
            .iter()
            .filter_map(|e| self.lookup(DeclKind::Event, e.get_ref(), e.span()))
            .collect();
        let unless = c
            .unless
            .get_ref()
            .iter()
            .filter_map(|a| self.lookup(DeclKind::Action, a.get_ref(), a.span()))
            .collect();
        Some(Credit {
            action,
            events,
            unless,
        })
    }

    /// One `[[order]]`.
    fn order(&mut self, o: &toml::Spanned<spec::OrderDecl>) -> Order {
        let d = o.get_ref();
        let from = match d.from.get_ref() {
            NameList::One(s) if s == "*" => (0..self.n_states).collect(),
            names => names
                .items(d.from.span())
                .into_iter()
                .filter_map(|(n, sp)| self.lookup(DeclKind::State, &n, sp))
                .collect(),
        };
        let on =
            d.on.get_ref()
                .items(d.on.span())
                .into_iter()
                .filter_map(|(n, sp)| self.lookup(DeclKind::Event, &n, sp))
                .collect();
        let guards = d
            .guards
            .get_ref()
            .iter()
            .filter_map(|g| {
                self.lookup(DeclKind::Guard, g.get_ref(), g.span())
                    .map(|i| (i, g.span()))
            })
            .collect();
        Order {
            span: o.span(),
            from,
            on,
            guards,
        }
    }

    /// One row.
    fn row(
        &mut self,
        row: &toml::Spanned<spec::RowDecl>,
        sources: &Sources,
        sequences: &[Sequence],
    ) -> Row {
        let header = row.span();
        let r = row.get_ref();
        let (from, from_star) = self.from(r);
        let (on, on_spans) = self.on(r);
        let guard = r.guard.as_ref().map(|g| {
            let ix = self.lookup(DeclKind::Guard, g.get_ref(), g.span());
            (ix, g.span())
        });
        let (mut actions, mut action_spans) = self.actions(r, sequences);
        self.derive_credit(r, &on, &mut actions, &mut action_spans, header.clone());
        let to =
            r.to.as_ref()
                .and_then(|t| self.lookup(DeclKind::State, t.get_ref(), t.span()));
        let impossible = flag(&r.impossible);
        let line = sources.line_of(header.start);
        Row {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            file: sources.file_of(header.start),
            header,
            from,
            from_star,
            from_span: r.from.span(),
            on,
            on_spans,
            on_span: r.on.span(),
            guard,
            actions,
            action_spans,
            to,
            ignore: flag(&r.ignore) || impossible,
            impossible,
        }
    }

    /// `from`: the states, and whether it is `"*"`.
    fn from(&mut self, r: &spec::RowDecl) -> (Vec<usize>, bool) {
        let span = r.from.span();
        match r.from.get_ref() {
            NameList::One(s) if s == "*" => return ((0..self.n_states).collect(), true),
            NameList::Many(v) if v.is_empty() => {
                self.errors.push(Diagnostic::new(
                    SpecError::EmptyList { field: "from" },
                    span,
                    "this row covers no state",
                ));
                return (Vec::new(), false);
            }
            _ => {}
        }
        let mut from = Vec::new();
        for (name, span) in r.from.get_ref().items(span) {
            if name == "*" {
                self.errors
                    .push(Diagnostic::new(SpecError::StarInList, span, "here"));
                continue;
            }
            match self.lookup(DeclKind::State, &name, span.clone()) {
                Some(i) if from.contains(&i) => self.errors.push(repeated(&name, "from", span)),
                Some(i) => from.push(i),
                None => {}
            }
        }
        (from, false)
    }

    /// `on`: the events and where each is written.
    fn on(&mut self, r: &spec::RowDecl) -> (Vec<usize>, Vec<Range<usize>>) {
        let items = r.on.get_ref().items(r.on.span());
        if items.is_empty() {
            self.errors.push(Diagnostic::new(
                SpecError::EmptyList { field: "on" },
                r.on.span(),
                "this row covers no event",
            ));
        }
        let mut on = Vec::new();
        let mut spans = Vec::new();
        for (name, span) in items {
            match self.lookup(DeclKind::Event, &name, span.clone()) {
                Some(i) if on.contains(&i) => self.errors.push(repeated(&name, "on", span)),
                Some(i) => {
                    on.push(i);
                    spans.push(span);
                }
                None => {}
            }
        }
        (on, spans)
    }

    /// The credit rule on one row: its action appended when the rule selects the row; a row
    /// that writes it by hand, or mixes selected events with others, is an error.
    fn derive_credit(
        &mut self,
        r: &spec::RowDecl,
        on: &[usize],
        actions: &mut Vec<usize>,
        spans: &mut Vec<Range<usize>>,
        header: Range<usize>,
    ) {
        let Some(c) = &self.credit else {
            return;
        };
        if let Some(p) = actions.iter().position(|&a| a == c.action) {
            self.errors.push(Diagnostic::new(
                SpecError::DerivedAction {
                    action: self.action_names[c.action].to_owned(),
                },
                spans[p].clone(),
                "remove it: the rule appends it",
            ));
            return;
        }
        if flag(&r.ignore) || flag(&r.impossible) || r.actions.is_none() {
            return;
        }
        let selected = on.iter().filter(|e| c.events.contains(e)).count();
        if selected == 0 {
            return;
        }
        if selected != on.len() {
            self.errors.push(Diagnostic::new(
                SpecError::CreditMixed,
                r.on.span(),
                "split this row by event",
            ));
            return;
        }
        if actions.iter().any(|a| c.unless.contains(a)) {
            return;
        }
        actions.push(c.action);
        spans.push(header);
    }

    /// `do`: the actions that resolve (sequences expanded) and where each is written.
    fn actions(
        &mut self,
        r: &spec::RowDecl,
        sequences: &[Sequence],
    ) -> (Vec<usize>, Vec<Range<usize>>) {
        let Some(list) = &r.actions else {
            return (Vec::new(), Vec::new());
        };
        if list.get_ref().is_empty() {
            self.errors.push(
                Diagnostic::new(
                    SpecError::EmptyList { field: "do" },
                    list.span(),
                    "no action",
                )
                .with_note("a row that does nothing is written `ignore = true`"),
            );
        }
        let mut out = (Vec::new(), Vec::new());
        for a in list.get_ref() {
            if let Some(name) = a.get_ref().strip_prefix('@') {
                match sequences.iter().position(|s| s.name == name) {
                    Some(i) => {
                        self.used_sequences.push(i);
                        for &action in &sequences[i].actions {
                            out.0.push(action);
                            out.1.push(a.span());
                        }
                    }
                    None => self.errors.push(Diagnostic::new(
                        SpecError::UnknownSequence {
                            name: name.to_owned(),
                        },
                        a.span(),
                        "no `[sequences.<name>]` of this name",
                    )),
                }
            } else if let Some(i) = self.lookup(DeclKind::Action, a.get_ref(), a.span()) {
                out.0.push(i);
                out.1.push(a.span());
            }
        }
        out
    }
}

/// A `[sequences.<name>]`, resolved.
pub(super) struct Sequence {
    /// Its name.
    name: String,
    /// Its actions, in order.
    actions: Vec<usize>,
    /// Whether a row names it.
    used: bool,
}

/// `[machine.credit]`, resolved.
struct Credit {
    /// The appended action.
    action: usize,
    /// The events whose rows it selects.
    events: Vec<usize>,
    /// The actions that exempt a row.
    unless: Vec<usize>,
}

/// A name listed twice in `field`.
fn repeated(name: &str, field: &'static str, span: Range<usize>) -> Diagnostic {
    Diagnostic::new(
        SpecError::RepeatedName {
            name: name.to_owned(),
            field,
        },
        span,
        "listed again here",
    )
}
