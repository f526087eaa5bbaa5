//! `cargo run --release -p model-check [-- --mutants]`: explores the connection machine and
//! exits 1 on any violated property, incomplete search, changed pinned count or uncovered row.

use std::process::ExitCode;
use std::time::Instant;

use model_check::harness::{Coverage, Variant};
use model_check::{check, configurations, coverage_summary, mutants};

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
        ["--mutants"] => run_mutants(),
        _ => {
            eprintln!("usage: model-check [--mutants | --unpinned | --config NAME]");
            ExitCode::from(2)
        }
    }
}

fn run_checks(unpinned: bool, only: Option<&str>) -> ExitCode {
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
    for (name, _) in model_check::harness::RUN_GUARDS {
        if whole_run && !guards.contains(&name) {
            problems.push(format!(
                "vacuity guard \"{name}\" was met by no configuration"
            ));
        }
    }
    let (fired, total, missing) = coverage_summary(&coverage);
    println!("row coverage: {fired}/{total} rows fired (rows marked impossible excluded)");
    for m in missing.iter().filter(|_| whole_run) {
        problems.push(format!("uncovered {m}"));
    }
    let secs = start.elapsed().as_secs_f64();
    for p in &problems {
        println!("FAIL {p}");
    }
    let verdict = if problems.is_empty() { "OK" } else { "FAIL" };
    println!(
        "model-check: {verdict} unique={unique_total} depth={depth_max} rows={fired}/{total} seconds={secs:.1}"
    );
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run_mutants() -> ExitCode {
    let cases = mutants::all();
    let total = cases.len();
    let mut caught = 0;
    for case in cases {
        let start = Instant::now();
        let mut by = None;
        for config in configurations() {
            let out = check(&config, case.variant.clone(), &Coverage::for_table(), true);
            if let Some((name, _)) = out.failures.into_iter().next() {
                by = Some(format!("{} in {}", name, config.name));
                break;
            }
        }
        let secs = start.elapsed().as_secs_f64();
        match by {
            Some(by) => {
                caught += 1;
                println!("caught   {:<55} by \"{by}\" ({secs:.1}s)", case.name);
            }
            None => println!("SURVIVED {:<55} ({secs:.1}s)", case.name),
        }
    }
    println!("mutants: {caught}/{total} caught");
    if caught == total {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
