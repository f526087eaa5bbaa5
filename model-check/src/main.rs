//! `cargo run --release -p model-check [-- --mutants]`: explores the connection machine and
//! exits 1 on any violated property, incomplete search, changed pinned count or uncovered row.

use std::process::ExitCode;
use std::time::Instant;

use model_check::coverage::Coverage;
use model_check::model::Variant;
use model_check::{cell_summary, check, configurations, coverage_summary, front, mutants};

/// See the manifest: freed states are reused, not returned to the system and faulted in again.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => run_checks(false, None),
        ["--unpinned"] => run_checks(true, None),
        ["--config", name] => run_checks(false, Some(name)),
        ["--mutants"] => run_mutants(false, None, false, true),
        ["--mutants", "sample"] => run_mutants(false, None, false, false),
        ["--mutants", "all"] => run_mutants(true, None, false, true),
        ["--mutants", "shallow"] => run_mutants(true, None, true, true),
        ["--mutants", "list"] => {
            for case in mutants::all() {
                println!("{}", case.name);
            }
            ExitCode::SUCCESS
        }
        ["--mutants", "--filter", f] => run_mutants(true, Some(f), false, true),
        _ => {
            eprintln!(
                "usage: model-check [--unpinned | --config NAME | --config front | --mutants [all | sample | shallow | list | --filter TEXT]]"
            );
            ExitCode::from(2)
        }
    }
}

/// The bridge front's configurations: their lines, and the problems found (failed
/// properties, a changed pin, an unfinished search, rows never fired in a whole run).
fn run_front(unpinned: bool, only: Option<&str>) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut unique = 0;
    let mut fired = vec![false; mcp_machine::front::table::ROWS.len()];
    let mut guards_met = Vec::new();
    for config in front::configurations() {
        if only.is_some_and(|name| name != config.name) {
            continue;
        }
        let out = front::check(&config, None, model_check::threads());
        println!(
            "config {:<15} unique={:<9} depth={:<3} time={:.1}s",
            out.name, out.unique, out.depth, out.seconds
        );
        unique += out.unique;
        for (f, o) in fired.iter_mut().zip(&out.fired) {
            *f |= *o;
        }
        guards_met.extend(out.guards_met.iter().copied());
        if !out.complete {
            problems.push(format!("{}: the search did not finish", out.name));
        }
        if !unpinned && out.unique != config.pinned_unique {
            problems.push(format!(
                "{}: {} unique states, pinned {}: the front's table, its core or the harness \
                 changed; update the pin in model-check/src/front/mod.rs on purpose",
                out.name, out.unique, config.pinned_unique
            ));
        }
        for (name, trace) in out.failures {
            problems.push(format!("{}: property \"{name}\" fails:\n{trace}", out.name));
        }
    }
    let missing = front::unfired(&fired);
    let total = mcp_machine::front::table::ROWS
        .iter()
        .filter(|r| !r.impossible)
        .count();
    println!(
        "front row coverage: {}/{total} rows fired",
        total - missing.len()
    );
    if only.is_none() {
        problems.extend(missing.into_iter().map(|m| format!("uncovered {m}")));
        for guard in front::guards() {
            if !guards_met.contains(&guard) {
                problems.push(format!(
                    "vacuity guard \"{guard}\" was met by no configuration"
                ));
            }
        }
    }
    (problems, unique)
}

fn run_checks(unpinned: bool, only: Option<&str>) -> ExitCode {
    if let Some(name) = only.filter(|n| n.starts_with("front")) {
        // `--config front`: every configuration of the front, judged as a whole run.
        let (problems, unique) = run_front(unpinned, (name != "front").then_some(name));
        for p in &problems {
            println!("FAIL {p}");
        }
        let verdict = if problems.is_empty() { "OK" } else { "FAIL" };
        println!("model-check: {verdict} front unique={unique}");
        return if problems.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let start = Instant::now();
    let coverage = Coverage::for_table();
    let mut problems = Vec::new();
    let mut guards = Vec::new();
    let (mut unique_total, mut depth_max) = (0, 0);
    for config in configurations() {
        if only.is_some_and(|name| name != config.name) {
            continue;
        }
        let out = check(&config, Variant::Real, &coverage, false);
        let secs = out.elapsed.as_secs_f64();
        println!(
            "config {:<15} states={:<10} unique={:<9} depth={:<3} time={:.1}s states/s={:.0}",
            out.name,
            out.states,
            out.unique,
            out.depth,
            secs,
            out.states as f64 / secs.max(1e-9)
        );
        unique_total += out.unique;
        depth_max = depth_max.max(out.depth);
        guards.extend(out.guards_met.iter().copied());
        if !out.done {
            problems.push(format!("{}: the search did not finish", out.name));
        }
        if !unpinned && out.unique != config.pinned_unique {
            problems.push(format!(
                "{}: {} unique states, pinned {}: the table, the machine or the harness changed \
                 (or the search was cut short); update the pin in model-check/src/lib.rs on purpose",
                out.name, out.unique, config.pinned_unique
            ));
        }
        for (name, trace) in out.failures {
            problems.push(format!("{}: property \"{name}\" fails:\n{trace}", out.name));
        }
    }
    // One configuration alone need not meet the run's guards or fire every row.
    let whole_run = only.is_none();
    for (name, _) in model_check::properties::guards::RUN_GUARDS {
        if whole_run && !guards.contains(&name) {
            problems.push(format!(
                "vacuity guard \"{name}\" was met by no configuration"
            ));
        }
    }
    let (fired, total, missing) = coverage_summary(&coverage);
    println!("row coverage: {fired}/{total} rows fired (rows marked impossible excluded)");
    for m in &missing {
        if whole_run {
            problems.push(format!("uncovered {m}"));
        } else {
            println!("not fired in this configuration: {m}");
        }
    }
    let (cells_fired, cells_total, cells_missing) = cell_summary(&coverage);
    println!(
        "cell coverage: {cells_fired}/{cells_total} (state, event) cells fired (cells whose rows \
         are all impossible excluded)"
    );
    for m in cells_missing.iter().filter(|_| whole_run) {
        problems.push(format!("uncovered {m}"));
    }
    let (front_problems, front_unique) = if whole_run {
        run_front(unpinned, None)
    } else {
        (Vec::new(), 0)
    };
    problems.extend(front_problems);
    let secs = start.elapsed().as_secs_f64();
    for p in &problems {
        println!("FAIL {p}");
    }
    let verdict = if problems.is_empty() { "OK" } else { "FAIL" };
    println!(
        "model-check: {verdict} unique={unique_total} depth={depth_max} rows={fired}/{total} front={front_unique} seconds={secs:.1}"
    );
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Generated mutants run by `--mutants` (CI): a fixed, seeded sample; `--mutants all` runs
/// every one. 50: a mutant caught only by a vacuity guard explores every configuration to
/// its full bound (about 7 min each here): 200 made the step about an hour, 100 half an hour,
/// and CI must stay well within its time.
const SAMPLE: usize = 50;
const SAMPLE_SEED: u64 = 0x6d75_7461_6e74;

/// A generated mutant's place in the sample's order: a seeded hash (FNV-1a) of its name
/// alone. Rows added to the table bring their own mutants in where they sort, displacing
/// only the sample's tail; every other mutant keeps its place (a shuffle of the whole list
/// redrew the sample whenever the table grew, onto mutants never judged before).
fn sample_rank(name: &str) -> u64 {
    name.bytes()
        .fold(0xcbf2_9ce4_8422_2325 ^ SAMPLE_SEED, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// Judges the mutants: every one (`all`, or those whose name holds `filter`), else the
/// hand-written ones (`hand`) and CI's sample of the generated ones.
fn run_mutants(all: bool, filter: Option<&str>, shallow: bool, hand: bool) -> ExitCode {
    let equivalent = mutants::equivalent();
    let generated = mutants::generated();
    let generated_total = generated.len();
    let mut cases: Vec<_> = if hand {
        mutants::hand_written()
    } else {
        Vec::new()
    };
    if all || filter.is_some() {
        cases.extend(generated);
    } else {
        // Every generated mutant in the order of its rank, then the first SAMPLE not argued
        // equivalent are taken (those survive by design and would each cost a whole run).
        // Arguing one more equivalent replaces it alone: the rest of the sample stays as it was.
        let mut pool = generated;
        pool.sort_by_key(|c| sample_rank(&c.name));
        cases.extend(
            pool.into_iter()
                .filter(|c| !equivalent.contains(&c.name))
                .take(SAMPLE),
        );
        let with_hand = if hand {
            "the hand-written ones and "
        } else {
            ""
        };
        println!(
            "mutants: {with_hand}a sample of {SAMPLE} of the {generated_total} generated from \
             the table (ranked by a hash of their names, seed {SAMPLE_SEED:#x}); `-- --mutants \
             all` runs every one"
        );
    }
    if let Some(f) = filter {
        cases.retain(|c| c.name.contains(f));
    }
    let mut problems = Vec::new();
    let names: std::collections::BTreeSet<_> = mutants::all().into_iter().map(|c| c.name).collect();
    for stale in equivalent.iter().filter(|n| !names.contains(*n)) {
        problems.push(format!(
            "\"{stale}\" is listed in {} but no such mutant is generated: the table changed, \
             review the entry",
            mutants::EQUIVALENT_FILE
        ));
    }
    let total = cases.len();
    let (mut caught, mut equivalents) = (0, 0);
    // The bridge front's deliberate bugs (`--mutants` and `--mutants all`, or a filter naming
    // them): each must be caught by the property it breaks.
    let front_cases: Vec<_> = front::mutants()
        .into_iter()
        .filter(|(m, _)| filter.map_or(hand, |f| format!("front {m:?}").contains(f)))
        .collect();
    let total = total + front_cases.len();
    for (mutant, expected) in front_cases {
        let start = Instant::now();
        let verdict = front::judge(mutant, model_check::threads());
        let secs = start.elapsed().as_secs_f64();
        match verdict {
            Some(by) => {
                caught += 1;
                println!("caught     front {mutant:?} by {by} ({secs:.1}s)");
                if !by.starts_with(expected) {
                    println!("           (expected to be caught by \"{expected}\")");
                }
            }
            None => {
                println!("SURVIVED   front {mutant:?} ({secs:.1}s)");
                problems.push(format!("mutant survived: front {mutant:?}"));
            }
        }
    }
    for case in cases {
        let start = Instant::now();
        let verdict = mutants::judge(&case, shallow);
        let secs = start.elapsed().as_secs_f64();
        let listed = equivalent.contains(&case.name);
        match (verdict, listed) {
            (Some(by), false) => {
                caught += 1;
                println!("caught     {} by {by} ({secs:.1}s)", case.name);
            }
            (Some(by), true) => {
                caught += 1;
                println!("caught     {} by {by} ({secs:.1}s)", case.name);
                problems.push(format!(
                    "\"{}\" is listed as equivalent but is caught: take it out of {}",
                    case.name,
                    mutants::EQUIVALENT_FILE
                ));
            }
            (None, true) => {
                equivalents += 1;
                println!("equivalent {} ({secs:.1}s)", case.name);
            }
            (None, false) => {
                println!("SURVIVED   {} ({secs:.1}s)", case.name);
                problems.push(format!("mutant survived: {}", case.name));
            }
        }
    }
    for p in &problems {
        println!("FAIL {p}");
    }
    println!("mutants: {caught}/{total} caught ({equivalents} equivalent)");
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
