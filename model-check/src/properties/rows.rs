//! The table's rows: a row marked impossible never fires (coverage, that every other row and
//! cell fires, is counted in [`crate::coverage`]).

use mcp_machine::{ROWS, Step};
use stateright::Property;

use super::{fail, ok};
use crate::model::Harness;
use crate::world::World;

/// A row marked impossible in the table fired.
pub const IMPOSSIBLE_ROW: u64 = 1 << 14;

pub(super) fn impossible_never_fire() -> Property<Harness> {
    Property::<Harness>::always("impossible rows never fire", |_, w| ok(w, IMPOSSIBLE_ROW))
}

/// A row fired: not one marked impossible.
pub(crate) fn fired(n: &mut World, step: &Step) {
    if ROWS
        .get(usize::from(step.row))
        .is_some_and(|r| r.impossible)
    {
        fail(n, IMPOSSIBLE_ROW);
    }
}
