//! Beyond the exhaustive bound: seeded random walks through the same model, with larger
//! budgets and repeatable junk, checking every safety property after every step.

use std::time::Duration;

use stateright::{Expectation, Model};

use crate::model::{Bounds, Harness, Variant};
use crate::world::{Move, World};
use mcp_machine::EraMode;

/// Budgets for long walks: many calls, crashes and busy sends; junk may repeat.
pub fn walk_bounds() -> Bounds {
    Bounds {
        calls: 40,
        stops: 2,
        crashes: 12,
        busy: 30,
        gens: u64::MAX,
        notifies: 5,
        junk: u32::MAX,
        depth: 0,
        subscriptions: 1,
        first_connect: Duration::from_secs(60),
        jitter_extremes: false,
        waits: 5,
        // The first half of the callers wait for ready.
        ready_waiters: 20,
        expiries: 8,
        init_timeout: None,
        era: EraMode::Auto,
        probe_timeout: None,
        servers: u8::MAX,
        listen: true,
        listen_notes: 6,
        listen_ends: 6,
        // Frames arrive in bursts of up to four before a credit comes back.
        read_window: 4,
        // Tasks in both eras, polled to their end.
        tasks: 20,
        tasks_on: true,
        // One task resumed by its id, whenever the walk likes.
        resumes: 1,
    }
}

/// What a batch of walks did.
#[derive(Debug, Default)]
pub struct WalkReport {
    /// Events fed to the machine.
    pub events: usize,
    /// Walks run.
    pub walks: usize,
    /// Walks that reached ready.
    pub reached_ready: usize,
    /// Calls answered with a server result.
    pub calls_ok: usize,
}

/// Runs `walks` walks of at most `steps` moves each from `seed`. A violated property is an
/// `Err` naming it, with the seed and the trace of the walk.
pub fn run(seed: u64, walks: usize, steps: usize) -> Result<WalkReport, String> {
    let model = Harness::new(walk_bounds(), Variant::Real).repeating_junk();
    let props = model.properties();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut report = WalkReport::default();
    let mut moves = Vec::new();
    for walk in 0..walks {
        let mut w: World = model.initial();
        let mut path = Vec::new();
        for step in 0..steps {
            moves.clear();
            model.moves(&w, &mut moves);
            // Stops are rare, so that walks live long; they come near the end.
            if step < steps * 9 / 10 {
                moves.retain(|m| !matches!(m, Move::Stop(_)));
            }
            if moves.is_empty() {
                break;
            }
            let mv = moves[rng.usize(..moves.len())];
            path.push(mv);
            w = model.apply(&w, mv, None);
            report.events += 1;
            for p in &props {
                if p.expectation == Expectation::Always && !(p.condition)(&model, &w) {
                    return Err(format!(
                        "walk {walk} of seed {seed}: \"{}\" violated after {} steps\n{}",
                        p.name,
                        path.len(),
                        crate::render_trace(&model, 0, path)
                    ));
                }
            }
        }
        report.walks += 1;
        if w.ghost.seen & crate::properties::guards::READY != 0 {
            report.reached_ready += 1;
        }
        report.calls_ok += w.ghost.calls.values().filter(|c| c.replies == 1).count();
    }
    Ok(report)
}
