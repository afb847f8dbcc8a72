//! Measures our parser against `hunch` (and guessit, when given its
//! answers) on guessit's movie and episode cases and on every set of
//! Capstan's corpus: accuracy per field and whole case (all fields and key
//! fields), set by set, and parse speed. Figures are recorded in
//! docs/release-parsing.md.
//!
//! `scripts/compare-release-parsers.sh` runs it with guessit: it installs
//! guessit, has it read the names this prints with `--names`, and passes
//! its answers back with `--guessit FILE`. Alone:
//! `cargo run --release -p cap-release-inspect --example compare_parsers --features compare`
//! (release mode: speed figures from a debug build mean nothing). Add a
//! field name (e.g. `title`) to list the cases each parser gets wrong for
//! that field.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use cap_release_inspect::conformance::{self, CaseSet, Report};
use cap_release_inspect::guessit_results::GuessitResults;
use cap_release_inspect::parse::ReleaseInfo;
use cap_release_inspect::{hunch_parse, parse};

/// Timed passes over all names; the first, untimed pass warms caches and
/// builds hunch's lazily compiled regexes.
const PASSES: usize = 20;

type Parser<'a> = Box<dyn Fn(&str) -> ReleaseInfo + 'a>;
type NativeParser = fn(&str) -> ReleaseInfo;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut list_names, mut guessit, mut misses_of) = (false, None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--names" => list_names = true,
            "--guessit" => guessit = Some(args.next().expect("--guessit needs a results file")),
            field => misses_of = Some(field.to_string()),
        }
    }
    let mut sets: Vec<(String, CaseSet)> =
        ["movies.yml", "episodes.yml"].iter().map(|f| (f.to_string(), conformance::load(f))).collect();
    sets.extend(conformance::corpus().into_iter().map(|(name, set)| (format!("corpus/{name}.yml"), set)));
    if list_names {
        for (_, set) in &sets {
            set.cases.iter().for_each(|c| println!("{}", c.name));
        }
        return;
    }

    // First call in a fresh process: includes building any lazily compiled
    // patterns, which a freshly instantiated component pays on its first
    // invocation. Taken before anything else warms them.
    let native: [(&str, NativeParser); 2] = [("parser", parse::inspect), ("hunch", hunch_parse::inspect)];
    let first = sets[0].1.cases[0].name.clone();
    let cold: Vec<f64> = native
        .iter()
        .map(|(_, p)| {
            let start = Instant::now();
            black_box(p(black_box(&first)));
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();

    let answers = guessit.map(|file| {
        let answers = GuessitResults::load(Path::new(&file)).unwrap_or_else(|e| panic!("{e}"));
        println!("guessit answers for {} names read from {file}\n", answers.len());
        answers
    });
    let mut parsers: Vec<(&str, Parser)> = native.iter().map(|&(n, p)| (n, Box::new(p) as Parser)).collect();
    if let Some(answers) = &answers {
        parsers.push(("guessit", Box::new(|name: &str| answers.inspect(name))));
    }

    // guessit's two files, then both together, then each corpus set.
    let per_set: Vec<Vec<Report>> =
        sets.iter().map(|(_, set)| parsers.iter().map(|(_, p)| conformance::score(set, p)).collect()).collect();
    let both: Vec<Report> =
        (0..parsers.len()).map(|k| conformance::merge(per_set[0][k].clone(), per_set[1][k].clone())).collect();
    let names: Vec<&str> = parsers.iter().map(|(n, _)| *n).collect();
    table(&format!("{} + {}", sets[0].0, sets[1].0), &names, &both);
    for ((set, _), reports) in sets.iter().zip(&per_set) {
        table(set, &names, reports);
    }

    let all: Vec<&str> = sets.iter().flat_map(|(_, s)| s.cases.iter().map(|c| c.name.as_str())).collect();
    println!("Speed over {} names, {PASSES} passes (mean per name)", all.len());
    for (label, parse) in native {
        let (ns, per_sec) = time(&all, parse);
        println!("{label:<10} {ns:>10.0} ns/name {per_sec:>12.0} names/s");
    }
    for ((label, _), ms) in native.iter().zip(&cold) {
        println!("{label:<10} first call in a fresh process: {ms:.2} ms");
    }

    if let Some(field) = misses_of {
        for (k, (label, _)) in parsers.iter().enumerate() {
            println!("\n{label}: misses on {field}");
            for report in per_set.iter().map(|r| &r[k]) {
                for m in report.misses.iter().filter(|m| m.field == field) {
                    println!("  {}\n    want [{}] got [{}]", m.case, m.expected, m.got);
                }
            }
        }
    }
}

/// One set's accuracy, a column per parser.
fn table(set: &str, parsers: &[&str], reports: &[Report]) {
    println!("Accuracy on {set} ({} cases)\n", reports[0].cases);
    print!("{:<20}", "field");
    parsers.iter().for_each(|p| print!(" {p:>18}"));
    println!();
    let row = |label: &str, cells: Vec<(usize, usize, f64)>| {
        print!("{label:<20}");
        for (correct, of, percent) in cells {
            print!(" {correct:>9}/{of:<4}{percent:>5.1}%");
        }
        println!();
    };
    for (i, field) in reports[0].fields.iter().enumerate() {
        if field.expected > 0 {
            row(
                field.field,
                reports.iter().map(|r| (r.fields[i].correct, r.fields[i].expected, r.fields[i].percent())).collect(),
            );
        }
    }
    row("WHOLE CASE", reports.iter().map(|r| (r.passed, r.cases, r.case_percent())).collect());
    row("WHOLE CASE (KEY)", reports.iter().map(|r| (r.key_passed, r.cases, r.key_case_percent())).collect());
    println!("(key fields: {})", conformance::KEY_FIELDS.join(", "));
    println!(
        "(skipped: {} marked failing by guessit, {} needing guessit options)\n",
        reports[0].skipped_failing, reports[0].skipped_options
    );
}

/// Mean nanoseconds per name and names per second over [`PASSES`] passes.
fn time(names: &[&str], parse: NativeParser) -> (f64, f64) {
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
