//! The release group.
//!
//! Scene names end with it (`...x264-GROUP`), sometimes spaced or dotted
//! (`... x264 GROUP`, `...AAC.GROUP`), bracketed (`[GROUP]`), or introduced
//! with `by`; fansub names start with it (`[Group] Title - 01`). Owns the
//! choice between those, after repost suffixes, site tags (`suffix`),
//! checksums and web sites are set aside.

use super::Role;
use super::component::Component;
use super::keywords::{Field, Strength};

/// Finds the group; `title_end` is the token after the title (a group is
/// never inside the title).
pub fn find(c: &mut Component, title_end: usize) -> Option<String> {
    tail(c, title_end)
        .or_else(|| glued(c, title_end))
        .or_else(|| bracketed(c, title_end))
        .or_else(|| c.leading_group.clone())
}

/// The group at the end of the name, after the last tag.
fn tail(c: &mut Component, title_end: usize) -> Option<String> {
    let t = &c.t;
    let mut end = t.len();
    while end > title_end && matches!(c.roles[end - 1], Role::Crc | Role::Website | Role::Noise | Role::Date) {
        end -= 1;
    }
    // `-NTK.par-www.site.com`: "by" before a site belongs to the site.
    if end > title_end && end < t.len() && matches!(t.low(end - 1), "by" | "par" | "from") {
        end -= 1;
    }
    let last_tag = (title_end..end).rev().find(|&i| c.roles[i] == Role::Kw);
    let last_mark = (title_end..end).rev().find(|&i| matches!(c.roles[i], Role::Kw | Role::Marker | Role::Year));
    let from = last_mark.map_or(title_end, |k| k + 1).max(title_end);
    let free = (from..end).all(|i| c.roles[i] == Role::Free);

    if from == end && end > title_end + 1 {
        // `...WEB-DL-SDTV`, `...720p-HR`: a tag word used as the group,
        // when its field is already filled or the word is ambiguous.
        let k = end - 1;
        let h = c.hit_of[k]?;
        let hit = c.hits[h];
        // A language after another language is a list (`English-Spanish`).
        let is_lang = |h: usize| c.hits[h].kw.effects.iter().any(|(f, _)| *f == Field::Language);
        let listed = is_lang(h) && c.hit_of[k - 1].is_some_and(is_lang);
        if c.roles[k] != Role::Kw || hit.first != k || hit.last != k || t.sep_before(k) != "-" || listed {
            return None;
        }
        let dup = hit.kw.effects.iter().any(|(f, _)| {
            *f != Field::Marker && c.hits[..h].iter().any(|o| o.active && o.kw.effects.iter().any(|(g, _)| g == f))
        });
        if hit.kw.strength == Strength::Tail || dup {
            c.hits[h].active = false;
            return Some(t.raw(k).to_string());
        }
        return None;
    }
    if from >= end || !free {
        return None;
    }
    let count = end - from;
    let dashed = t.sep_before(from).contains('-');
    let one_bracket = t.list[from].bracket.is_some_and(|b| t.bracket_tokens(b) == Some((from, end - 1)));
    let dash_joined = (from + 1..end).all(|i| t.sep_before(i) == "-");
    let after_marker = last_tag.is_none() && last_mark.is_some();
    if t.low(from) == "by" && (2..=4).contains(&count) {
        return text(c, from + 1, end);
    }
    // `[Fansub] Title - 12 [720p] - Fin`: words after a spaced dash are
    // a note when the name began with its group.
    let sep = t.sep_before(from);
    if c.leading_group.is_some() && sep.contains('-') && sep.contains([' ', '_', '.']) {
        return None;
    }
    let fits = one_bracket || (dashed && count <= 4) || count == 1 || dash_joined;
    // `Show - 5x14 - Ozymandias`: after a marker and a spaced dash, with no
    // tags, words are the episode's title.
    let spaced = sep.contains(' ') && sep.contains('-');
    if fits && (last_tag.is_some() || (after_marker && !spaced && (dashed || one_bracket))) {
        return text(c, from, end);
    }
    None
}

/// `...x264-Belex.-.Dual.Audio`: a group glued to a codec or source, with
/// other tags after it.
fn glued(c: &Component, title_end: usize) -> Option<String> {
    let t = &c.t;
    let k = (title_end.max(1)..t.len()).rev().find(|&k| {
        c.roles[k] == Role::Free
            && t.list[k].bracket.is_none()
            && t.sep_before(k) == "-"
            && c.roles[k - 1] == Role::Kw
            && c.strength(k - 1) == Some(Strength::Strong)
    })?;
    let mut z = k + 1;
    while z < t.len() && c.roles[z] == Role::Free && t.sep_before(z) == "-" {
        z += 1;
    }
    text(c, k, z)
}

/// `...[HorribleSubs][WEBRip]`, `..._-_[Ayu]`: a square-bracketed name
/// among the tags.
fn bracketed(c: &Component, title_end: usize) -> Option<String> {
    let t = &c.t;
    (0..t.brackets.len()).rev().find_map(|b| {
        let (o, _) = t.brackets[b];
        if t.text.as_bytes()[o] != b'[' {
            return None;
        }
        let (first, last) = t.bracket_tokens(b)?;
        let free = (first..=last).all(|k| c.roles[k] == Role::Free && t.list[k].bracket == Some(b));
        (first >= title_end && free).then(|| text(c, first, last + 1)).flatten()
    })
}

/// The raw text of tokens `a..b`, with a bracket opened inside it closed
/// (`GROUP[rarbg]`) and a fully bracketed group unwrapped (`[GROUP]`).
fn text(c: &Component, a: usize, b: usize) -> Option<String> {
    if a >= b {
        return None;
    }
    let t = &c.t;
    let (s, e) = (t.list[a].start, t.list[b - 1].end);
    let mut g = t.text[s..e].to_string();
    for (open, close) in [('[', ']'), ('(', ')'), ('{', '}')] {
        if g.contains(open) && !g.contains(close) {
            g.push(close);
        }
    }
    let g = g.trim_matches(|ch: char| " .-_".contains(ch)).to_string();
    let digits_only = g.bytes().all(|b| b.is_ascii_digit());
    // Words with spaces, or a bracket closed inside, are free text, not a
    // group's name.
    let wordy = g.contains(' ') || g.contains([')', ']']) && !g.ends_with(']');
    (!g.is_empty() && !digits_only && !wordy).then_some(g)
}
