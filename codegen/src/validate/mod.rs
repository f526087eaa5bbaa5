//! Checks a parsed [`Spec`] against every rule of the table and lowers it to an [`ir::Machine`].
//!
//! Three stages, run in order by [`validate`]:
//!
//! 1. `resolve`: names become indexes (declarations, rows, timers' states, initial actions);
//!    unknown names get a typo suggestion; names and payload/witness types are checked for shape.
//! 2. `check`: the rules of the whole table: cells covered, fallback rows, terminal states,
//!    reachability, unused declarations, and the payload/witness typing and ownership rules
//!    (`typing`).
//! 3. `lower`: the [`ir::Machine`], built only when the first two found nothing.
//!
//! All errors are collected (not just the first), each pointing at the offending text; the check
//! stage runs even when names did not resolve (it skips them), so one run reports everything.
//! Nothing here reads files or renders: [`crate::Diagnostics`] renders.
//!
//! [`ir::Machine`]: crate::ir::Machine

mod check;
mod lower;
pub(crate) mod names;
mod resolve;
mod typing;

use crate::diagnostic::Diagnostic;
use crate::ir::Machine;
use crate::source::Sources;
use crate::spec::Spec;

pub use names::{is_keyword, name_problem};

/// Checks `spec` (parsed from the text of `sources`) and lowers it, or returns every error
/// found, sorted by position in the spec.
pub fn validate(spec: &Spec, sources: &Sources) -> Result<Machine, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let resolved = resolve::resolve(spec, sources, &mut errors);
    let checked = check::check(spec, &resolved, &mut errors);
    if !errors.is_empty() {
        errors.sort_by_key(|d| d.primary.span.start);
        return Err(errors);
    }
    lower::lower(spec, sources, &resolved, checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"
[machine]
name = "m"
initial_actions = ["boot"]

[states.idle]
doc = "Idle."
initial = true

[states.busy]
doc = "Busy."

[states.done]
doc = "Done."
terminal = true

[events.go]
doc = "Go."
source = "caller"

[events.stop]
doc = "Stop."
source = "caller"

[guards.ok]
doc = "Ok."

[actions.boot]
doc = "Boot."

[actions.work]
doc = "Work."
"#;

    const ROWS: &str = r#"
[[row]]
from = "idle"
on = "go"
guard = "ok"
do = ["work"]
to = "busy"

[[row]]
from = "*"
on = "go"
ignore = true

[[row]]
from = ["idle", "busy"]
on = "stop"
do = ["work"]
to = "done"

[[row]]
from = "done"
on = "stop"
ignore = true
"#;

    fn codes(src: &str) -> Vec<&'static str> {
        let spec = crate::spec::parse(src).unwrap();
        match validate(&spec, &Sources::one("m.toml", src)) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(|d| d.error.code()).collect(),
        }
    }

    #[test]
    fn the_small_spec_is_valid_and_lowers() {
        let src = format!("{HEAD}{ROWS}");
        let spec = crate::spec::parse(&src).unwrap();
        let m = validate(&spec, &Sources::one("m.toml", &src)).unwrap();
        assert_eq!(m.states.len(), 3);
        assert_eq!(m.initial, 0);
        assert_eq!(m.cells.len(), 6);
        assert_eq!(m.cell(0, 0).rows, vec![0, 1]);
        assert_eq!(m.cell(1, 0).rows, vec![1]);
        assert_eq!(m.cell(2, 1).rows, vec![3]);
        assert_eq!(m.rows[1].from, vec![0, 1, 2]);
        assert!(m.rows[1].from_star);
        assert_eq!(m.initial_actions, vec![0]);
        let header = src.find("[[row]]").unwrap();
        assert_eq!(
            m.rows[0].line as usize,
            src[..header].matches('\n').count() + 1
        );
    }

    #[test]
    fn a_missing_cell_is_reported() {
        let src = format!(
            "{HEAD}{}",
            ROWS.replace("from = \"done\"", "from = \"busy\"")
        );
        let c = codes(&src);
        assert!(c.contains(&"missing-cell"), "{c:?}");
        assert!(c.contains(&"duplicate-cell"), "{c:?}");
    }

    #[test]
    fn a_guarded_last_row_has_no_fallback() {
        let src = format!(
            "{HEAD}{}",
            ROWS.replace("from = \"*\"", "from = [\"busy\", \"done\"]")
        );
        assert_eq!(codes(&src), ["no-fallback"]);
    }

    #[test]
    fn the_same_guard_twice_in_a_cell() {
        let extra = "\n[[row]]\nfrom = \"idle\"\non = \"go\"\nguard = \"ok\"\ndo = [\"work\"]\n";
        let src = format!(
            "{HEAD}{}",
            ROWS.replacen(
                "[[row]]\nfrom = \"*\"",
                &format!("{extra}\n[[row]]\nfrom = \"*\""),
                1
            )
        );
        assert_eq!(codes(&src), ["repeated-guard"]);
    }

    #[test]
    fn leaving_a_terminal_state_is_an_error() {
        let src = format!(
            "{HEAD}{}",
            ROWS.replace(
                "from = \"done\"\non = \"stop\"\nignore = true",
                "from = \"done\"\non = \"stop\"\ndo = [\"work\"]\nto = \"idle\""
            )
        );
        assert_eq!(codes(&src), ["terminal-leaves"]);
    }

    #[test]
    fn unused_and_unreachable() {
        let src = format!(
            "{HEAD}\n[states.lost]\ndoc = \"Lost.\"\n\n[actions.spare]\ndoc = \"Spare.\"\n{ROWS}\n[[row]]\nfrom = \"lost\"\non = \"stop\"\nignore = true\n"
        );
        let c = codes(&src);
        assert!(c.contains(&"unused"), "{c:?}");
        assert!(c.contains(&"unreachable-state"), "{c:?}");
    }

    #[test]
    fn unknown_names_everywhere() {
        let src = format!(
            "{HEAD}{}",
            ROWS.replace("guard = \"ok\"", "guard = \"okay\"")
                .replace("to = \"busy\"", "to = \"bussy\"")
                .replace(
                    "do = [\"work\"]\nto = \"done\"",
                    "do = [\"wrk\"]\nto = \"done\""
                )
                .replace("on = \"go\"\nignore", "on = \"goo\"\nignore")
        );
        let c = codes(&src);
        for code in [
            "unknown-guard",
            "unknown-state",
            "unknown-action",
            "unknown-event",
        ] {
            assert!(c.contains(&code), "{code} not in {c:?}");
        }
    }

    #[test]
    fn an_unknown_guard_still_counts_as_a_guard() {
        // Otherwise the `*` row after it would look dead.
        let src = format!(
            "{HEAD}{}",
            ROWS.replace("guard = \"ok\"", "guard = \"okay\"")
        );
        // Sorted by position: the declaration comes first.
        assert_eq!(codes(&src), ["unused", "unknown-guard"]);
    }

    const TYPED: &str = include_str!("../../tests/fixtures/typed.toml");

    #[test]
    fn ownership_is_checked_per_row_and_per_value() {
        assert_eq!(codes(TYPED), Vec::<&str>::new());
        let cases = [
            // A borrow after a move.
            (
                r#"do = ["log_frame", "answer"]"#,
                r#"do = ["answer", "log_frame"]"#,
            ),
            // Two moves of the witness.
            (
                r#"do = ["note_call", "expire"]"#,
                r#"do = ["note_call", "expire", "expire"]"#,
            ),
            // A move before a borrow of the witness.
            (
                r#"do = ["note_call", "expire"]"#,
                r#"do = ["expire", "note_call"]"#,
            ),
        ];
        for (from, to) in cases {
            assert_eq!(codes(&TYPED.replace(from, to)), ["use-after-move"], "{to}");
        }
        // The payload and the witness are separate values: moving one leaves the other.
        let both = TYPED.replace(
            "[actions.note_call]\ndoc = \"Note which call timed out (borrowed).\"\nwitness = \"ref\"",
            "[actions.note_call]\ndoc = \"Note which call timed out (borrowed).\"\npayload = \"move\"\nwitness = \"ref\"",
        );
        assert_eq!(codes(&both), Vec::<&str>::new());
    }

    #[test]
    fn types_are_compared_by_their_canonical_text() {
        let spaced = TYPED.replace(r#"yields = "Box<Slot>""#, r#"yields = "Box< Slot >""#);
        let spec = crate::spec::parse(&spaced).unwrap();
        let m = validate(&spec, &Sources::one("m.toml", &spaced)).unwrap();
        let can_send = m.guards.iter().find(|g| g.decl.name == "can_send").unwrap();
        assert_eq!(can_send.yields.as_deref(), Some("Box<Slot>"));
        let other = TYPED.replacen(r#"payload = "Frame""#, r#"payload = "crate::Frame""#, 1);
        // Only `frame` changes (the first match): `echo` now carries another type.
        assert!(
            codes(&other).contains(&"row-payload-mismatch"),
            "{:?}",
            codes(&other)
        );
    }

    /// A spec split in a manifest and two concern files: `a` (the states, events and the `idle`
    /// rows) and `b` (the `busy` rows, and one guarded row of (idle, go)).
    const MANIFEST: &str = r#"[machine]
name = "m"
concerns = ["a", "b"]
"#;

    const A: &str = r#"[concerns.a]
doc = "A."

[states.idle]
doc = "Idle."
initial = true

[states.busy]
doc = "Busy."

[events.go]
doc = "Go."
source = "caller"

[guards.ok]
doc = "Ok."

[actions.work]
doc = "Work."

[[row]]
from = "idle"
on = "go"
guard = "ok"
do = ["work"]
to = "busy"

[[row]]
from = "idle"
on = "go"
do = ["work"]
"#;

    const B: &str = r#"[concerns.b]
doc = "B."

[guards.fast]
doc = "Fast."

[actions.rest]
doc = "Rest."

[[row]]
from = "idle"
on = "go"
guard = "fast"
do = ["rest"]

[[row]]
from = "busy"
on = "go"
do = ["rest"]
to = "idle"
"#;

    fn split(manifest: &str, a: &str, b: &str) -> Result<Machine, Vec<&'static str>> {
        let sources = Sources::new([("machine.toml", manifest), ("a.toml", a), ("b.toml", b)]);
        let spec = crate::spec::parse(sources.text())
            .map_err(|e| e.iter().map(|d| d.error.code()).collect::<Vec<_>>())?;
        validate(&spec, &sources).map_err(|e| e.iter().map(|d| d.error.code()).collect())
    }

    const ORDER: &str = r#"
[[order]]
doc = "Fast first."
from = "idle"
on = "go"
guards = ["fast", "ok"]
"#;

    #[test]
    fn a_cell_whose_guarded_rows_span_files_needs_a_declared_order() {
        assert_eq!(split(MANIFEST, A, B).unwrap_err(), ["unordered-cell"]);
        let guards = |m: &Machine| -> Vec<String> {
            m.cell(0, 0)
                .rows
                .iter()
                .map(|&r| {
                    m.rows[r]
                        .guard
                        .map_or("-".to_owned(), |g| m.guards[g].decl.name.clone())
                })
                .collect()
        };
        // The declared order, then the unguarded row; the row table lists them in that order.
        let m = split(&format!("{MANIFEST}{ORDER}"), A, B).unwrap();
        assert_eq!(guards(&m), ["fast", "ok", "-"]);
        assert!(m.cell(0, 0).rows.windows(2).all(|w| w[0] < w[1]));
        let reversed = ORDER.replace(r#"["fast", "ok"]"#, r#"["ok", "fast"]"#);
        let m = split(&format!("{MANIFEST}{reversed}"), A, B).unwrap();
        assert_eq!(guards(&m), ["ok", "fast", "-"]);
        // Rows name their own file and line; guards and actions their concern.
        let fast = m.rows.iter().find(|r| r.guard == Some(1)).unwrap();
        assert_eq!((fast.file.as_str(), fast.line), ("b.toml", 10));
        assert_eq!(m.concerns.len(), 2);
        assert_eq!(m.guards[1].concern, Some(1));
        assert_eq!(m.actions[0].concern, Some(0));
    }

    #[test]
    fn an_order_lists_every_guard_of_its_cells_once_and_nothing_else() {
        let missing = ORDER.replace(r#"["fast", "ok"]"#, r#"["fast"]"#);
        assert_eq!(
            split(&format!("{MANIFEST}{missing}"), A, B).unwrap_err(),
            ["order-incomplete"]
        );
        let twice = ORDER.replace(r#"["fast", "ok"]"#, r#"["fast", "ok", "fast"]"#);
        assert!(
            split(&format!("{MANIFEST}{twice}"), A, B)
                .unwrap_err()
                .contains(&"order-stray")
        );
        let overlap = format!("{MANIFEST}{ORDER}{ORDER}");
        assert!(
            split(&overlap, A, B)
                .unwrap_err()
                .contains(&"order-overlap")
        );
    }

    #[test]
    fn the_unguarded_row_is_last_across_files_but_dead_after_one_of_its_own_file() {
        // B's guarded row after A's unguarded one is not dead: the fallback is last by rule.
        let unguarded_a = A
            .replace("guard = \"ok\"\n", "")
            .replace("[guards.ok]\ndoc = \"Ok.\"\n", "");
        let a = unguarded_a.replacen("do = [\"work\"]\nto = \"busy\"\n\n[[row]]\nfrom = \"idle\"\non = \"go\"\ndo = [\"work\"]\n", "do = [\"work\"]\nto = \"busy\"\n", 1);
        let m = split(MANIFEST, &a, B).unwrap();
        let cell = &m.cell(0, 0).rows;
        assert_eq!(cell.len(), 2);
        assert!(m.rows[cell[0]].guard.is_some() && m.rows[cell[1]].guard.is_none());
        // Within one file, a guarded row after the unguarded one can never fire.
        let dead = format!(
            "{A}\n[[row]]\nfrom = \"idle\"\non = \"go\"\nguard = \"ok\"\ndo = [\"work\"]\n"
        );
        assert!(
            split(MANIFEST, &dead, B)
                .unwrap_err()
                .contains(&"duplicate-cell")
        );
    }

    #[test]
    fn concern_files_match_the_manifest() {
        let wrong = B.replace("[concerns.b]", "[concerns.c]");
        assert!(
            split(MANIFEST, A, &wrong)
                .unwrap_err()
                .contains(&"concern-file")
        );
        let late = B.replace("[concerns.b]\ndoc = \"B.\"\n", "") + "[concerns.b]\ndoc = \"B.\"\n";
        assert!(
            split(MANIFEST, A, &late)
                .unwrap_err()
                .contains(&"concern-file")
        );
        let in_manifest = format!("{MANIFEST}[guards.loose]\ndoc = \"L.\"\n");
        assert!(
            split(&in_manifest, A, B)
                .unwrap_err()
                .contains(&"concern-file")
        );
    }

    /// A one-state machine with a frame event, for the credit rule and sequences.
    const CREDIT: &str = r#"
[machine]
name = "m"

[machine.credit]
doc = "Credit."
action = "credit"
events = ["frame"]
unless = ["close"]

[states.on]
doc = "On."
initial = true

[events.frame]
doc = "A frame."
source = "transport"

[events.tick]
doc = "A tick."
source = "caller"

[sequences.wrap_up]
doc = "Wrap up."
do = ["note", "close"]

[guards.bad]
doc = "Bad."

[actions.note]
doc = "Note."

[actions.close]
doc = "Close."

[actions.credit]
doc = "Credit."

[[row]]
from = "on"
on = "frame"
guard = "bad"
do = ["@wrap_up"]

[[row]]
from = "on"
on = "frame"
do = ["note"]

[[row]]
from = "on"
on = "tick"
do = ["note"]
"#;

    #[test]
    fn the_credit_action_is_appended_by_rule_and_sequences_expand() {
        let spec = crate::spec::parse(CREDIT).unwrap();
        let m = validate(&spec, &Sources::one("m.toml", CREDIT)).unwrap();
        let names = |r: usize| -> Vec<&str> {
            m.rows[r]
                .actions
                .iter()
                .map(|&a| m.actions[a].decl.name.as_str())
                .collect()
        };
        assert_eq!(names(0), ["note", "close"]); // closes: no credit back
        assert_eq!(names(1), ["note", "credit"]);
        assert_eq!(names(2), ["note"]); // not a frame
        let by_hand = CREDIT.replacen("do = [\"note\"]\n", "do = [\"note\", \"credit\"]\n", 1);
        assert!(codes(&by_hand).contains(&"derived-action"));
        let mixed = CREDIT.replace("on = \"tick\"", "on = [\"tick\", \"frame\"]");
        assert!(codes(&mixed).contains(&"credit-mixed"));
        let unknown = CREDIT.replace("@wrap_up", "@wrap");
        assert!(codes(&unknown).contains(&"unknown-sequence"));
        let unused = format!("{CREDIT}\n[sequences.spare]\ndoc = \"S.\"\ndo = [\"note\"]\n");
        assert!(codes(&unused).contains(&"unused-sequence"));
    }
}
