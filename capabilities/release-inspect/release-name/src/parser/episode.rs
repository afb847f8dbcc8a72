//! Season and episode numbers.
//!
//! Owns the markers that say "this is an episode": `S01E02` and its
//! multi-episode forms (`S01E01E02`, `S01E01-E03`, `S01E02.S01E03`),
//! `1x02`, season and episode words in several languages (`Season 2`,
//! `Saison VII`, `Temporada 1`, `2nd Season`, `Episode 12`, `Ep.5`,
//! `Cap.102`), `3 of 9`, and `Show S2 - 11`. Bare numbers, for names with
//! none of those, are `implicit`'s.

use super::Role;
use super::token::Tokens;

/// Season and episodes found in one path component, and where.
#[derive(Debug, Default)]
pub struct Episodes {
    pub season: Option<u32>,
    /// Every season of a pack (`S01-S03`, `Season 1-4`, `S01.S02`), the
    /// first included; empty for one season.
    pub seasons: Vec<u32>,
    pub episodes: Vec<u32>,
    /// First and last token of the first marker.
    pub span: Option<(usize, usize)>,
    /// A number at the very start (`05 - Name`): the title follows it.
    pub leading: bool,
}

impl Episodes {
    pub(super) fn push(&mut self, n: u32) {
        if !self.episodes.contains(&n) {
            self.episodes.push(n);
        }
    }

    /// Adds `to` as the end of a range that starts at the last episode.
    pub(super) fn range_to(&mut self, to: u32) {
        match self.episodes.last().copied() {
            Some(from) if to > from && to - from <= 100 => self.episodes.extend(from + 1..=to),
            _ => self.push(to),
        }
    }

    /// Adds season `to` to a pack: the end of a range from the last season
    /// when `ranged`, else one more.
    fn add_season(&mut self, to: u32, ranged: bool) {
        if self.seasons.is_empty() {
            self.seasons.extend(self.season);
        }
        match self.seasons.last().copied() {
            Some(from) if ranged && to > from && to - from <= 50 => self.seasons.extend(from + 1..=to),
            _ if !self.seasons.contains(&to) => self.seasons.push(to),
            _ => {}
        }
    }

    pub(super) fn mark(&mut self, roles: &mut [Role], from: usize, to: usize) {
        for r in &mut roles[from..=to] {
            *r = Role::Marker;
        }
        self.span.get_or_insert((from, to));
    }
}

const SEASON_WORDS: &[&str] =
    &["season", "seasons", "saison", "seizoen", "temporada", "temp", "tem", "stagione", "staffel", "series"];
const EPISODE_WORDS: &[&str] = &["episode", "episodes", "episodio", "ep", "eps", "e", "capitulo", "cap"];

/// Finds explicit markers, marking their tokens [`Role::Marker`].
pub fn explicit(t: &Tokens, roles: &mut [Role]) -> Episodes {
    let mut found = Episodes::default();
    let mut i = 0;
    while i < t.len() {
        if roles[i] != Role::Free {
            i += 1;
            continue;
        }
        // Once a marker has given episodes, later ones (`S02E31 - Episode
        // 55`) are only marked, not counted.
        let had = found.episodes.len();
        let mut end = sxe_marker(t, roles, i, &mut found).or_else(|| cross_marker(t, roles, i, &mut found));
        if end.is_none() {
            let mut later = Episodes::default();
            let target = if had > 0 { &mut later } else { &mut found };
            end = ordinal_season(t, roles, i, target)
                .or_else(|| season_word(t, roles, i, target))
                .or_else(|| episode_word(t, roles, i, target))
                .or_else(|| of_marker(t, roles, i, target));
        }
        i = end.map_or(i + 1, |e| e + 1);
    }
    found
}

/// Digits at the start of `s`, their value and count.
fn lead_number(s: &str) -> Option<(u32, usize)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    (n > 0 && n <= 4).then(|| s[..n].parse().ok().map(|v| (v, n))).flatten()
}

/// A number with an optional version suffix: `05`, `366v2`.
pub fn versioned(s: &str) -> Option<(u32, usize)> {
    let (v, n) = lead_number(s)?;
    let rest = &s[n..];
    let ok =
        rest.is_empty() || (rest.len() >= 2 && rest.starts_with('v') && rest[1..].bytes().all(|b| b.is_ascii_digit()));
    ok.then_some((v, n))
}

/// `s01`, `s01e02`, `s01ep01`, `s01e01e02`, `s06xe01`, `s2014e18`,
/// `s01extras`, `s07d1`: season, episodes, and whether it names a disc (no
/// episodes).
fn parse_sxe(s: &str) -> Option<(u32, Vec<u32>, bool)> {
    let rest = s.strip_prefix('s')?;
    let (season, n) = lead_number(rest)?;
    let mut rest = &rest[n..];
    if rest.is_empty() || rest == "extras" {
        return Some((season, Vec::new(), false));
    }
    if let Some(d) = rest.strip_prefix('d')
        && lead_number(d).is_some_and(|(_, k)| k == d.len())
    {
        return Some((season, Vec::new(), true));
    }
    let mut eps = Vec::new();
    while !rest.is_empty() {
        rest = rest
            .strip_prefix("xe")
            .or_else(|| rest.strip_prefix("ep"))
            .or_else(|| rest.strip_prefix('e'))
            .or_else(|| rest.strip_prefix('x'))?;
        let (e, k) = lead_number(rest)?;
        eps.push(e);
        rest = &rest[k..];
    }
    (!eps.is_empty()).then_some((season, eps, false))
}

/// `2x05`, `5x44x45`, `1xall`; not resolutions (`1920x1080`).
fn parse_cross(s: &str) -> Option<(u32, Vec<u32>)> {
    let (season, n) = lead_number(s)?;
    let mut rest = s[n..].strip_prefix('x')?;
    if n == 3 || (n == 4 && !(1900..2040).contains(&season)) {
        return None;
    }
    if rest == "all" {
        return Some((season, Vec::new()));
    }
    let mut eps = Vec::new();
    loop {
        let (e, k) = lead_number(rest)?;
        if k > 3 || (n >= 3 && k >= 3) {
            return None;
        }
        eps.push(e);
        rest = &rest[k..];
        if rest.is_empty() {
            return Some((season, eps));
        }
        rest = rest.strip_prefix('x')?;
    }
}

/// Separator that joins two parts of one marker.
fn joins(sep: &str) -> bool {
    !sep.is_empty() && sep.len() <= 3 && sep.chars().all(|c| matches!(c, '.' | '-' | '_' | ' ' | '+' | '&'))
}

/// Episodes continuing a marker ending at token `last`: `-E03`, `-03`,
/// `+02`, `.E10`, `.S01E03`, ` & S01E02`, `.and.S14E01`, `.1x03`, `-x01`.
/// Returns the last token consumed.
pub(super) fn continuation(t: &Tokens, roles: &[Role], mut last: usize, found: &mut Episodes, disc: bool) -> usize {
    loop {
        let mut k = last + 1;
        if k >= t.len() || roles[k] != Role::Free || !joins(t.sep_before(k)) {
            return last;
        }
        if t.low(k) == "and" && k + 1 < t.len() && parse_sxe(t.low(k + 1)).is_some() {
            k += 1;
        }
        let sep = t.sep_before(k);
        let low = t.low(k);
        let dash = sep.contains('-');
        // ` - ` starts what follows the marker (`S02E21 - 94 Minutes`).
        if super::title::dash_boundary(sep) {
            return last;
        }
        if let Some((_, eps, _)) = parse_sxe(low).filter(|(_, e, _)| !e.is_empty()) {
            eps.into_iter().for_each(|e| found.push(e));
        } else if let Some((_, eps)) = parse_cross(low).filter(|(_, e)| !e.is_empty()) {
            eps.into_iter().for_each(|e| found.push(e));
        } else if let Some(n) =
            low.strip_prefix(['e', 'x']).and_then(versioned).filter(|&(_, k)| k <= 4).map(|(v, _)| v)
        {
            if low.starts_with('x') && !found.episodes.is_empty() {
                return last;
            }
            if dash && !found.episodes.is_empty() { found.range_to(n) } else { found.push(n) }
        } else if let Some((n, len)) = versioned(low).filter(|&(_, len)| len <= 3) {
            if !(dash || sep.contains(['+', '&'])) || len == 0 {
                return last;
            }
            if !disc {
                if dash && !found.episodes.is_empty() { found.range_to(n) } else { found.push(n) }
            }
        } else if let Some((season, _, _)) =
            parse_sxe(low).filter(|(_, e, _)| e.is_empty() && low.starts_with('s') && found.episodes.is_empty())
        {
            // `S01-S10`, `S01.S02`: a pack of seasons.
            found.add_season(season, dash);
        } else {
            return last;
        }
        last = k;
    }
}

fn sxe_marker(t: &Tokens, roles: &mut [Role], i: usize, found: &mut Episodes) -> Option<usize> {
    let (season, eps, disc) = parse_sxe(t.low(i))?;
    let season_only = eps.is_empty() && !disc;
    found.season.get_or_insert(season);
    eps.into_iter().for_each(|e| found.push(e));
    let mut last = continuation(t, roles, i, found, disc);
    if season_only && last == i && found.episodes.is_empty() {
        last = spaced_episode(t, roles, i, found).unwrap_or(last);
    }
    found.mark(roles, i, last);
    Some(last)
}

/// `Show S2 - 11 [1080p]`: a season alone, then the episode after a spaced
/// dash, as fansubs number a later season. Only a number that ends the
/// name or is followed by a bracket or another spaced dash: a number that
/// words follow begins an episode title (`S02 - 100 Years Later`).
fn spaced_episode(t: &Tokens, roles: &[Role], i: usize, found: &mut Episodes) -> Option<usize> {
    let k = i + 1;
    if k >= t.len() || roles[k] != Role::Free || !super::title::dash_boundary(t.sep_before(k)) {
        return None;
    }
    let (n, digits) = versioned(t.low(k))?;
    let ends = k + 1 == t.len() || {
        let sep = t.sep_before(k + 1);
        sep.contains(['[', '(']) || super::title::dash_boundary(sep)
    };
    (digits <= 4 && ends).then(|| {
        found.push(n);
        k
    })
}

fn cross_marker(t: &Tokens, roles: &mut [Role], i: usize, found: &mut Episodes) -> Option<usize> {
    let (season, eps) = parse_cross(t.low(i))?;
    found.season.get_or_insert(season);
    eps.into_iter().for_each(|e| found.push(e));
    let last = continuation(t, roles, i, found, false);
    found.mark(roles, i, last);
    Some(last)
}

/// Roman numerals and number words used for seasons (`Saison VII`,
/// `Saison sept`).
fn word_number(s: &str) -> Option<u32> {
    const WORDS: &[&str] = &[
        "", "i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii", "xiii", "xiv", "xv", "xvi",
        "xvii", "xviii", "xix", "xx",
    ];
    const NAMES: &[&[&str]] = &[
        &[],
        &["one", "un", "une"],
        &["two", "deux"],
        &["three", "trois"],
        &["four", "quatre"],
        &["five", "cinq"],
        &["six"],
        &["seven", "sept"],
        &["eight", "huit"],
        &["nine", "neuf"],
        &["ten", "dix"],
    ];
    let roman = WORDS.iter().position(|w| !w.is_empty() && *w == s);
    let named = NAMES.iter().position(|names| names.contains(&s));
    roman.or(named).map(|n| n as u32)
}

/// `3of9` / `3 of 9`: the number before `of`, and the last token used.
fn of_number(t: &Tokens, i: usize) -> Option<(u32, usize)> {
    let low = t.low(i);
    if let Some((a, n)) = lead_number(low)
        && let Some(b) = low[n..].strip_prefix("of")
        && lead_number(b).is_some_and(|(_, k)| k == b.len())
    {
        return Some((a, i));
    }
    let (a, n) = lead_number(low)?;
    (n == low.len() && n <= 2 && i + 2 < t.len() && t.low(i + 1) == "of" && t.number(i + 2).is_some())
        .then_some((a, i + 2))
}

/// `2nd`, `3rd`, `second`: an ordinal before a season word.
fn ordinal(s: &str) -> Option<u32> {
    const WORDS: &[&str] = &["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"];
    if let Some(n) = WORDS.iter().position(|w| *w == s) {
        return Some(n as u32 + 1);
    }
    let (v, n) = lead_number(s)?;
    matches!(&s[n..], "st" | "nd" | "rd" | "th").then_some(v).filter(|&v| (1..100).contains(&v))
}

/// `[Grp] Show 2nd Season - 05`: an ordinal season, then the episode after
/// a spaced dash.
fn ordinal_season(t: &Tokens, roles: &mut [Role], i: usize, found: &mut Episodes) -> Option<usize> {
    let next = i + 1;
    if next >= t.len() || roles[next] != Role::Free || !matches!(t.low(next), "season" | "saison") {
        return None;
    }
    // Words after it make it a title (`The 4th Season of Love`): only the
    // end, a bracket, a spaced dash or a number may follow.
    let after = next + 1;
    let ends = after >= t.len()
        || t.sep_before(after).contains(['[', '('])
        || super::title::dash_boundary(t.sep_before(after))
        || t.low(after).starts_with(|c: char| c.is_ascii_digit());
    if !ends {
        return None;
    }
    let season = ordinal(t.low(i))?;
    found.season.get_or_insert(season);
    let last = spaced_episode(t, roles, next, found).unwrap_or(next);
    found.mark(roles, i, last);
    Some(last)
}

fn season_word(t: &Tokens, roles: &mut [Role], i: usize, found: &mut Episodes) -> Option<usize> {
    let low = t.low(i);
    // `Temporada1`, `Season2`: the number glued on.
    let glued = SEASON_WORDS.iter().find_map(|w| low.strip_prefix(w)).and_then(|r| {
        let (v, n) = lead_number(r)?;
        (n == r.len()).then_some(v)
    });
    let (season, mut last) = if let Some(v) = glued {
        (v, i)
    } else {
        if !SEASON_WORDS.contains(&low) || i + 1 >= t.len() || roles[i + 1] != Role::Free {
            return None;
        }
        let next = t.low(i + 1);
        if let Some((v, end)) = of_number(t, i + 1) {
            (v, end)
        } else if let Some(v) = t.number(i + 1).filter(|&v| v < 100).or_else(|| word_number(next)) {
            (v, i + 1)
        } else {
            return None;
        }
    };
    found.season.get_or_insert(season);
    // `Season 1-3`, `Season 1 & 3`, `Seasons 1 to 5`: a pack of seasons.
    while last + 1 < t.len() && roles[last + 1] == Role::Free {
        let k = last + 1;
        let sep = t.sep_before(k);
        // ` - ` ends the marker (`Season 2 - 05` is an episode after it).
        if super::title::dash_boundary(sep) {
            break;
        }
        if let Some(v) = t.number(k).filter(|&v| v < 100 && (sep.contains(['-', '&', ',']) || sep == ".")) {
            found.add_season(v, sep.contains('-'));
            last = k;
        } else if t.low(k) == "to"
            && k + 1 < t.len()
            && let Some(v) = t.number(k + 1).filter(|&v| v < 100)
        {
            found.add_season(v, true);
            last = k + 1;
        } else {
            break;
        }
    }
    if found.seasons.is_empty() && found.episodes.is_empty() {
        last = spaced_episode(t, roles, last, found).unwrap_or(last);
    }
    found.mark(roles, i, last);
    // `Season.2.1of4`: an episode count right after.
    if last + 1 < t.len()
        && roles[last + 1] == Role::Free
        && let Some((e, end)) = of_number(t, last + 1)
    {
        found.push(e);
        found.mark(roles, last + 1, end);
        last = end;
    }
    Some(last)
}

fn episode_word(t: &Tokens, roles: &mut [Role], i: usize, found: &mut Episodes) -> Option<usize> {
    let low = t.low(i);
    let cap = low == "cap" || low == "capitulo";
    // `E01`, `Ep5`, `ep13`, `E576`: the number glued on.
    let glued = ["ep", "e"].iter().find_map(|w| low.strip_prefix(w)).and_then(versioned);
    let (n, digits, last) = if let Some((v, d)) = glued {
        (v, d, i)
    } else {
        if !EPISODE_WORDS.contains(&low) || low == "e" || i + 1 >= t.len() || roles[i + 1] != Role::Free {
            return None;
        }
        let (v, d) = versioned(t.low(i + 1))?;
        // `Episode 59 v2`.
        let last = if i + 2 < t.len()
            && versioned(t.low(i + 2).trim_start_matches('v')).is_some()
            && t.low(i + 2).starts_with('v')
        {
            i + 2
        } else {
            i + 1
        };
        (v, d, last)
    };
    if cap && digits >= 3 {
        // Spanish `Cap.102`: season 1, episode 2; `Cap.1503_1506` a range.
        found.season.get_or_insert(n / 100);
        found.push(n % 100);
        let mut last = last;
        if last + 1 < t.len()
            && t.sep_before(last + 1) == "_"
            && let Some(to) = t.number(last + 1)
        {
            found.range_to(to % 100);
            last += 1;
        }
        found.mark(roles, i, last);
        return Some(last);
    }
    found.push(n);
    let last = continuation(t, roles, last, found, false);
    found.mark(roles, i, last);
    Some(last)
}

fn of_marker(t: &Tokens, roles: &mut [Role], i: usize, found: &mut Episodes) -> Option<usize> {
    let (n, last) = of_number(t, i)?;
    if roles[i..=last].iter().any(|r| *r != Role::Free) {
        return None;
    }
    found.push(n);
    found.mark(roles, i, last);
    Some(last)
}
