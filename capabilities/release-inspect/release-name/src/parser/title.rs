//! Where the title starts and ends, the episode title, and how the raw
//! text becomes a readable title.
//!
//! The title is the text before the first technical run: a stretch of
//! consecutive tags, years and markers that contains something certain
//! (a resolution, codec, episode marker, date) or a year, or that ends the
//! name. Languages right before a year stay in the title
//! (`Immersion.French.2011`); flags before a year do not
//! (`Movie.EXTENDED.2012`). A bracket or a spaced dash (` - `) also ends
//! it: what follows is an alternative title, a country or a description.

use super::Role;
use super::component::Component;
use super::keywords::Strength;

/// The title and where it ended.
pub struct Found {
    pub title: Option<String>,
    /// Token index of the title's first word.
    pub start: usize,
    pub episode_title: Option<String>,
    /// Token index after the title.
    pub end: usize,
    /// The name started with its episode marker and the title was read
    /// from after it (`05 - Name`), so a folder's title is better.
    pub after_marker: bool,
}

/// How a token counts when looking for the end of a title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cls {
    Title,
    Tag(Strength),
    Year,
    /// Markers, dates, checksums, web sites: always end a title.
    Anchor,
}

fn cls(c: &Component, i: usize) -> Cls {
    match c.roles[i] {
        Role::Free => Cls::Title,
        Role::Kw => Cls::Tag(c.strength(i).unwrap_or(Strength::Strong)),
        Role::Year => Cls::Year,
        _ => Cls::Anchor,
    }
}

/// A spaced or doubled dash between title parts: ` - `, `_-_`, `.-.`, `--`.
pub fn dash_boundary(sep: &str) -> bool {
    sep.contains('-') && sep.len() >= 2
}

fn boundary(c: &Component, i: usize) -> bool {
    let sep = c.t.sep_before(i);
    sep.contains(['(', ')', '[', ']', '{', '}']) || dash_boundary(sep)
}

/// Skips leading brackets (group, site or tags), sites and a leading date;
/// records a leading `[Group]`. Returns a lower-case scene prefix group
/// (`grp-title.2016.1080p...`) if the name has one.
pub fn start(c: &mut Component) -> Option<String> {
    let n = c.t.len();
    let mut i = 0;
    while i < n {
        let t = &c.t;
        let prev_end = if i == 0 { 0 } else { t.list[i - 1].end };
        let opened_here = t.list[i].bracket.filter(|&b| t.brackets[b].0 >= prev_end);
        if let Some(b) = opened_here
            && let Some((first, last)) = t.bracket_tokens(b)
            && last + 1 < n
        {
            // A group unless it is only tags (`[h265 - HEVC]`, `[BD]`) or
            // holds a site, checksum or date; tags inside a group name
            // (`[Stratos-Subs]`, `[Kaerizaki-Fansub]`) are part of it.
            let inner = &c.roles[first..=last];
            let all_tags = inner.iter().all(|r| *r != Role::Free);
            let foreign = inner.iter().any(|r| matches!(r, Role::Website | Role::Crc | Role::Date | Role::Year));
            let numeric = (first..=last).all(|k| t.is_digits(k));
            if !all_tags && !foreign && !numeric && c.leading_group.is_none() {
                let (o, cl) = t.brackets[b];
                let g = t.text[o + 1..cl].trim();
                if !g.is_empty() {
                    c.leading_group = Some(g.to_string());
                    for k in first..=last {
                        if let Some(h) = c.hit_of[k] {
                            c.hits[h].active = false;
                        }
                        c.roles[k] = Role::Free;
                    }
                }
            }
            i = last + 1;
            continue;
        }
        if matches!(c.roles[i], Role::Website | Role::Crc | Role::Date) {
            i += 1;
            continue;
        }
        break;
    }
    c.title_start = i.min(n);
    let t = &c.t;

    // `blow-how.to.be.single.2016.1080p.bluray.x264`: an all-lower-case
    // scene file name that starts with its group.
    let i = c.title_start;
    let lower_case = !t.text.bytes().any(|b| b.is_ascii_uppercase());
    if lower_case
        && i + 2 < n
        && t.sep_after(i) == "-"
        && (3..=6).contains(&t.raw(i).len())
        && c.roles[i] == Role::Free
        && matches!(c.roles[i + 1], Role::Free | Role::Kw)
        && !(t.sep_before(n - 1) == "-" && c.roles[n - 1] == Role::Free)
        && c.roles.contains(&Role::Kw)
    {
        c.title_start = i + 1;
        return Some(t.raw(i).to_string());
    }
    None
}

/// Finds the title (and episode title) of a parsed component.
pub fn find(c: &Component) -> Found {
    let n = c.t.len();
    let mut start = c.title_start.min(n);
    let mut after_marker = false;

    // A leading run of certain tags or markers (`2x05 - Name`,
    // `h265 - HEVC Name`, `video_ts-name`): the title follows it.
    let mut i = start;
    let mut certain = false;
    while i < n && cls(c, i) != Cls::Title {
        certain |= matches!(cls(c, i), Cls::Anchor | Cls::Tag(Strength::Strong));
        after_marker |= c.roles[i] == Role::Marker;
        i += 1;
    }
    if certain && i > start {
        // `S01E02.1080p.WEB.H264-KOGI`: the marker, then the tags; what
        // follows them is the group, and the name has no title.
        if after_marker && (start..i).any(|k| c.roles[k] == Role::Kw) {
            return Found { title: None, start: i, episode_title: None, end: i, after_marker };
        }
        start = i;
    } else {
        after_marker = false;
    }
    after_marker |= c.episodes.leading;

    let mut end = span_end(c, start);
    // `Fr - Title (2005)`: a first part made only of tags is skipped.
    while end > start && end < n && dash_boundary(c.t.sep_before(end)) && (start..end).all(|k| c.hit_of[k].is_some()) {
        start = end;
        end = span_end(c, start);
    }
    // `Nine Lives - 100 Years Later - 01`: words with a number between
    // the title and an episode number after a spaced dash are the rest of
    // the title (the number is not the episode). Without a number
    // (`Garo - Vanishing Line - 01`) the first part is the title, as
    // indexers and guessit read it.
    if let Some((first, _)) = c.episodes.span
        && !after_marker
        && first > end
        && dash_boundary(c.t.sep_before(first))
        && (end..first).all(|k| c.roles[k] == Role::Free)
        && (end..first).any(|k| c.t.is_digits(k))
    {
        end = first;
    }
    let title = clean(c, start, end).map(|t| reorder_article(&t));

    let mut episode_title = None;
    if let Some((_, last)) = c.episodes.span
        && !after_marker
        && end <= last
    {
        let mut s = last + 1;
        while s < n && c.roles[s] == Role::Marker {
            s += 1;
        }
        if s < n && cls(c, s) == Cls::Title {
            episode_title = clean(c, s, span_end(c, s));
        }
    }
    Found { title, start, episode_title, end, after_marker }
}

/// End (exclusive token index) of the title-like text starting at `start`.
fn span_end(c: &Component, start: usize) -> usize {
    let n = c.t.len();
    let mut run: Option<usize> = None;
    for i in start..n {
        if i > start && boundary(c, i) {
            return match run {
                Some(r) => resolve(c, r, i, true).unwrap_or(i),
                None => i,
            };
        }
        if cls(c, i) == Cls::Title {
            if let Some(r) = run.take()
                && let Some(cut) = resolve(c, r, i, false)
            {
                return cut;
            }
        } else {
            run.get_or_insert(i);
        }
    }
    run.and_then(|r| resolve(c, r, n, true)).unwrap_or(n)
}

/// Whether the run of tags `from..to` ends the title, and where the cut
/// falls: before the whole run if it has something certain; before its
/// first flag or year if it has a year (languages before stay); at the
/// end of the name, before its first flag.
fn resolve(c: &Component, from: usize, to: usize, at_end: bool) -> Option<usize> {
    let kinds: Vec<Cls> = (from..to).map(|i| cls(c, i)).collect();
    let first_firm = kinds.iter().position(|k| !matches!(k, Cls::Tag(Strength::Weak | Strength::Tail)));
    // `Spiders.Web.2019.1080p`, `Immersion.French.2011`: weak words right
    // before the year stay in the title.
    if let Some(p) = first_firm
        && kinds[p] == Cls::Year
    {
        return Some(from + p);
    }
    if kinds.iter().any(|k| matches!(k, Cls::Anchor | Cls::Tag(Strength::Strong))) {
        return Some(from);
    }
    let flag_or_year = kinds.iter().position(|k| matches!(k, Cls::Year | Cls::Tag(Strength::Medium)));
    if kinds.contains(&Cls::Year) {
        return flag_or_year.map(|p| from + p);
    }
    at_end.then(|| from + flag_or_year.unwrap_or(0))
}

/// Readable text of tokens `a..b`: dots and underscores become spaces,
/// other punctuation between words is kept, abbreviations written with
/// dots (`S.H.I.E.L.D.`) keep them, and trailing `!`/`?` stay.
pub fn clean(c: &Component, a: usize, b: usize) -> Option<String> {
    if a >= b {
        return None;
    }
    let t = &c.t;
    let single = |i: usize| {
        let mut ch = t.raw(i).chars();
        ch.next().is_some_and(char::is_alphabetic) && ch.next().is_none()
    };
    // Runs of three or more single letters joined by single dots.
    let mut abbrev = vec![false; b - a];
    let mut i = a;
    while i < b {
        let mut j = i;
        while single(j) && j + 1 < b && single(j + 1) && t.sep_before(j + 1) == "." {
            j += 1;
        }
        if j - i >= 2 {
            abbrev[i - a..=j - a].fill(true);
        }
        i = j + 1;
    }
    let mut out = String::new();
    for i in a..b {
        if i > a {
            if abbrev[i - a] && abbrev[i - a - 1] {
                out.push('.');
            } else {
                for ch in t.sep_before(i).chars() {
                    match ch {
                        '.' | '_' => out.push(' '),
                        '*' | '(' | ')' | '[' | ']' | '{' | '}' => out.push(' '),
                        _ => out.push(ch),
                    }
                }
            }
        }
        out.push_str(t.raw(i));
    }
    let after = t.sep_after(b - 1);
    if abbrev[b - a - 1] && after.starts_with('.') {
        out.push('.');
    }
    out.extend(after.chars().take_while(|ch| matches!(ch, '!' | '?')));
    let words: Vec<&str> = out.split_whitespace().collect();
    let joined = words.join(" ");
    let trimmed = joined.trim_matches(|ch: char| ch.is_whitespace() || "-,&+~:;'".contains(ch));
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// `Simpsons, The` → `The Simpsons`.
fn reorder_article(title: &str) -> String {
    for article in [", The", ", A", ", An"] {
        if let Some(rest) = title.strip_suffix(article) {
            return format!("{} {rest}", &article[2..]);
        }
    }
    title.to_string()
}
