//! A level-synchronous breadth-first explorer for stateright [`Model`]s in which every state
//! counted is a state checked.
//!
//! stateright 0.31's BFS skips a state at the depth bound *before* evaluating its properties
//! while still counting it, and its multi-threaded search does not visit levels in lockstep,
//! so with a depth bound a state first reached by a longer path may be cut off and the unique
//! count varies between runs. This explorer runs the same [`Model`] (its initial states,
//! actions, successors and [`Property`](stateright::Property) list) level by level: level `d` holds exactly the
//! states whose shortest trace has `d` moves; every state of levels `0..=max_moves` is checked
//! against every property and only states of levels below `max_moves` are expanded. The set of
//! states per level does not depend on thread timing, so the counts are the same with one
//! thread or many.
//!
//! States are deduplicated by a 64-bit fingerprint (as stateright does); each fingerprint keeps
//! its parent's, and a trace is rebuilt by replaying the model from an initial state, picking
//! at each step the move whose successor has the next fingerprint. Only `always` and
//! `sometimes` properties are supported; it is not a liveness checker.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use stateright::{Expectation, Model};

/// A state's fingerprint: a deterministic 64-bit hash of it.
pub type Fingerprint = u64;

/// States handed to a worker at a time.
const CHUNK: usize = 256;

/// The seed of every fingerprint.
const FINGERPRINT_SEED: u64 = 0x6d63_702d_636c_6965;

/// The fingerprint of a state: foldhash's quality variant with a fixed seed (the same in every
/// run; several times faster than SipHash on the many small writes a derived `Hash` makes).
pub fn fingerprint<T: Hash>(state: &T) -> Fingerprint {
    foldhash::quality::FixedState::with_seed(FINGERPRINT_SEED).hash_one(state)
}

/// A hasher that passes a fingerprint through (the keys are hashes already).
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Seen = DashMap<Fingerprint, Fingerprint, BuildHasherDefault<PassThrough>>;

/// What one exploration found.
#[derive(Debug)]
pub struct Exploration<A> {
    /// Unique states found, every one of them checked.
    pub unique: usize,
    /// Successors generated (with repeats).
    pub generated: usize,
    /// The most moves of any checked state's shortest trace.
    pub depth: usize,
    /// Per property: for `always`, a shortest trace to a violation; for `sometimes`, a shortest
    /// trace to an example: the index of its initial state and its moves. Properties without an
    /// entry had none within the bound.
    pub discoveries: BTreeMap<&'static str, (usize, Vec<A>)>,
    /// Whether every level up to the bound was explored (false when stopped at a failure).
    pub complete: bool,
    /// Wall time.
    pub elapsed: Duration,
    /// States per level.
    pub levels: Vec<usize>,
}

/// Explores `model` breadth-first up to `max_moves` moves with `threads` workers. With
/// `stop_at_first_failure`, the search ends after the level in which an `always` property
/// first fails.
pub fn explore<M>(
    model: &M,
    max_moves: usize,
    threads: usize,
    stop_at_first_failure: bool,
) -> Exploration<M::Action>
where
    M: Model + Sync,
    M::State: Hash + Send + Sync,
    M::Action: Clone + Send,
{
    let start = Instant::now();
    let properties = model.properties();
    assert!(
        properties
            .iter()
            .all(|p| p.expectation != Expectation::Eventually),
        "the explorer checks `always` and `sometimes` properties only"
    );
    let seen: Seen = DashMap::default();
    // Per property: the first (level, fingerprint) found, least fingerprint within a level so
    // that the trace reported does not depend on thread timing.
    let found: Mutex<BTreeMap<usize, (usize, Fingerprint)>> = Mutex::new(BTreeMap::new());
    let failed = AtomicBool::new(false);
    let generated = AtomicUsize::new(0);
    let level_count = AtomicUsize::new(0);

    // The level each property was first discovered at: later levels need not evaluate it.
    let found_at: Vec<AtomicUsize> = properties
        .iter()
        .map(|_| AtomicUsize::new(usize::MAX))
        .collect();
    let check = |state: &M::State, fp: Fingerprint, level: usize| {
        for (i, p) in properties.iter().enumerate() {
            if found_at[i].load(Ordering::Relaxed) < level {
                continue;
            }
            let holds = (p.condition)(model, state);
            let discovery = match p.expectation {
                Expectation::Always => !holds,
                Expectation::Sometimes => holds,
                Expectation::Eventually => false,
            };
            if discovery {
                if p.expectation == Expectation::Always {
                    failed.store(true, Ordering::Relaxed);
                }
                found_at[i].fetch_min(level, Ordering::Relaxed);
                let mut f = found.lock().unwrap_or_else(|e| e.into_inner());
                let entry = f.entry(i).or_insert((level, fp));
                if (level, fp) < *entry {
                    *entry = (level, fp);
                }
            }
        }
    };

    // States are boxed, with their fingerprints: handing them between levels and workers
    // moves 16 bytes each, not whole states (which made most of the run's page faults), and
    // a parent's fingerprint is never computed twice.
    let mut frontier: Vec<(Fingerprint, Box<M::State>)> = Vec::new();
    for s in model.init_states() {
        let fp = fingerprint(&s);
        if seen.insert(fp, fp).is_none() {
            check(&s, fp, 0);
            frontier.push((fp, Box::new(s)));
        }
    }
    let mut levels = vec![frontier.len()];
    let mut complete = true;
    let mut level = 0;
    while level < max_moves && !frontier.is_empty() {
        if stop_at_first_failure && failed.load(Ordering::Relaxed) {
            complete = false;
            break;
        }
        // The frontier is handed out in chunks that are dropped once expanded, and the last
        // level is checked but never stored: peak memory is about one level, not two.
        let last = level + 1 == max_moves;
        let mut chunks = Vec::with_capacity(frontier.len().div_ceil(CHUNK));
        let mut states = frontier.into_iter();
        loop {
            let chunk: Vec<_> = states.by_ref().take(CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            chunks.push(chunk);
        }
        let chunks = Mutex::new(chunks);
        let next: Mutex<Vec<(Fingerprint, Box<M::State>)>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..threads.max(1) {
                scope.spawn(|| {
                    let mut local = Vec::new();
                    let mut moves = Vec::new();
                    let mut count = 0;
                    loop {
                        let Some(chunk) = chunks.lock().unwrap_or_else(|e| e.into_inner()).pop()
                        else {
                            break;
                        };
                        for (parent, state) in chunk {
                            moves.clear();
                            model.actions(&state, &mut moves);
                            for mv in moves.drain(..) {
                                let Some(succ) = model.next_state(&state, mv) else {
                                    continue;
                                };
                                count += 1;
                                let fp = fingerprint(&succ);
                                let fresh = match seen.entry(fp) {
                                    dashmap::Entry::Occupied(_) => false,
                                    dashmap::Entry::Vacant(v) => {
                                        v.insert(parent);
                                        true
                                    }
                                };
                                if fresh {
                                    check(&succ, fp, level + 1);
                                    if last {
                                        level_count.fetch_add(1, Ordering::Relaxed);
                                    } else {
                                        local.push((fp, Box::new(succ)));
                                    }
                                }
                            }
                        }
                    }
                    generated.fetch_add(count, Ordering::Relaxed);
                    next.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .append(&mut local);
                });
            }
        });
        frontier = next.into_inner().unwrap_or_else(|e| e.into_inner());
        level += 1;
        levels.push(frontier.len() + level_count.swap(0, Ordering::Relaxed));
    }
    let found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    let discoveries = found
        .into_iter()
        .map(|(i, (_, fp))| (properties[i].name, trace_to(model, &seen, fp)))
        .collect();
    Exploration {
        unique: seen.len(),
        generated: generated.into_inner(),
        depth: levels.iter().rposition(|&n| n > 0).unwrap_or(0),
        discoveries,
        complete,
        elapsed: start.elapsed(),
        levels,
    }
}

/// The initial state (its index) and the moves from it to the state with fingerprint `target`.
fn trace_to<M: Model>(model: &M, seen: &Seen, target: Fingerprint) -> (usize, Vec<M::Action>)
where
    M::State: Hash,
    M::Action: Clone,
{
    let mut chain = vec![target];
    let mut at = target;
    while let Some(parent) = seen.get(&at).map(|p| *p) {
        if parent == at {
            break;
        }
        chain.push(parent);
        at = parent;
    }
    chain.reverse();
    let Some((init, mut state)) = model
        .init_states()
        .into_iter()
        .enumerate()
        .find(|(_, s)| fingerprint(s) == chain[0])
    else {
        return (0, Vec::new());
    };
    let mut trace = Vec::new();
    for want in &chain[1..] {
        let mut moves = Vec::new();
        model.actions(&state, &mut moves);
        let step = moves.into_iter().find_map(|mv| {
            let succ = model.next_state(&state, mv.clone())?;
            (fingerprint(&succ) == *want).then_some((mv, succ))
        });
        match step {
            Some((mv, succ)) => {
                trace.push(mv);
                state = succ;
            }
            None => break,
        }
    }
    (init, trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateright::Property;

    /// Counts up to 5 by +1 or +2; "reaches 5" can only be found at the last level checked.
    struct Counter;

    impl Model for Counter {
        type State = u8;
        type Action = u8;
        fn init_states(&self) -> Vec<u8> {
            vec![0]
        }
        fn actions(&self, s: &u8, out: &mut Vec<u8>) {
            if *s < 5 {
                out.push(1);
                out.push(2);
            }
        }
        fn next_state(&self, s: &u8, a: u8) -> Option<u8> {
            Some((*s + a).min(5))
        }
        fn properties(&self) -> Vec<Property<Self>> {
            vec![
                Property::always("below five", |_, s| *s < 5),
                Property::sometimes("four", |_, s| *s == 4),
            ]
        }
    }

    #[test]
    fn the_last_level_is_checked_and_counted_once() {
        // Within 2 moves: 0, {1,2}, {3,4}: 5 is out of reach, 4 is found at the bound.
        let e = explore(&Counter, 2, 2, false);
        assert_eq!(e.unique, 5);
        assert_eq!(e.levels, vec![1, 2, 2]);
        assert_eq!(e.depth, 2);
        assert!(!e.discoveries.contains_key("below five"));
        assert_eq!(e.discoveries["four"], (0, vec![2, 2]));
        // Three moves reach 5 on the last level: the violation is found there.
        let e = explore(&Counter, 3, 2, false);
        assert_eq!(e.discoveries["below five"].1.len(), 3);
        assert!(e.complete);
    }

    #[test]
    fn counts_do_not_depend_on_threads() {
        let one = explore(&Counter, 4, 1, false);
        let two = explore(&Counter, 4, 2, false);
        assert_eq!(one.unique, two.unique);
        assert_eq!(one.levels, two.levels);
        assert_eq!(one.discoveries, two.discoveries);
    }
}
