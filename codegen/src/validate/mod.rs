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
}
