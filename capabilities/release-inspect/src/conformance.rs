//! Conformance scoring: guessit's published test cases and Capstan's own
//! corpus, one set per file.
//!
//! Owns: loading `movies.yml` / `episodes.yml` from the shared data folder
//! (they are read in place, never copied into the project) and every file
//! of `corpus/` (cases written for Capstan in the same format), mapping
//! guessit's field names onto [`ReleaseInfo`], and scoring any parser with
//! the same output type so our parser and others are measured the same way.
//!
//! Rules of the comparison:
//! - only the fields a case lists are compared, and only those with a
//!   counterpart in [`ReleaseInfo`] (guessit's `part`, `cd`, `website`, ...
//!   are ignored); a field listed as `null` must be absent;
//! - strings compare case-insensitively, lists as sets, languages after
//!   folding names and ISO codes to one spelling;
//! - `dynamic_range` has no guessit field: guessit files HDR flags under
//!   `other`, so `other` is compared against our `other` plus
//!   `dynamic_range`;
//! - a `season` list (a multi-season pack) is compared with `seasons`;
//! - guessit keeps a site tag after the group inside it (`LOL[ettv]`);
//!   Capstan reports it as `site`, so such an expected group is read as
//!   the group and the site;
//! - cases whose key starts with `-` (failing in guessit itself) and cases
//!   that need guessit command-line options (`options:`, e.g. a forced type
//!   or an expected title) are skipped and counted.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_yaml::Value;

use crate::parse::ReleaseInfo;

/// One guessit test case: the name and its expected fields, defaults merged.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub expect: Vec<(String, Value)>,
}

/// Cases loaded from one file, plus what was left out and why.
#[derive(Debug, Clone, Default)]
pub struct CaseSet {
    pub cases: Vec<Case>,
    /// Keys starting with `-`: guessit marks them as not passing.
    pub skipped_failing: usize,
    /// Cases that depend on guessit command-line options.
    pub skipped_options: usize,
}

/// The shared data folder, found from this crate's manifest so tests work
/// from any current directory.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/release-names/guessit")
}

/// Capstan's own corpus: one file per habit of how names are written.
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Loads one of guessit's YAML files (`movies.yml`, `episodes.yml`).
pub fn load(file: &str) -> CaseSet {
    load_path(&data_dir().join(file))
}

/// Every file of the corpus, by name (without `.yml`), in name order.
pub fn corpus() -> Vec<(String, CaseSet)> {
    let dir = corpus_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "yml")).collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.file_stem().unwrap_or_default().to_string_lossy().into_owned(), load_path(&p)))
        .collect()
}

/// Loads one file of cases in guessit's format.
pub fn load_path(path: &std::path::Path) -> CaseSet {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let Pairs::<Pairs<Value>>(entries) =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));

    let mut set = CaseSet::default();
    let mut defaults: Vec<(String, Value)> = Vec::new();
    for (key, value) in entries {
        let Some(name) = key.as_str() else { continue };
        let fields = fields_of(value);
        if name == "__default__" {
            defaults = fields;
            continue;
        }
        if name.starts_with('-') {
            set.skipped_failing += 1;
            continue;
        }
        if fields.iter().any(|(k, _)| k == "options") {
            set.skipped_options += 1;
            continue;
        }
        // Case values override defaults field by field.
        let mut expect = defaults.clone();
        for (k, v) in fields {
            expect.retain(|(dk, _)| *dk != k);
            expect.push((k, v));
        }
        split_site(&mut expect);
        set.cases.push(Case { name: name.to_string(), expect });
    }
    set
}

/// Key/value pairs in file order. guessit's files repeat some keys (two
/// failing variants of one name, or a field listed twice in one case),
/// which a map type would reject; for fields the last one wins, as it does
/// in the YAML loader guessit uses.
struct Pairs<V>(Vec<(Value, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Pairs<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Visit<V> {
            type Value = Pairs<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs<V>, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<Value, V>()? {
                    out.push(entry);
                }
                Ok(Pairs(out))
            }
            // `? name` with no `:` part.
            fn visit_unit<E>(self) -> Result<Pairs<V>, E> {
                Ok(Pairs(Vec::new()))
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// `release_group: LOL[ettv]` (guessit's habit) is the group `LOL` and
/// the site `ettv`.
fn split_site(expect: &mut Vec<(String, Value)>) {
    let Some(i) = expect.iter().position(|(k, _)| k == "release_group") else { return };
    let Some(text) = expect[i].1.as_str() else { return };
    let Some((name, rest)) = text.split_once('[') else { return };
    let Some(site) = rest.strip_suffix(']') else { return };
    if name.is_empty() || site.is_empty() || expect.iter().any(|(k, _)| k == "site") {
        return;
    }
    let (name, site) = (Value::String(name.to_string()), Value::String(site.to_string()));
    expect[i].1 = name;
    expect.push(("site".to_string(), site));
}

fn fields_of(value: Pairs<Value>) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for (k, v) in value.0 {
        let Some(k) = k.as_str() else { continue };
        out.retain(|(old, _)| old != k);
        out.push((k.to_string(), v));
    }
    out
}

/// Our fields in report order, each with the guessit key it is scored
/// against.
pub const FIELDS: &[(&str, &str)] = &[
    ("kind", "type"),
    ("title", "title"),
    ("year", "year"),
    ("season", "season"),
    ("episodes", "episode"),
    ("episode_title", "episode_title"),
    ("screen_size", "screen_size"),
    ("source", "source"),
    ("video_codec", "video_codec"),
    ("audio_codec", "audio_codec"),
    ("bit_depth", "color_depth"),
    ("release_group", "release_group"),
    ("site", "site"),
    ("date", "date"),
    ("edition", "edition"),
    ("languages", "language"),
    ("subtitle_languages", "subtitle_language"),
    ("streaming_service", "streaming_service"),
    ("container", "container"),
    ("other", "other"),
    ("proper_count", "proper_count"),
];

/// The fields a user acts on: what the release is (title, year, season,
/// episodes) and its quality (resolution, source, video codec, group).
/// The pass/fail floor is on whole cases over these fields only; the
/// remaining fields are reported but are flags and descriptive extras.
pub const KEY_FIELDS: &[&str] =
    &["title", "year", "season", "episodes", "screen_size", "source", "video_codec", "release_group"];

/// Correct / expected for one field.
#[derive(Debug, Clone, Default)]
pub struct FieldScore {
    pub field: &'static str,
    pub correct: usize,
    pub expected: usize,
}

impl FieldScore {
    pub fn percent(&self) -> f64 {
        percent(self.correct, self.expected)
    }
}

/// One wrong field, kept so weak spots can be inspected.
#[derive(Debug, Clone)]
pub struct Miss {
    pub case: String,
    pub field: &'static str,
    pub expected: String,
    pub got: String,
}

/// Result of scoring one parser over a set of cases.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub fields: Vec<FieldScore>,
    pub cases: usize,
    pub passed: usize,
    /// Cases whose [`KEY_FIELDS`] all match (fields the case does not list
    /// are not compared).
    pub key_passed: usize,
    pub skipped_failing: usize,
    pub skipped_options: usize,
    pub misses: Vec<Miss>,
}

impl Report {
    /// Whole-case accuracy in percent.
    pub fn case_percent(&self) -> f64 {
        percent(self.passed, self.cases)
    }

    /// The score of one of our fields, by name.
    pub fn field(&self, name: &str) -> Option<&FieldScore> {
        self.fields.iter().find(|f| f.field == name)
    }

    /// Whole-case accuracy over [`KEY_FIELDS`] only, in percent.
    pub fn key_case_percent(&self) -> f64 {
        percent(self.key_passed, self.cases)
    }
}

fn percent(n: usize, d: usize) -> f64 {
    if d == 0 { 100.0 } else { n as f64 * 100.0 / d as f64 }
}

/// Scores `parse` over `set`: per-field correct/expected and whole cases.
pub fn score(set: &CaseSet, parse: impl Fn(&str) -> ReleaseInfo) -> Report {
    let mut report = Report {
        fields: FIELDS.iter().map(|(f, _)| FieldScore { field: f, ..Default::default() }).collect(),
        skipped_failing: set.skipped_failing,
        skipped_options: set.skipped_options,
        ..Default::default()
    };
    for case in &set.cases {
        let got = parse(&case.name);
        let mut all_ok = true;
        let mut key_ok = true;
        for (i, (field, key)) in FIELDS.iter().enumerate() {
            let Some((_, want)) = case.expect.iter().find(|(k, _)| k == key) else {
                continue;
            };
            let want = normalise(field, values_of(want));
            let have = normalise(field, ours(&got, field));
            report.fields[i].expected += 1;
            if want == have {
                report.fields[i].correct += 1;
            } else {
                all_ok = false;
                key_ok &= !KEY_FIELDS.contains(field);
                report.misses.push(Miss { case: case.name.clone(), field, expected: join(&want), got: join(&have) });
            }
        }
        report.cases += 1;
        report.passed += usize::from(all_ok);
        report.key_passed += usize::from(key_ok);
    }
    report
}

/// Sums two reports (to combine the per-file ones).
pub fn merge(mut a: Report, b: Report) -> Report {
    for (x, y) in a.fields.iter_mut().zip(b.fields) {
        x.correct += y.correct;
        x.expected += y.expected;
    }
    a.cases += b.cases;
    a.passed += b.passed;
    a.key_passed += b.key_passed;
    a.skipped_failing += b.skipped_failing;
    a.skipped_options += b.skipped_options;
    a.misses.extend(b.misses);
    a
}

/// Expected value(s) as strings; a YAML null means "expect nothing".
fn values_of(v: &Value) -> Vec<String> {
    match v {
        Value::Null => Vec::new(),
        Value::String(s) => vec![s.clone()],
        Value::Number(n) => vec![n.to_string()],
        Value::Bool(b) => vec![b.to_string()],
        Value::Sequence(items) => items.iter().flat_map(values_of).collect(),
        Value::Mapping(_) | Value::Tagged(_) => vec![format!("{v:?}")],
    }
}

/// Our value(s) for one field, as strings.
fn ours(r: &ReleaseInfo, field: &str) -> Vec<String> {
    let one = |v: &Option<String>| v.iter().cloned().collect::<Vec<_>>();
    let num = |v: Option<u32>| v.iter().map(u32::to_string).collect::<Vec<_>>();
    match field {
        "kind" => vec![r.kind.as_str().to_string()],
        "title" => one(&r.title),
        "year" => num(r.year),
        // A pack of seasons is scored as the list.
        "season" if !r.seasons.is_empty() => r.seasons.iter().map(u32::to_string).collect(),
        "season" => num(r.season),
        "episodes" => r.episodes.iter().map(u32::to_string).collect(),
        "episode_title" => one(&r.episode_title),
        "screen_size" => one(&r.screen_size),
        "source" => one(&r.source),
        "video_codec" => one(&r.video_codec),
        "audio_codec" => one(&r.audio_codec),
        "bit_depth" => one(&r.bit_depth),
        "release_group" => one(&r.release_group),
        "site" => one(&r.site),
        "date" => one(&r.date),
        "edition" => one(&r.edition),
        "languages" => r.languages.clone(),
        "subtitle_languages" => r.subtitle_languages.clone(),
        "streaming_service" => one(&r.streaming_service),
        "container" => one(&r.container),
        "other" => r.other.iter().chain(&r.dynamic_range).cloned().collect(),
        "proper_count" => num(r.proper_count),
        _ => unreachable!("unknown field {field}"),
    }
}

/// Case-folds, folds language spellings, and turns the values into a set.
fn normalise(field: &str, values: Vec<String>) -> BTreeSet<String> {
    let is_lang = matches!(field, "languages" | "subtitle_languages");
    values
        .into_iter()
        .map(|v| {
            let v = v.trim().to_lowercase();
            if is_lang { language_code(&v) } else { v }
        })
        .collect()
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// Folds a language name or ISO 639 code (with optional region, `pt-BR`)
/// to its two-letter code so `French`, `fre` and `fr` compare equal.
fn language_code(v: &str) -> String {
    #[rustfmt::skip]
    const TABLE: &[(&str, &[&str])] = &[
        ("en", &["english", "eng"]), ("fr", &["french", "fre", "fra"]),
        ("es", &["spanish", "spa", "castellano", "espanol", "español"]),
        ("de", &["german", "ger", "deu", "deutsch"]), ("it", &["italian", "ita", "italiano"]),
        ("pt", &["portuguese", "por"]), ("ru", &["russian", "rus"]),
        ("ja", &["japanese", "jpn", "jp"]), ("zh", &["chinese", "chi", "zho"]),
        ("ko", &["korean", "kor"]), ("ar", &["arabic", "ara"]), ("hi", &["hindi", "hin"]),
        ("nl", &["dutch", "dut", "nld"]), ("sv", &["swedish", "swe"]),
        ("no", &["norwegian", "nor"]), ("da", &["danish", "dan"]), ("fi", &["finnish", "fin"]),
        ("pl", &["polish", "pol"]), ("cs", &["czech", "cze", "ces"]), ("tr", &["turkish", "tur"]),
        ("el", &["greek", "gre", "ell"]), ("hu", &["hungarian", "hun"]),
        ("ro", &["romanian", "rum", "ron"]), ("th", &["thai", "tha"]),
        ("vi", &["vietnamese", "vie"]), ("uk", &["ukrainian", "ukr"]), ("he", &["hebrew", "heb"]),
        ("hr", &["croatian", "hrv"]), ("sr", &["serbian", "srp"]), ("bg", &["bulgarian", "bul"]),
        ("ca", &["catalan", "cat"]), ("id", &["indonesian", "ind"]),
        ("mul", &["multi", "multiple languages"]), ("und", &["undetermined"]),
    ];
    let (base, region) = match v.split_once(['-', '_']) {
        Some((b, r)) if r.len() == 2 => (b, Some(r)),
        _ => (v, None),
    };
    let code = TABLE.iter().find(|(code, names)| *code == base || names.contains(&base)).map_or(base, |(code, _)| code);
    match region {
        Some(r) => format!("{code}-{r}"),
        None => code.to_string(),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<20} {:>7} / {:<8} {:>6}", "field", "correct", "expected", "%")?;
        for s in &self.fields {
            if s.expected > 0 {
                writeln!(f, "{:<20} {:>7} / {:<8} {:>5.1}%", s.field, s.correct, s.expected, s.percent())?;
            }
        }
        writeln!(f, "{:<20} {:>7} / {:<8} {:>5.1}%", "WHOLE CASE", self.passed, self.cases, self.case_percent())?;
        writeln!(
            f,
            "{:<20} {:>7} / {:<8} {:>5.1}%",
            "WHOLE CASE (KEY)",
            self.key_passed,
            self.cases,
            self.key_case_percent()
        )?;
        write!(
            f,
            "(skipped: {} marked failing by guessit, {} needing guessit options)",
            self.skipped_failing, self.skipped_options
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::inspect;

    /// Whole-case accuracy over [`KEY_FIELDS`] the parser must keep.
    const KEY_CASE_FLOOR: f64 = 96.0;

    /// Scores both files and prints all three tables in one write, so
    /// tests running in parallel do not interleave them.
    fn run(label: &str, parse: impl Fn(&str) -> ReleaseInfo + Copy) -> Report {
        let movies = score(&load("movies.yml"), parse);
        let episodes = score(&load("episodes.yml"), parse);
        let both = merge(movies.clone(), episodes.clone());
        println!(
            "== {label}: movies.yml\n{movies}\n\n== {label}: episodes.yml\n{episodes}\n\n\
             == {label}: movies.yml + episodes.yml\n{both}\n"
        );
        both
    }

    /// Lists misses when `RELEASE_INSPECT_MISSES` names a field, `all`, or `key`
    /// for every key-field miss.
    fn print_misses(report: &Report) {
        let Ok(want) = std::env::var("RELEASE_INSPECT_MISSES") else { return };
        for m in &report.misses {
            if m.field == want || want == "all" || (want == "key" && KEY_FIELDS.contains(&m.field)) {
                println!("{:<14} {:<70} want [{}] got [{}]", m.field, m.case, m.expected, m.got);
            }
        }
    }

    #[test]
    fn parser_meets_key_field_floor() {
        let report = run("parser", inspect);
        print_misses(&report);
        assert!(report.cases > 600, "expected the full guessit sets, got {} cases", report.cases);
        let key = report.key_case_percent();
        assert!(key >= KEY_CASE_FLOOR, "key-field whole-case accuracy {key:.1}% < {KEY_CASE_FLOOR}%");
    }

    /// Whole-case accuracy over every listed field each corpus set must
    /// keep: the level measured when its rules were written, so a change
    /// that breaks one habit to fix another shows.
    const CORPUS_FLOORS: &[(&str, f64)] =
        &[("episode-forms", 100.0), ("groups", 100.0), ("site-and-repost-tags", 100.0), ("titles", 100.0)];

    #[test]
    fn corpus_sets_meet_their_floors() {
        let sets = corpus();
        let names: Vec<&str> = sets.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, CORPUS_FLOORS.iter().map(|(n, _)| *n).collect::<Vec<_>>(), "a floor for every set");
        let mut out = String::new();
        let mut low = Vec::new();
        for ((name, set), (_, floor)) in sets.iter().zip(CORPUS_FLOORS) {
            let report = score(set, inspect);
            print_misses(&report);
            out.push_str(&format!("== parser: corpus/{name}.yml\n{report}\n\n"));
            if report.case_percent() < *floor {
                low.push(format!("{name}: {:.1}% < {floor}%", report.case_percent()));
            }
        }
        println!("{out}");
        assert!(low.is_empty(), "whole-case accuracy under the floor: {low:?}");
    }

    /// `hunch` over the same cases, for comparison only.
    #[test]
    fn hunch_report() {
        let report = run("hunch", crate::hunch_parse::inspect);
        assert!(report.cases > 600);
    }

    #[test]
    fn loader_merges_defaults_and_skips() {
        let set = load("episodes.yml");
        assert!(set.skipped_failing > 0 && set.skipped_options > 0);
        let first = &set.cases[0];
        assert!(first.expect.iter().any(|(k, v)| k == "type" && v.as_str() == Some("episode")));
        assert!(set.cases.iter().all(|c| !c.name.starts_with('-')));
    }

    #[test]
    fn language_spellings_fold() {
        assert_eq!(language_code("french"), "fr");
        assert_eq!(language_code("fre"), "fr");
        assert_eq!(language_code("multiple languages"), "mul");
        assert_eq!(language_code("pt-br"), "pt-br");
        assert_eq!(language_code("deu"), "de");
    }
}
