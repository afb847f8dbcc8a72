//! Parsing one path component (a file or folder name) into fields.
//!
//! Owns the order of the passes and the small passes that need no module
//! of their own: container extension, web sites, CRCs,
//! dates, keyword matching over joined tokens, bare resolutions, years,
//! and demoting ambiguous words that appear before anything certain.

use super::episode::{self, Episodes};
use super::keywords::{self, Field, Keyword, Strength};
use super::token::Tokens;
use super::{Role, fill, group, implicit, suffix, title};
use crate::parse::{Kind, ReleaseInfo};

/// Extensions read as the container (and removed before parsing).
const CONTAINERS: &[&str] = &[
    "mkv", "mp4", "avi", "m4v", "mov", "wmv", "ts", "m2ts", "webm", "mpg", "mpeg", "flv", "ogm", "ogv", "srt", "sub",
    "idx", "ass", "ssa", "nfo", "torrent", "nzb", "iso", "mk3d", "divx", "vob", "3gp", "rmvb", "m2v", "mka", "sup",
];

/// Top-level domains that end a web-site tag (`[sharethefiles.com]`).
const TLDS: &[&str] = &["com", "org", "net", "ru", "info", "biz"];

/// One keyword match over tokens `first..=last`.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    pub first: usize,
    pub last: usize,
    pub kw: Keyword,
    pub active: bool,
}

/// Everything learnt about one component.
pub struct Component<'a> {
    pub t: Tokens<'a>,
    pub roles: Vec<Role>,
    pub hits: Vec<Hit>,
    /// Index into `hits` for tokens that matched a keyword (even one later
    /// demoted to a title word).
    pub hit_of: Vec<Option<usize>>,
    pub title_start: usize,
    pub leading_group: Option<String>,
    pub episodes: Episodes,
    pub noise_flags: Vec<&'static str>,
    /// The bracketed site tag after the group (`-GROUP[site]`).
    pub site: Option<String>,
    /// The first date in the name, `YYYY-MM-DD`.
    pub date: Option<String>,
}

/// What the caller needs besides the fields.
pub struct Parsed {
    pub info: ReleaseInfo,
    /// The group was read from a lower-case scene prefix (`grp-title...`).
    pub prefix_group: bool,
    /// The title was taken from after a leading episode marker.
    pub title_after_marker: bool,
    /// Count of technical facts found; used to pick between a file name and
    /// its folder.
    pub richness: usize,
}

impl Component<'_> {
    pub fn strength(&self, i: usize) -> Option<Strength> {
        if self.roles[i] == Role::Kw { Some(self.hits[self.hit_of[i]?].kw.strength) } else { None }
    }
}

/// Parses one path component.
pub fn parse(text: &str) -> Parsed {
    let mut info = ReleaseInfo::default();
    let mut stem = text.trim();
    if let Some((s, ext)) = stem.rsplit_once('.')
        && let Some(c) = CONTAINERS.iter().find(|c| c.eq_ignore_ascii_case(ext))
    {
        info.container = Some((*c).to_string());
        stem = s;
    }
    let t = Tokens::new(stem);
    let n = t.len();
    let mut c = Component {
        roles: vec![Role::Free; n],
        hits: Vec::new(),
        hit_of: vec![None; n],
        title_start: 0,
        leading_group: None,
        episodes: Episodes::default(),
        noise_flags: Vec::new(),
        date: None,
        site: None,
        t,
    };
    suffix::repost_tags(&mut c);
    sites_and_crcs(&mut c);
    suffix::site_tag(&mut c);
    dates(&mut c);
    c.episodes = episode::explicit(&c.t, &mut c.roles);
    keywords_pass(&mut c);
    bare_resolutions(&mut c);
    let prefix_group = title::start(&mut c);
    film_and_bonus(&mut c);
    let year = years(&mut c);
    demote_ambiguous(&mut c);
    if c.episodes.season.is_none() && c.episodes.episodes.is_empty() {
        let stop = (c.title_start..n).find(|&i| c.strength(i).is_some_and(|s| s >= Strength::Medium)).unwrap_or(n);
        // Fansub conventions: three-digit numbers are absolute episodes.
        let bracketed_size = c.hits.iter().any(|h| {
            h.active && c.t.list[h.first].bracket.is_some() && h.kw.effects.iter().any(|(f, _)| *f == Field::ScreenSize)
        });
        let anime = c.leading_group.is_some()
            || bracketed_size
            || c.roles.contains(&Role::Crc)
            || (0..n).any(|i| c.t.low(i).starts_with("vostfr"));
        let bare = implicit::find(&c.t, &mut c.roles, c.title_start, stop, anime, year.is_some());
        c.episodes = bare;
    }

    short_language_codes(&mut c);
    let found = title::find(&c);
    // Tags that ended up inside the title are title words
    // (`French.Immersion.2011`).
    for h in &mut c.hits {
        if h.first >= found.start && h.last < found.end {
            h.active = false;
        }
    }
    info.title = found.title;
    info.episode_title = found.episode_title;
    info.release_group = match group::find(&mut c, found.end) {
        Some(g) => Some(g),
        None => prefix_group.clone(),
    };
    info.year = year;
    fill::from_hits(&c, &mut info);
    info.other.extend(c.noise_flags.iter().map(|f| f.to_string()));
    info.site = c.site.take();
    info.date = c.date.take();
    info.other.dedup();

    let eps = &c.episodes;
    info.season = eps.season;
    if eps.seasons.len() > 1 {
        info.seasons = eps.seasons.clone();
    }
    info.episodes = eps.episodes.clone();
    // `S2014E18`, `1940x01`: a year used as the season number.
    if let Some(s) = info.season.filter(|s| (1900..2040).contains(s)) {
        info.year.get_or_insert(s);
    }
    // `Show.1991.E01`: a year right before an episode-only marker numbers
    // the season.
    if info.season.is_none()
        && let (Some(y), Some((first, _))) = (info.year, eps.span)
        && first > 0
        && c.roles[first - 1] == Role::Year
    {
        info.season = Some(y);
    }
    let dated = c.roles.contains(&Role::Date);
    if info.season.is_some() || !info.episodes.is_empty() || (dated && info.year.is_none()) {
        info.kind = Kind::Episode;
    }
    let richness = [
        info.screen_size.is_some(),
        info.source.is_some(),
        info.video_codec.is_some(),
        info.audio_codec.is_some(),
        info.release_group.is_some() && prefix_group.is_none(),
        info.year.is_some(),
        info.season.is_some() || !info.episodes.is_empty(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    Parsed { info, prefix_group: prefix_group.is_some(), title_after_marker: found.after_marker, richness }
}

/// Web-site tags (`[tvu.org.ru]`, `www.site.com`) and bracketed CRC32
/// checksums (`[ABCD1234]`).
fn sites_and_crcs(c: &mut Component) {
    let t = &c.t;
    // `www.Site.tld - Title`, `[ www.Site.tld ] Title`: a leading web
    // address, whatever its domain.
    if t.len() > 3 && t.low(0) == "www" {
        let z = (1..t.len()).find(|&z| t.sep_before(z) != ".").unwrap_or(t.len());
        if z >= 3 && z < t.len() {
            c.roles[..z].fill(Role::Website);
        }
    }
    for i in 1..t.len() {
        if TLDS.contains(&t.low(i)) && t.sep_before(i) == "." && c.roles[i] == Role::Free {
            // The whole bracket when the site is bracketed, else the name
            // and any `www`/second-level parts before it.
            let range = match t.list[i].bracket.and_then(|b| t.bracket_tokens(b)) {
                Some((a, _)) if a < i => (a, i),
                _ => {
                    let mut a = i - 1;
                    while a > 0
                        && matches!(t.sep_before(a), "." | "-")
                        && (TLDS.contains(&t.low(a)) || t.low(a - 1) == "www" || TLDS.contains(&t.low(a + 1)))
                        && (a + 1 == i || TLDS.contains(&t.low(a)))
                    {
                        a -= 1;
                    }
                    if a > 0 && t.low(a - 1) == "www" {
                        a -= 1;
                    }
                    (a, i)
                }
            };
            let last = match t.list[i].bracket.and_then(|b| t.bracket_tokens(b)) {
                Some((_, z)) if z > i => z,
                _ => range.1,
            };
            for r in &mut c.roles[range.0..=last] {
                *r = Role::Website;
            }
        }
    }
    for i in 0..t.len() {
        let raw = t.raw(i);
        // All-digit checksums exist too; an 8-digit date does not count.
        let letters = raw.bytes().any(|b| b.is_ascii_alphabetic());
        if raw.len() == 8
            && raw.bytes().all(|b| b.is_ascii_hexdigit())
            && raw.bytes().any(|b| b.is_ascii_digit())
            && (letters || !(raw.starts_with("19") || raw.starts_with("20")))
            && t.alone_in_bracket(i)
        {
            c.roles[i] = Role::Crc;
        }
        // `v2`: a fansub version tag.
        let low = t.low(i);
        if low.len() >= 2 && low.starts_with('v') && low[1..].bytes().all(|b| b.is_ascii_digit()) && low.len() <= 3 {
            c.roles[i] = Role::Noise;
        }
    }
}

/// Air dates: `2010.11.23`, `03-29-2012`, `20021107`, and a leading
/// `09.03.08`.
fn dates(c: &mut Component) {
    let t = &c.t;
    let valid = |y: u32, m: u32, d: u32| (1900..2040).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d);
    let mut first = None;
    let mut found = |y: u32, m: u32, d: u32| {
        first.get_or_insert(format!("{y:04}-{m:02}-{d:02}"));
    };
    let mut i = 0;
    while i < t.len() {
        let raw = t.raw(i);
        if raw.len() == 8 && t.is_digits(i) {
            let v: u32 = raw.parse().unwrap_or(0);
            if valid(v / 10000, v / 100 % 100, v % 100) {
                c.roles[i] = Role::Date;
                found(v / 10000, v / 100 % 100, v % 100);
            }
        }
        if i + 2 < t.len() && (0..3).all(|k| t.is_digits(i + k)) {
            let s1 = t.sep_before(i + 1);
            let same = s1 == t.sep_before(i + 2) && s1.len() == 1 && ".-_ ".contains(s1);
            let lens = (raw.len(), t.raw(i + 1).len(), t.raw(i + 2).len());
            let (a, b, d) = (t.number(i).unwrap_or(0), t.number(i + 1).unwrap_or(0), t.number(i + 2).unwrap_or(0));
            // Year, month, day as read; a day and month that could be
            // either way round are read day first.
            let ymd = match lens {
                _ if !same => None,
                (4, 1..=2, 1..=2) => valid(a, b, d).then_some((a, b, d)),
                (1..=2, 1..=2, 4) if valid(d, b, a) => Some((d, b, a)),
                (1..=2, 1..=2, 4) => valid(d, a, b).then_some((d, a, b)),
                (2, 2, 2) if i == 0 && s1 == "." && valid(2000 + d, b, a) => Some((2000 + d, b, a)),
                (2, 2, 2) if i == 0 && s1 == "." => valid(2000 + a, b, d).then_some((2000 + a, b, d)),
                _ => None,
            };
            if let Some((y, m, day)) = ymd {
                found(y, m, day);
                c.roles[i..i + 3].fill(Role::Date);
                i += 3;
                continue;
            }
        }
        i += 1;
    }
    c.date = first;
}

/// Separators keywords may span: `WEB-DL`, `H.264`, `DTS-HD MA`, `DD+5.1`.
fn joinable(sep: &str) -> bool {
    sep.len() == 1 && ".-_ '+*".contains(sep) || sep == "’"
}

/// Matches keywords over up to four adjacent free tokens, longest first.
fn keywords_pass(c: &mut Component) {
    let n = c.t.len();
    let mut i = 0;
    let mut key = String::new();
    while i < n {
        if c.roles[i] != Role::Free {
            i += 1;
            continue;
        }
        let t = &c.t;
        // `5.1`, `7.1`, `2.0`: channel layouts.
        if i + 1 < n
            && c.roles[i + 1] == Role::Free
            && t.sep_before(i + 1) == "."
            && matches!(t.raw(i), "1" | "2" | "5" | "6" | "7")
            && matches!(t.raw(i + 1), "0" | "1" | "2")
        {
            const CHANNELS: Keyword = Keyword { strength: Strength::Strong, effects: &[(Field::Marker, "")] };
            push_hit(c, i, i + 1, CHANNELS);
            i += 2;
            continue;
        }
        let mut best: Option<(usize, Keyword)> = None;
        key.clear();
        for j in i..n.min(i + 4) {
            if j > i {
                let sep = t.sep_before(j);
                if c.roles[j] != Role::Free || !joinable(sep) {
                    break;
                }
                match sep {
                    "+" => key.push('+'),
                    "*" => key.push('x'),
                    _ => {}
                }
            }
            key.push_str(t.low(j));
            // Single letters joined by dots are an abbreviation
            // (`S.H.I.E.L.D`), not a tag (`LD`).
            if j > i && (i..=j).all(|k| t.raw(k).chars().count() == 1) {
                continue;
            }
            // Country tags only count in upper case (`Shameless.US`, not
            // `This.is.Us`).
            let country = j == i && matches!(key.as_str(), "us" | "uk" | "au" | "nz" | "it");
            if country && t.raw(i).bytes().any(|b| b.is_ascii_lowercase()) {
                continue;
            }
            if let Some(k) = keywords::classify(&key) {
                best = Some((j, k));
            }
            if t.sep_after(j).starts_with('+') {
                key.push('+');
                if let Some(k) = keywords::classify(&key) {
                    best = Some((j, k));
                }
                key.pop();
            }
        }
        match best {
            Some((j, k)) => {
                push_hit(c, i, j, k);
                i = j + 1;
            }
            None => i += 1,
        }
    }
}

pub fn push_hit(c: &mut Component, first: usize, last: usize, kw: Keyword) {
    let idx = c.hits.len();
    c.hits.push(Hit { first, last, kw, active: true });
    for k in first..=last {
        c.roles[k] = Role::Kw;
        c.hit_of[k] = Some(idx);
    }
}

/// `720` or `1080` without the `p`, next to other tags (`BRrip 720 AAC`,
/// `[720.Hi10p]`).
fn bare_resolutions(c: &mut Component) {
    for i in 0..c.t.len() {
        let value = match c.t.raw(i) {
            "480" => "480p",
            "576" => "576p",
            "720" => "720p",
            "1080" => "1080p",
            "2160" => "2160p",
            _ => continue,
        };
        let near = (i > 0 && c.roles[i - 1] == Role::Kw) || (i + 1 < c.t.len() && c.roles[i + 1] == Role::Kw);
        if c.roles[i] == Role::Free && near {
            let effects: &'static [(Field, &'static str)] = match value {
                "480p" => &[(Field::ScreenSize, "480p")],
                "576p" => &[(Field::ScreenSize, "576p")],
                "720p" => &[(Field::ScreenSize, "720p")],
                "1080p" => &[(Field::ScreenSize, "1080p")],
                _ => &[(Field::ScreenSize, "2160p")],
            };
            push_hit(c, i, i, Keyword { strength: Strength::Strong, effects });
        }
    }
}

/// Two-letter language codes in mixed or lower case (`De`, `en`) are
/// words of other languages unless they stand in a list of languages or
/// next to a subtitle word (`Fr-Eng`, `Ro.Subbed`).
fn short_language_codes(c: &mut Component) {
    let is_lang = |h: &Hit| h.kw.effects.iter().any(|(f, _)| matches!(f, Field::Language | Field::SubtitleWord));
    for k in 0..c.hits.len() {
        let h = c.hits[k];
        let raw = c.t.raw(h.first);
        let short = h.first == h.last && raw.len() == 2 && h.kw.effects.iter().any(|(f, _)| *f == Field::Language);
        if !h.active || !short || raw.bytes().all(|b| b.is_ascii_uppercase()) {
            continue;
        }
        let near = |j: usize| c.hit_of[j].is_some_and(|o| o != k && c.hits[o].active && is_lang(&c.hits[o]));
        let listed = (h.first > 0 && near(h.first - 1)) || (h.last + 1 < c.t.len() && near(h.last + 1));
        if !listed {
            c.hits[k].active = false;
            c.roles[h.first] = Role::Free;
        }
    }
}

/// Media-centre names for films in a set and their extras:
/// `James_Bond-f21-Casino_Royale-x01-Becoming_Bond`. The title follows the
/// film number; a bonus number ends it.
fn film_and_bonus(c: &mut Component) {
    let t = &c.t;
    for i in c.title_start..t.len() {
        let low = t.low(i);
        let numbered = low.len() >= 2 && low.len() <= 3 && low.as_bytes()[1..].iter().all(u8::is_ascii_digit);
        let dashed = t.sep_before(i).contains('-') && (i + 1 == t.len() || t.sep_after(i).contains('-'));
        if c.roles[i] != Role::Free || !numbered || !dashed || i == c.title_start {
            continue;
        }
        match low.as_bytes()[0] {
            b'x' => c.roles[i] = Role::Noise,
            b'f' if i + 1 < t.len() => {
                c.roles[i] = Role::Noise;
                c.title_start = i + 1;
            }
            _ => {}
        }
    }
}

/// Marks release years and returns the first. A year that starts the title
/// (`2012.2009.720p`, `1917.2019`) or is directly followed by another year
/// belongs to the title.
fn years(c: &mut Component) -> Option<u32> {
    let t = &c.t;
    let is_year = |i: usize, roles: &[Role]| {
        roles[i] == Role::Free && t.raw(i).len() == 4 && t.number(i).is_some_and(|y| (1900..2040).contains(&y))
    };
    let mut first = None;
    for i in c.title_start..t.len() {
        if !is_year(i, &c.roles) {
            continue;
        }
        let starts_title = i == c.title_start && i + 1 < t.len();
        let another_follows = i + 1 < t.len() && is_year(i + 1, &c.roles);
        if starts_title || another_follows {
            continue;
        }
        c.roles[i] = Role::Year;
        first = first.or(t.number(i));
    }
    first
}

/// Ambiguous words (`Tail` strength) count as tags only after something
/// certain or alone in brackets; before that they are title words
/// (`Dr.LiNE.The.Lorax`, `Proof.2015`).
///
/// One exception: an ambiguous word that is not the first title word and
/// is followed only by tags up to something certain is part of that run
/// (`Die.Schluempfe.2.German.DL.1080p`, `Hells.Kitchen.US.S17E08`,
/// `REDLINE (BD 1080p ...)`).
fn demote_ambiguous(c: &mut Component) {
    let n = c.t.len();
    let certain = |c: &Component, i: usize| {
        matches!(c.roles[i], Role::Marker | Role::Date | Role::Year)
            || c.strength(i).is_some_and(|s| s >= Strength::Medium)
    };
    let anchor = (c.title_start..n).find(|&i| certain(c, i)).unwrap_or(n);
    for h in 0..c.hits.len() {
        let hit = c.hits[h];
        if hit.kw.strength != Strength::Tail || hit.first < c.title_start || hit.first >= anchor {
            continue;
        }
        if hit.first == hit.last && c.t.alone_in_bracket(hit.first) {
            continue;
        }
        let mut k = hit.last + 1;
        while k < n && matches!(c.roles[k], Role::Kw | Role::Noise) && !certain(c, k) {
            k += 1;
        }
        let runs_into_certain = k < n && certain(c, k) && c.roles[k] != Role::Year;
        if runs_into_certain && hit.first > c.title_start {
            continue;
        }
        c.hits[h].active = false;
        c.roles[hit.first..=hit.last].fill(Role::Free);
    }
}
