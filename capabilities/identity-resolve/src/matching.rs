//! How a release's parsed fields are compared with an entity: title
//! normalisation (case, punctuation, diacritics, `&`/`and`, leading
//! articles), the year tolerance, the movie/series kind, and the score
//! that combines them. Pure functions; the capability decides what to do
//! with the scores.

use capstan_sdk::contract::records::Entity;
use capstan_sdk::contract::status::EntityKind;
use serde::Serialize;

/// What the release name says about whom it is for.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseFacts {
    pub title: String,
    pub year: Option<i64>,
    /// `movie`, or `tv` when the name carries a season or episodes.
    pub kind: EntityKind,
    pub season: Option<i64>,
}

/// One candidate's score and the fields that produced it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scored {
    pub entity_id: String,
    pub title: String,
    pub year: Option<i64>,
    pub kind: String,
    /// 0 (no match) to 1 (title, year and kind all agree).
    pub score: f64,
    /// `title` or `originalTitle` (exact after normalisation), `titleSimilar`,
    /// `year`, `yearWithinOne`, `kind`.
    pub matched: Vec<String>,
    /// Why the score is lower than it could be: `yearDiffers`, `kindDiffers`.
    pub mismatched: Vec<String>,
}

/// Below this a title is not the same title; `Dune` against
/// `Dune Part Two` is 0.5 and must not count.
const SIMILAR_TITLE: f64 = 0.75;

/// Folds the Latin letters release names and catalogues most often carry
/// accents on; anything else is kept as is.
fn fold(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'č' => "c",
        'ď' | 'đ' | 'ð' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ę' | 'ě' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'ī' | 'ı' => "i",
        'ł' | 'ľ' => "l",
        'ñ' | 'ń' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => "o",
        'œ' => "oe",
        'ř' => "r",
        'ś' | 'š' | 'ş' => "s",
        'ß' => "ss",
        'ť' | 'ţ' => "t",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' => "u",
        'ý' | 'ÿ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        'þ' => "th",
        _ => return None,
    })
}

/// Leading words that catalogues and release names use inconsistently
/// ("The Matrix" vs "Matrix").
const ARTICLES: &[&str] = &["the", "a", "an"];

/// A title as comparable words: lower case, accents folded, `&` read as
/// `and`, apostrophes dropped (`Schindler's` = `Schindlers`), every other
/// punctuation a word break, a leading article removed.
pub fn normalize(title: &str) -> Vec<String> {
    let mut text = String::with_capacity(title.len());
    for c in title.chars().flat_map(char::to_lowercase) {
        match c {
            '\'' | '’' | '`' => {}
            '&' | '+' => text.push_str(" and "),
            c if c.is_alphanumeric() => match fold(c) {
                Some(plain) => text.push_str(plain),
                None => text.push(c),
            },
            _ => text.push(' '),
        }
    }
    let mut words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    if words.len() > 1 && ARTICLES.contains(&words[0].as_str()) {
        words.remove(0);
    }
    words
}

/// Dice similarity of two word lists: 1 for the same words, 0 for none in
/// common.
fn similarity(a: &[String], b: &[String]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let mut rest: Vec<&String> = b.iter().collect();
    let mut common = 0usize;
    for word in a {
        if let Some(at) = rest.iter().position(|w| *w == word) {
            rest.swap_remove(at);
            common += 1;
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

fn round(score: f64) -> f64 {
    (score * 100.0).round() / 100.0
}

/// Scores `entity` for `release`: the title is worth 0.6, the year 0.3,
/// the kind 0.1. A title that is not (nearly) the same scores 0 whatever
/// else agrees; a movie year more than one off, or the wrong kind, costs
/// more than it could add.
pub fn score(release: &ReleaseFacts, entity: &Entity) -> Scored {
    let wanted = normalize(&release.title);
    let mut matched = Vec::new();
    let mut mismatched = Vec::new();
    let mut best = (0.0, "");
    for (field, title) in [("title", Some(&entity.title)), ("originalTitle", entity.original_title.as_ref())] {
        let Some(title) = title else { continue };
        let s = similarity(&wanted, &normalize(title));
        if s > best.0 {
            best = (s, field);
        }
    }
    let mut total = 0.0;
    if best.0 >= 1.0 {
        matched.push(best.1.to_string());
        total += 0.6;
    } else if best.0 >= SIMILAR_TITLE {
        matched.push("titleSimilar".to_string());
        total += 0.6 * best.0;
    }
    if total > 0.0 {
        match (release.year, entity.year) {
            (Some(a), Some(b)) if a == b => {
                matched.push("year".into());
                total += 0.3;
            }
            // Release years follow the premiere in one country, catalogues
            // another: one year apart is the same film.
            (Some(a), Some(b)) if entity.kind == EntityKind::Movie && (a - b).abs() == 1 => {
                matched.push("yearWithinOne".into());
                total += 0.15;
            }
            (Some(_), Some(_)) if entity.kind == EntityKind::Movie => {
                mismatched.push("yearDiffers".into());
                total -= 0.4;
            }
            // A series' later seasons carry their own year: no evidence.
            _ => {}
        }
        if entity.kind == release.kind {
            matched.push("kind".into());
            total += 0.1;
        } else {
            mismatched.push("kindDiffers".into());
            total -= 0.3;
        }
    }
    Scored {
        entity_id: entity.id.clone(),
        title: entity.title.clone(),
        year: entity.year,
        kind: entity.kind.as_str().to_string(),
        score: round(total.max(0.0)),
        matched,
        mismatched,
    }
}

/// A candidate counts as a match from this score on.
pub const ACCEPT: f64 = 0.6;
/// The winner must lead the runner-up by this much to be accepted alone.
pub const MARGIN: f64 = 0.2;

/// The verdict over all scored candidates (sorted best first).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Resolved(usize),
    Ambiguous(Vec<usize>),
    Unmatched,
}

/// Resolved only when one candidate is a match and leads every other by
/// [`MARGIN`]; ambiguous when several are matches that close.
pub fn decide(sorted: &[Scored]) -> Verdict {
    let matches: Vec<usize> = (0..sorted.len()).filter(|&i| sorted[i].score >= ACCEPT).collect();
    let Some(&top) = matches.first() else { return Verdict::Unmatched };
    let close: Vec<usize> = matches.iter().copied().filter(|&i| sorted[top].score - sorted[i].score < MARGIN).collect();
    if close.len() == 1 { Verdict::Resolved(top) } else { Verdict::Ambiguous(close) }
}

#[cfg(test)]
mod tests {
    use capstan_sdk::testing::records;

    use super::*;

    #[test]
    fn titles_compare_without_case_punctuation_accents_or_articles() {
        assert_eq!(normalize("Dune: Part Two"), normalize("Dune.Part.Two"));
        assert_eq!(normalize("Amélie"), normalize("Amelie"));
        assert_eq!(normalize("Fast & Furious"), normalize("Fast and Furious"));
        assert_eq!(normalize("The Matrix"), normalize("Matrix"));
        assert_eq!(normalize("Schindler's List"), normalize("Schindlers List"));
        // An article alone is the whole title, not a prefix to drop.
        assert_eq!(normalize("The"), vec!["the"]);
    }

    fn movie(id: &str, title: &str, year: i64) -> Entity {
        Entity { title: title.into(), year: Some(year), ..records::entity(id) }
    }

    #[test]
    fn a_movie_year_one_off_still_matches_but_further_does_not() {
        let release =
            ReleaseFacts { title: "Parasite".into(), year: Some(2020), kind: EntityKind::Movie, season: None };
        let near = score(&release, &movie("a", "Parasite", 2019));
        assert!(near.score >= ACCEPT && near.matched.contains(&"yearWithinOne".to_string()), "{near:?}");
        let far = score(&release, &movie("b", "Parasite", 1982));
        assert!(far.score < ACCEPT, "{far:?}");
        assert_eq!(far.mismatched, vec!["yearDiffers"]);
    }
}
