//! Errors found in a spec, and their rustc-like rendering.
//!
//! A [`Diagnostic`] is one error: a [`SpecError`] (what is wrong), a primary [`Label`] (where),
//! optional context labels and notes. [`Diagnostics`] is every error of one spec file together with
//! the file's text, so that it can render itself: its `Display` is deterministic (no colours, no
//! terminal width), so it can be snapshotted.

use std::fmt;
use std::ops::Range;

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

pub use crate::source::line_column;
use crate::source::{Sources, floor_boundary};

/// The kind of a declaration of the spec (`[states.x]`, `[events.x]`, ...).
///
/// Used in messages; it is not the declaration itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeclKind {
    /// A `[states.<name>]` table.
    State,
    /// An `[events.<name>]` table.
    Event,
    /// A `[timers.<name>]` table (it also declares the event of the same name).
    Timer,
    /// A `[guards.<name>]` table.
    Guard,
    /// An `[actions.<name>]` table.
    Action,
}

impl DeclKind {
    /// The word used for this kind in messages (`"state"`, `"event"`, ...).
    pub const fn word(self) -> &'static str {
        match self {
            DeclKind::State => "state",
            DeclKind::Event => "event",
            DeclKind::Timer => "timer",
            DeclKind::Guard => "guard",
            DeclKind::Action => "action",
        }
    }

    /// The word with its indefinite article (`"a state"`, `"an event"`).
    pub const fn with_article(self) -> &'static str {
        match self {
            DeclKind::State => "a state",
            DeclKind::Event => "an event",
            DeclKind::Timer => "a timer",
            DeclKind::Guard => "a guard",
            DeclKind::Action => "an action",
        }
    }

    /// The table that declares names of this kind (`"states"`, `"events"`, ...).
    pub const fn table(self) -> &'static str {
        match self {
            DeclKind::State => "states",
            DeclKind::Event => "events",
            DeclKind::Timer => "timers",
            DeclKind::Guard => "guards",
            DeclKind::Action => "actions",
        }
    }
}

impl fmt::Display for DeclKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// What is wrong with a spec: one variant per class of error the generator reports.
///
/// This is the *what*; where it is (file, line, column) is in the [`Diagnostic`] that carries it.
/// Messages are lower case without trailing punctuation. Not an I/O error: reading the file is the
/// caller's business.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The text is not valid TOML.
    #[error("invalid TOML: {message}")]
    InvalidToml {
        /// The TOML parser's message.
        message: String,
    },
    /// The TOML is valid but does not have the spec's shape: an unknown or missing field, or a
    /// value of the wrong type.
    #[error("{message}")]
    Structure {
        /// The deserializer's message (for example ``unknown field `dox`, expected `doc` ``).
        message: String,
    },
    /// The spec declares no state at all.
    #[error("the spec declares no state")]
    NoStates,
    /// The spec declares no event and no timer.
    #[error("the spec declares no event")]
    NoEvents,
    /// No state has `initial = true`.
    #[error("no initial state: exactly one state needs `initial = true`")]
    NoInitialState,
    /// More than one state has `initial = true`.
    #[error("two initial states: `{first}` and `{name}`")]
    TwoInitialStates {
        /// The first initial state.
        first: String,
        /// Another initial state.
        name: String,
    },
    /// A name used where a declared name of some kind was expected.
    #[error("unknown {kind} `{name}`")]
    Unknown {
        /// The kind of name that was expected.
        kind: DeclKind,
        /// The name as written.
        name: String,
    },
    /// `"*"` written inside a list (it stands for every state only as the whole `from`).
    #[error("`*` must be the whole `from` (`from = \"*\"`), not an item of a list")]
    StarInList,
    /// A list that must not be empty is empty.
    #[error("`{field}` is an empty list")]
    EmptyList {
        /// The field (`from`, `on`, `do`, `states`).
        field: &'static str,
    },
    /// The same name twice in one list.
    #[error("`{name}` is listed twice in `{field}`")]
    RepeatedName {
        /// The repeated name.
        name: String,
        /// The field.
        field: &'static str,
    },
    /// A (state, event) cell that no row covers.
    #[error("missing cell: no row handles event `{event}` in state `{state}`")]
    MissingCell {
        /// The state of the cell.
        state: String,
        /// The event of the cell.
        event: String,
    },
    /// A row that can never fire in some cells because an earlier unguarded row covers them.
    #[error("duplicate cell: this row never fires in {cells}")]
    DuplicateCell {
        /// The cells, rendered as `(state, event)` pairs.
        cells: String,
        /// The line of the earlier, unguarded row.
        earlier_line: usize,
    },
    /// The last row of a cell has a guard: when it is false, nothing handles the event.
    #[error("guarded rows without a fallback in {cells}")]
    NoFallback {
        /// The cells, rendered as `(state, event)` pairs.
        cells: String,
    },
    /// The same guard on two rows of one cell: the second is dead.
    #[error("guard `{guard}` is used twice in {cells}")]
    RepeatedGuard {
        /// The guard.
        guard: String,
        /// The cells, rendered as `(state, event)` pairs.
        cells: String,
    },
    /// A state that cannot be reached from the initial state.
    #[error("unreachable state `{name}`: no path of rows leads to it from `{initial}`")]
    UnreachableState {
        /// The state.
        name: String,
        /// The initial state.
        initial: String,
    },
    /// A declaration that no row (or `initial_actions`) uses.
    #[error("unused {kind} `{name}`")]
    Unused {
        /// The kind of the declaration.
        kind: DeclKind,
        /// Its name.
        name: String,
    },
    /// A keyed timer without `key`.
    #[error("keyed timer `{name}` has no `key`")]
    KeyedTimerWithoutKey {
        /// The timer.
        name: String,
    },
    /// A state or periodic timer with `key`.
    #[error("timer `{name}` is not keyed but has a `key`")]
    KeyOnUnkeyedTimer {
        /// The timer.
        name: String,
    },
    /// A state or periodic timer without `states`.
    #[error("{scope} timer `{name}` has no `states`")]
    TimerWithoutStates {
        /// `"state"` or `"periodic"`.
        scope: &'static str,
        /// The timer.
        name: String,
    },
    /// A keyed timer with `states`.
    #[error("keyed timer `{name}` must not have `states`")]
    StatesOnKeyedTimer {
        /// The timer.
        name: String,
    },
    /// A row leaves a terminal state.
    #[error("terminal state `{state}` has a row going to `{to}`")]
    TerminalLeaves {
        /// The terminal state.
        state: String,
        /// Where the row goes.
        to: String,
    },
    /// A row with `ignore = true` and also `do` or `to`.
    #[error("a row with `ignore = true` or `impossible = true` must not have `{field}`")]
    IgnoreWith {
        /// `do` or `to`.
        field: &'static str,
    },
    /// A row with neither `do` nor `ignore = true`.
    #[error("a row needs either `do` or `ignore = true`")]
    NoOutcome,
    /// Two declarations with one name where both become the same Rust item.
    #[error("`{name}` is both {} and {}", .first.with_article(), .second.with_article())]
    NameClash {
        /// The name.
        name: String,
        /// The kind of the earlier declaration.
        first: DeclKind,
        /// The kind of the later one.
        second: DeclKind,
    },
    /// Two names that become the same CamelCase variant.
    #[error("`{first}` and `{name}` both become the Rust variant `{camel}`")]
    CamelClash {
        /// The earlier name.
        first: String,
        /// The later name.
        name: String,
        /// The variant both become.
        camel: String,
    },
    /// A name that is not a snake_case identifier, or is a Rust keyword.
    #[error("`{name}` is not a valid name: {reason}")]
    BadName {
        /// The name as written.
        name: String,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// More rows than fit the generated `u16` row index.
    #[error("too many rows: {count} (at most 65535)")]
    TooManyRows {
        /// How many rows there are.
        count: usize,
    },
    /// A payload or witness type that is not a Rust type path.
    #[error("`{text}` is not a Rust type path: {reason}")]
    BadType {
        /// The type as written.
        text: String,
        /// Why it is rejected.
        reason: String,
    },
    /// A row whose guard or actions use the payload lists events with different payloads.
    #[error(
        "the events of this row carry different payloads: `{first_event}` carries {}, `{event}` carries {}",
        payload_text(.first),
        payload_text(.payload)
    )]
    RowPayloadMismatch {
        /// The row's first event.
        first_event: String,
        /// Its payload type.
        first: Option<String>,
        /// An event of the row with another payload.
        event: String,
        /// That event's payload type.
        payload: Option<String>,
    },
    /// A guard used on events with different payloads (a guard takes one type, or none).
    #[error(
        "guard `{guard}` is used on events with different payloads: `{first_event}` carries {}, `{event}` carries {}",
        payload_text(.first),
        payload_text(.payload)
    )]
    GuardPayloadMismatch {
        /// The guard.
        guard: String,
        /// The event of the first row using the guard.
        first_event: String,
        /// Its payload type.
        first: Option<String>,
        /// The event of a later row that differs.
        event: String,
        /// Its payload type.
        payload: Option<String>,
    },
    /// An action that takes the payload, in a row whose event carries none.
    #[error("action `{action}` takes the payload, but event `{event}` carries none")]
    ActionWithoutPayload {
        /// The action.
        action: String,
        /// The event without payload.
        event: String,
    },
    /// An action that takes the payload, used on events of different payload types.
    #[error(
        "action `{action}` takes payloads of different types: `{first}` (row at line {first_line}) and `{payload}`"
    )]
    ActionPayloadMismatch {
        /// The action.
        action: String,
        /// The payload type of the first row using it.
        first: String,
        /// The line of that row.
        first_line: usize,
        /// The payload type of this row.
        payload: String,
    },
    /// An action that takes the witness, in a row without a guard.
    #[error("action `{action}` takes the witness, but this row has no guard")]
    WitnessWithoutGuard {
        /// The action.
        action: String,
    },
    /// An action that takes the witness, in a row whose guard yields none.
    #[error("action `{action}` takes the witness, but guard `{guard}` yields none")]
    WitnessNotYielded {
        /// The action.
        action: String,
        /// The row's guard.
        guard: String,
    },
    /// An action that takes the witness, used with guards yielding different types.
    #[error(
        "action `{action}` takes witnesses of different types: `{first}` (row at line {first_line}) and `{witness}`"
    )]
    WitnessMismatch {
        /// The action.
        action: String,
        /// The witness type of the first row using it.
        first: String,
        /// The line of that row.
        first_line: usize,
        /// The witness type of this row.
        witness: String,
    },
    /// An action of a row uses the payload or witness after an earlier action moved it.
    #[error("{value} used by `{used_by}` after it was moved by `{moved_by}`")]
    UseAfterMove {
        /// `payload` or `witness`.
        value: &'static str,
        /// The action that took it by value.
        moved_by: String,
        /// The action that uses it afterwards.
        used_by: String,
    },
    /// A guard that yields a witness that no action of its rows takes.
    #[error(
        "guard `{guard}` yields `{witness}` but no action of its rows takes the witness; drop `yields`"
    )]
    UnusedWitness {
        /// The guard.
        guard: String,
        /// The type it yields.
        witness: String,
    },
    /// An initial action that takes a payload or a witness (no event runs it).
    #[error("initial action `{action}` takes the {value}, but no event runs initial actions")]
    InitialActionTakes {
        /// The action.
        action: String,
        /// `payload` or `witness`.
        value: &'static str,
    },
    /// A row names `@name` but no `[sequences.<name>]` is declared (or a sequence names another).
    #[error("unknown sequence `{name}`")]
    UnknownSequence {
        /// The name after `@`.
        name: String,
    },
    /// A `[sequences.<name>]` no row names.
    #[error("sequence `{name}` is never used")]
    UnusedSequence {
        /// The sequence.
        name: String,
    },
    /// A row writes the action that `[machine.credit]` appends by rule.
    #[error("`{action}` is appended by `[machine.credit]`; a row does not write it")]
    DerivedAction {
        /// The derived action.
        action: String,
    },
    /// A row that is not ignored mixes events the credit rule selects with others.
    #[error("this row mixes events that hand a credit back with events that do not")]
    CreditMixed,
    /// The guarded rows of a cell come from several files and no `[[order]]` says their order.
    #[error("the order of the guarded rows of {cells} is not declared")]
    UnorderedCell {
        /// The cells, as text.
        cells: String,
    },
    /// A guarded row of a cell an `[[order]]` covers names a guard the order does not list.
    #[error("guard `{guard}` is not listed by the `[[order]]` of {cells}")]
    OrderIncomplete {
        /// The guard.
        guard: String,
        /// The cells, as text.
        cells: String,
    },
    /// Two `[[order]]`s cover one cell.
    #[error("{cells} is ordered twice")]
    OrderOverlap {
        /// The cells, as text.
        cells: String,
    },
    /// A guard an `[[order]]` lists twice, or that guards no row of the cells it covers.
    #[error("guard `{guard}` is listed twice or guards no row of the cells of this `[[order]]`")]
    OrderStray {
        /// The guard.
        guard: String,
    },
    /// The cells' declared orders contradict each other: no row table can list every cell's
    /// rows in the order the cell tries them.
    #[error("the declared orders of the cells contradict each other")]
    OrderCycle,
    /// A split spec's files and its `[concerns]` do not match.
    #[error("concern files: {message}")]
    ConcernFile {
        /// What does not match.
        message: String,
    },
    /// The generator produced Rust that does not parse: a bug in mcp-codegen, not in the spec.
    #[error("internal error (a bug in mcp-codegen): {message}")]
    Internal {
        /// What failed.
        message: String,
    },
}

impl SpecError {
    /// A short stable code for the class of error (`"missing-cell"`, ...), shown as
    /// `error[code]` and used to name the broken-spec fixtures.
    pub const fn code(&self) -> &'static str {
        match self {
            SpecError::InvalidToml { .. } => "invalid-toml",
            SpecError::Structure { .. } => "structure",
            SpecError::NoStates => "no-states",
            SpecError::NoEvents => "no-events",
            SpecError::NoInitialState => "no-initial-state",
            SpecError::TwoInitialStates { .. } => "two-initial-states",
            SpecError::Unknown { kind, .. } => match kind {
                DeclKind::State => "unknown-state",
                DeclKind::Event => "unknown-event",
                DeclKind::Timer => "unknown-timer",
                DeclKind::Guard => "unknown-guard",
                DeclKind::Action => "unknown-action",
            },
            SpecError::StarInList => "star-in-list",
            SpecError::EmptyList { .. } => "empty-list",
            SpecError::RepeatedName { .. } => "repeated-name",
            SpecError::MissingCell { .. } => "missing-cell",
            SpecError::DuplicateCell { .. } => "duplicate-cell",
            SpecError::NoFallback { .. } => "no-fallback",
            SpecError::RepeatedGuard { .. } => "repeated-guard",
            SpecError::UnreachableState { .. } => "unreachable-state",
            SpecError::Unused { .. } => "unused",
            SpecError::KeyedTimerWithoutKey { .. } => "keyed-timer-without-key",
            SpecError::KeyOnUnkeyedTimer { .. } => "key-on-unkeyed-timer",
            SpecError::TimerWithoutStates { .. } => "timer-without-states",
            SpecError::StatesOnKeyedTimer { .. } => "states-on-keyed-timer",
            SpecError::TerminalLeaves { .. } => "terminal-leaves",
            SpecError::IgnoreWith { .. } => "ignore-with",
            SpecError::NoOutcome => "no-outcome",
            SpecError::NameClash { .. } => "name-clash",
            SpecError::CamelClash { .. } => "camel-clash",
            SpecError::BadName { .. } => "bad-name",
            SpecError::TooManyRows { .. } => "too-many-rows",
            SpecError::BadType { .. } => "bad-type",
            SpecError::RowPayloadMismatch { .. } => "row-payload-mismatch",
            SpecError::GuardPayloadMismatch { .. } => "guard-payload-mismatch",
            SpecError::ActionWithoutPayload { .. } => "action-without-payload",
            SpecError::ActionPayloadMismatch { .. } => "action-payload-mismatch",
            SpecError::WitnessWithoutGuard { .. } => "witness-without-guard",
            SpecError::WitnessNotYielded { .. } => "witness-not-yielded",
            SpecError::WitnessMismatch { .. } => "witness-mismatch",
            SpecError::UseAfterMove { .. } => "use-after-move",
            SpecError::UnusedWitness { .. } => "unused-witness",
            SpecError::InitialActionTakes { .. } => "initial-action-takes",
            SpecError::UnknownSequence { .. } => "unknown-sequence",
            SpecError::UnusedSequence { .. } => "unused-sequence",
            SpecError::DerivedAction { .. } => "derived-action",
            SpecError::CreditMixed => "credit-mixed",
            SpecError::UnorderedCell { .. } => "unordered-cell",
            SpecError::OrderIncomplete { .. } => "order-incomplete",
            SpecError::OrderOverlap { .. } => "order-overlap",
            SpecError::OrderStray { .. } => "order-stray",
            SpecError::OrderCycle => "order-cycle",
            SpecError::ConcernFile { .. } => "concern-file",
            SpecError::Internal { .. } => "internal",
        }
    }
}

/// A payload type for messages: `` `T` `` or `no payload`.
fn payload_text(payload: &Option<String>) -> String {
    payload
        .as_ref()
        .map_or_else(|| "no payload".to_owned(), |t| format!("`{t}`"))
}

/// A span of the spec's text (byte offsets) with a message: where an error points.
///
/// Not a line/column pair: those are computed from the text when rendering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// Byte range in the spec's text.
    pub span: Range<usize>,
    /// What the span shows.
    pub message: String,
}

impl Label {
    /// A label over `span` saying `message`.
    pub fn new(span: Range<usize>, message: impl Into<String>) -> Self {
        Label {
            span,
            message: message.into(),
        }
    }
}

/// One error in a spec: what ([`SpecError`]), where (a primary [`Label`]), plus context.
///
/// It does not hold the spec's text; [`Diagnostics`] does, and renders it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// What is wrong.
    pub error: SpecError,
    /// Where it is.
    pub primary: Label,
    /// Other places that explain it (an earlier row, a declaration).
    pub context: Vec<Label>,
    /// Notes and hints shown below the excerpt.
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error at `span`, with a label message.
    pub fn new(error: SpecError, span: Range<usize>, label: impl Into<String>) -> Self {
        Diagnostic {
            error,
            primary: Label::new(span, label),
            context: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a context label.
    #[must_use]
    pub fn with_context(mut self, span: Range<usize>, label: impl Into<String>) -> Self {
        self.context.push(Label::new(span, label));
        self
    }

    /// Adds a note.
    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
}

/// Every error found in one spec (one file, or a manifest and its concern files), with the
/// files' paths and texts so it renders itself.
///
/// `Display` renders each error like rustc (`error[code]: message`, `--> path:line:column`, the
/// offending excerpt, one excerpt per file a label points into) followed by a summary line. It is
/// deterministic and uncoloured. An empty `Diagnostics` is never returned by [`crate::generate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostics {
    sources: Sources,
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Wraps the errors of the one-file spec at `path` whose text is `source`.
    pub fn new(path: &str, source: &str, items: Vec<Diagnostic>) -> Self {
        Diagnostics::of(Sources::one(path, source), items)
    }

    /// Wraps the errors of a spec of several files (spans point into [`Sources::text`]).
    pub fn of(sources: Sources, items: Vec<Diagnostic>) -> Self {
        Diagnostics { sources, items }
    }

    /// The errors, in the order they were found (by check, then by position in the spec).
    pub fn items(&self) -> &[Diagnostic] {
        &self.items
    }

    /// The path of the spec's first file (the only one of a one-file spec), as given.
    pub fn path(&self) -> &str {
        self.sources.files().first().map_or("", |f| f.path.as_str())
    }

    /// The codes of the errors ([`SpecError::code`]), in order.
    pub fn codes(&self) -> Vec<&'static str> {
        self.items.iter().map(|d| d.error.code()).collect()
    }

    /// 1-based line and column (in characters), within its own file, of a byte offset of the
    /// spec.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let (text, start) = self.sources.file_text(self.sources.file_of(offset));
        line_column(text, offset.saturating_sub(start))
    }

    /// One excerpt of `file` holding `labels` (primary first when it is there).
    fn snippet<'a>(
        &'a self,
        file: usize,
        labels: &[(bool, Range<usize>, &'a str)],
    ) -> Snippet<'a, annotate_snippets::Annotation<'a>> {
        let (src, base) = self.sources.file_text(file);
        let local: Vec<Range<usize>> = labels
            .iter()
            .map(|(_, s, _)| {
                clamp(
                    src,
                    &(s.start.saturating_sub(base)..s.end.saturating_sub(base)),
                )
            })
            .collect();
        // Only the lines the labels touch are handed to the renderer (it walks its whole input).
        let lo = local.iter().map(|s| s.start).min().unwrap_or(0);
        let hi = local.iter().map(|s| s.end).max().unwrap_or(0);
        let window_start = src[..lo].rfind('\n').map_or(0, |i| i + 1);
        let window_end = src[hi..].find('\n').map_or(src.len(), |i| hi + i);
        let window = &src[window_start..window_end];
        let first_line = line_column(src, window_start).0;
        let shift = |r: &Range<usize>| r.start - window_start..r.end - window_start;
        let mut snippet = Snippet::source(window)
            .line_start(first_line)
            .path(self.sources.files()[file].path.as_str());
        for ((primary, _, message), span) in labels.iter().zip(&local) {
            snippet = snippet.annotation(if *primary {
                AnnotationKind::Primary.span(shift(span)).label(*message)
            } else {
                AnnotationKind::Context
                    .span(shift(span))
                    .label((!message.is_empty()).then_some(*message))
            });
        }
        snippet
    }

    fn render_one(&self, d: &Diagnostic) -> String {
        let labels: Vec<(bool, Range<usize>, &str)> = std::iter::once((true, &d.primary))
            .chain(d.context.iter().map(|c| (false, c)))
            .map(|(p, l)| (p, l.span.clone(), l.message.as_str()))
            .collect();
        let mut files: Vec<usize> = Vec::new();
        for (_, span, _) in &labels {
            let f = self.sources.file_of(span.start);
            if !files.contains(&f) {
                files.push(f);
            }
        }
        let snippets: Vec<_> = files
            .into_iter()
            .map(|f| {
                let mine: Vec<(bool, Range<usize>, &str)> = labels
                    .iter()
                    .filter(|(_, s, _)| self.sources.file_of(s.start) == f)
                    .cloned()
                    .collect();
                self.snippet(f, &mine)
            })
            .collect();
        let mut group: Group<'_> = Level::ERROR
            .primary_title(d.error.to_string())
            .id(d.error.code())
            .elements(snippets);
        for n in &d.notes {
            group = group.element(Level::NOTE.message(n.as_str()));
        }
        Renderer::plain().render(&[group])
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.items {
            writeln!(f, "{}", self.render_one(d))?;
            writeln!(f)?;
        }
        let n = self.items.len();
        write!(
            f,
            "error: {} error{} in `{}`; nothing was generated",
            n,
            if n == 1 { "" } else { "s" },
            self.sources.paths()
        )
    }
}

impl std::error::Error for Diagnostics {}

/// Keeps a span inside the text, on character boundaries and on one line (a multi-line span is
/// cut at the end of its first line), so that rendering never fails.
fn clamp(source: &str, span: &Range<usize>) -> Range<usize> {
    let start = floor_boundary(source, span.start.min(source.len()));
    let mut end = floor_boundary(source, span.end.clamp(start, source.len()));
    if let Some(nl) = source[start..end].find('\n') {
        end = start + nl;
    }
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_from_one() {
        let s = "ab\ncdé\nf";
        assert_eq!(line_column(s, 0), (1, 1));
        assert_eq!(line_column(s, 3), (2, 1));
        assert_eq!(line_column(s, 7), (2, 4));
        assert_eq!(line_column(s, 8), (3, 1));
        assert_eq!(line_column(s, 1000), (3, 2));
        // Inside the two bytes of `é`: rounds down.
        assert_eq!(line_column(s, 6), (2, 3));
    }

    #[test]
    fn clamp_keeps_one_line_and_boundaries() {
        let s = "ab\ncdé\nf";
        assert_eq!(clamp(s, &(1..5)), 1..2);
        assert_eq!(clamp(s, &(6..100)), 5..7);
        assert_eq!(clamp(s, &(50..60)), 9..9);
    }

    #[test]
    fn renders_path_line_column_and_excerpt() {
        let src = "[states.a]\ndoc = \"x\"\n";
        let d = Diagnostics::new(
            "spec.toml",
            src,
            vec![Diagnostic::new(SpecError::NoInitialState, 8..9, "here").with_note("a note")],
        );
        let text = d.to_string();
        assert!(text.contains("error[no-initial-state]"), "{text}");
        assert!(text.contains("--> spec.toml:1:9"), "{text}");
        assert!(text.contains("[states.a]"), "{text}");
        assert!(text.contains("note: a note"), "{text}");
        assert!(text.ends_with("1 error in `spec.toml`; nothing was generated"));
    }
}
