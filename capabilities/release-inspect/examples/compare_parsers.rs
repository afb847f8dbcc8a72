//! Measures our parser against `hunch` on guessit's movie and episode
//! cases: accuracy per field, whole-case accuracy (all fields and key
//! fields) and parse speed. Figures are recorded in docs/release-parsing.md.
//!
//! Run in release mode, speed figures from a debug build mean nothing:
//! `cargo run --release -p cap-release-inspect --example compare_parsers --features compare`
//! Add a field name (e.g. `title`) as argument to list the cases each
//! parser gets wrong for that field.

use std::hint::black_box;
use std::time::Instant;

use cap_release_inspect::conformance::{self, CaseSet, Report};
use cap_release_inspect::parse::ReleaseInfo;
use cap_release_inspect::{hunch_parse, parse};

/// Timed passes over all names; the first, untimed pass warms caches and
/// builds hunch's lazily compiled regexes.
const PASSES: usize = 20;

type Parser = fn(&str) -> ReleaseInfo;

fn main() {
    let sets = [conformance::load("movies.yml"), conformance::load("episodes.yml")];
    let parsers: [(&str, Parser); 2] = [("parser", parse::inspect), ("hunch", hunch_parse::inspect)];
    let misses_of = std::env::args().nth(1);

    // First call in a fresh process: includes building any lazily compiled
    // patterns, which a freshly instantiated component pays on its first
    // invocation. Taken before anything else warms them.
    let first = sets[0].cases[0].name.clone();
    let cold: Vec<f64> = parsers
        .iter()
        .map(|(_, p)| {
            let start = Instant::now();
            black_box(p(black_box(&first)));
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();

    let reports: Vec<Report> = parsers
        .iter()
        .map(|(_, p)| {
            let [movies, episodes] = &sets;
            conformance::merge(conformance::score(movies, p), conformance::score(episodes, p))
        })
        .collect();

    println!("Accuracy on guessit movies.yml + episodes.yml ({} cases)\n", reports[0].cases);
    println!("{:<20} {:>18} {:>18}", "field", parsers[0].0, parsers[1].0);
    for (i, field) in reports[0].fields.iter().enumerate() {
        let other = &reports[1].fields[i];
        println!(
            "{:<20} {:>9}/{:<4}{:>5.1}% {:>9}/{:<4}{:>5.1}%",
            field.field,
            field.correct,
            field.expected,
            field.percent(),
            other.correct,
            other.expected,
            other.percent()
        );
    }
    let (a, b) = (&reports[0], &reports[1]);
    println!(
        "{:<20} {:>9}/{:<4}{:>5.1}% {:>9}/{:<4}{:>5.1}%",
        "WHOLE CASE",
        a.passed,
        a.cases,
        a.case_percent(),
        b.passed,
        b.cases,
        b.case_percent()
    );
    println!(
        "{:<20} {:>9}/{:<4}{:>5.1}% {:>9}/{:<4}{:>5.1}%",
        "WHOLE CASE (KEY)",
        a.key_passed,
        a.cases,
        a.key_case_percent(),
        b.key_passed,
        b.cases,
        b.key_case_percent()
    );
    println!("(key fields: {})", conformance::KEY_FIELDS.join(", "));
    println!(
        "(skipped: {} marked failing by guessit, {} needing guessit options)\n",
        a.skipped_failing, a.skipped_options
    );

    let names: Vec<&str> = sets.iter().flat_map(|s: &CaseSet| s.cases.iter().map(|c| c.name.as_str())).collect();
    println!("Speed over {} names, {PASSES} passes (mean per name)", names.len());
    for (label, parse) in parsers {
        let (ns, per_sec) = time(&names, parse);
        println!("{label:<10} {ns:>10.0} ns/name {per_sec:>12.0} names/s");
    }
    for ((label, _), ms) in parsers.iter().zip(&cold) {
        println!("{label:<10} first call in a fresh process: {ms:.2} ms");
    }

    if let Some(field) = misses_of {
        for ((label, _), report) in parsers.iter().zip(&reports) {
            println!("\n{label}: misses on {field}");
            for m in report.misses.iter().filter(|m| m.field == field) {
                println!("  {}\n    want [{}] got [{}]", m.case, m.expected, m.got);
            }
        }
    }
}

/// Mean nanoseconds per name and names per second over [`PASSES`] passes.
fn time(names: &[&str], parse: Parser) -> (f64, f64) {
    for n in names {
        black_box(parse(black_box(n)));
    }
    let start = Instant::now();
    for _ in 0..PASSES {
        for n in names {
            black_box(parse(black_box(n)));
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let count = (names.len() * PASSES) as f64;
    (secs * 1e9 / count, count / secs)
}
