//! In-house baseline parser, compiled only for the parser comparison.
//!
//! It exists to answer "would a small parser of our own do?" with numbers
//! rather than opinion. The approach is the usual one for scene names:
//! keyword tables turned into case-insensitive regexes, each match anchored
//! on separators; the title is whatever precedes the first technical match,
//! the release group whatever follows the last dash. Values use the same
//! vocabulary as `hunch` (guessit's) so both are scored alike.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use crate::parse::{Kind, ReleaseInfo};

/// Which [`ReleaseInfo`] field a keyword fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// `Marker` is a keyword that only ends the title (e.g. `5.1`, `HQ`): it is
/// recognised so it is not taken for a title word, but not reported.
#[rustfmt::skip]
enum Field {
    ScreenSize, Source, VideoCodec, AudioCodec, DynamicRange, BitDepth, Edition,
    Language, SubtitleLanguage, Streaming, Other, Marker,
}

use Field::*;

/// Keyword table: field, pattern (case-insensitive, must be a whole token
/// between separators), value. Earlier rows win for the same text.
#[rustfmt::skip]
const KEYWORDS: &[(Field, &str, &str)] = &[
    (ScreenSize, r"(?:3840[x*])?2160[pi]|4k|uhd(?:-?4k)?", "2160p"),
    (ScreenSize, r"(?:1920[x*])?1080p?(?:24|25|30|50|60)?|\d{3,4}[x*]1080|fhd", "1080p"),
    (ScreenSize, r"1080i", "1080i"), (ScreenSize, r"(?:1280[x*])?720p?(?:24|25|30|50|60)?|\d{3,4}[x*]720", "720p"),
    (ScreenSize, r"576p", "576p"), (ScreenSize, r"480p|480i|\d{3}[x*]480", "480p"),
    (ScreenSize, r"\d{3,4}[x*]\d{3,4}", ""), (ScreenSize, r"360p", "360p"),
    (Source, r"uhd[-.]?blu-?ray|uhd[-.]?bd(?:rip|remux)?|ultrahd[-.]?blu-?ray", "Ultra HD Blu-ray"),
    (Source, r"blu-?ray(?:rip)?|bd(?:rip|remux|25|50|5|9|mv)?(?:mux)?|br-?rip(?:mux)?|brmux|bdr", "Blu-ray"),
    (Source, r"hd-?dvd(?:rip)?", "HD-DVD"), (Source, r"dvd(?:rip|r|5|9)?(?:mux)?|video_ts|dvd-?r", "DVD"),
    (Source, r"dvd-?scr", "DVD"), (Source, r"web-?dl(?:rip)?|web-?rip|web-?hd|webmux|web|dl-?web", "Web"),
    (Source, r"hdtv(?:rip)?|hd-tv", "HDTV"), (Source, r"uhd-?tv", "Ultra HDTV"),
    (Source, r"pd-?tv|dvb(?:rip)?|dtv", "Digital TV"), (Source, r"sd-?tv|tv-?rip", "TV"),
    (Source, r"dsr(?:ip)?|sat-?rip|dth", "Satellite"), (Source, r"hd-?cam", "HD Camera"),
    (Source, r"cam(?:rip)?", "Camera"), (Source, r"hd-?ts|hd-?telesync", "HD Telesync"),
    (Source, r"telesync|ts", "Telesync"), (Source, r"hd-?tc", "HD Telecine"), (Source, r"telecine|tc", "Telecine"),
    (Source, r"vhs(?:rip)?", "VHS"), (Source, r"dm(?:rip)?", "Digital Master"),
    (VideoCodec, r"[xh]\.?264|avc(?:hd)?", "H.264"), (VideoCodec, r"[xh]\.?265|hevc(?:10)?", "H.265"),
    (VideoCodec, r"xvid", "Xvid"), (VideoCodec, r"divx", "DivX"), (VideoCodec, r"mpeg-?2", "MPEG-2"),
    (VideoCodec, r"vc-?1", "VC-1"), (VideoCodec, r"av1", "AV1"), (VideoCodec, r"vp9", "VP9"),
    (AudioCodec, r"ddp(?:\d\.\d)?|dd\+|e-?ac-?3(?:\d\.\d)?|dolby[-.]?digital[-.]?plus", "Dolby Digital Plus"),
    (AudioCodec, r"true-?hd(?:\d\.\d)?", "Dolby TrueHD"), (AudioCodec, r"atmos", "Dolby Atmos"),
    (AudioCodec, r"ac-?3(?:\d\.\d)?|dd(?:\d\.\d)?|dolby[-.]?digital", "Dolby Digital"),
    (AudioCodec, r"dts-?hd(?:[-.]?ma)?|dts-?ma", "DTS-HD"), (AudioCodec, r"dts-?x", "DTS:X"),
    (AudioCodec, r"dts(?:\d\.\d)?", "DTS"), (AudioCodec, r"(?:he-?)?aac(?:\d\.\d)?", "AAC"),
    (AudioCodec, r"flac", "FLAC"), (AudioCodec, r"mp3", "MP3"), (AudioCodec, r"opus", "Opus"),
    (AudioCodec, r"l?pcm", "LPCM"),
    (DynamicRange, r"hdr10(?:\+|plus)", "HDR10+"), (DynamicRange, r"hdr(?:10)?", "HDR10"),
    (DynamicRange, r"dv|dovi|dolby[-.]?vision", "Dolby Vision"), (DynamicRange, r"sdr", "Standard Dynamic Range"),
    (BitDepth, r"10-?bits?|hi10p?", "10-bit"), (BitDepth, r"8-?bits?", "8-bit"), (BitDepth, r"12-?bits?", "12-bit"),
    (Edition, r"director'?s[-. ]?cut|dc", "Director's Cut"),
    (Edition, r"extended(?:[-. ](?:cut|edition))?", "Extended"),
    (Edition, r"theatrical(?:[-. ]cut)?", "Theatrical"), (Edition, r"unrated", "Unrated"),
    (Edition, r"uncut", "Uncut"), (Edition, r"uncensored", "Uncensored"), (Edition, r"remastered", "Remastered"),
    (Edition, r"imax", "IMAX"), (Edition, r"criterion", "Criterion"), (Edition, r"limited", "Limited"),
    (Edition, r"special[-. ]edition", "Special"), (Edition, r"ultimate(?:[-. ]edition)?", "Ultimate"),
    (Edition, r"collector'?s?(?:[-. ]edition)?", "Collector"),
    (Streaming, r"amzn|amazon", "Amazon Prime"), (Streaming, r"nf|netflix", "Netflix"),
    (Streaming, r"dsnp|disney\+?", "Disney+"), (Streaming, r"hmax", "HBO Max"), (Streaming, r"atvp", "Apple TV+"),
    (Streaming, r"hulu", "Hulu"), (Streaming, r"itunes|it", "iTunes"), (Streaming, r"pcok", "Peacock"),
    (SubtitleLanguage, r"vost(?:fr)?|stfr", "fr"), (SubtitleLanguage, r"subs?|subbed|st", "und"),
    (Language, r"multi|multi-?lang", "mul"), (Language, r"(?:true)?french|vff?|fre|fra", "fr"),
    (Language, r"english|eng", "en"), (Language, r"german|deutsch|ger", "de"),
    (Language, r"italian|italiano|ita", "it"), (Language, r"spanish|espanol|castellano|spa|esp", "es"),
    (Language, r"russian|rus", "ru"), (Language, r"japanese|jpn", "ja"), (Language, r"korean|kor", "ko"),
    (Language, r"chinese|chs|cht|mandarin", "zh"), (Language, r"portuguese|por", "pt"),
    (Language, r"dutch|flemish", "nl"), (Language, r"polish|pl", "pl"), (Language, r"hindi", "hi"),
    (Other, r"proper|repack|rerip", "Proper"), (Other, r"remux", "Remux"), (Other, r"complete", "Complete"),
    (Other, r"internal|int", "Internal"), (Other, r"dual[-. ]?audio", "Dual Audio"),
    (Other, r"screener|scr|dvdscr", "Screener"), (Other, r"read[-. ]?nfo", "Read NFO"),
    (Other, r"hc|hardsubs?", "Hardcoded Subtitles"), (Other, r"ws|widescreen", "Widescreen"), (Other, r"3d", "3D"),
    (Other, r"ntsc", "NTSC"), (Other, r"pal", "PAL"), (Other, r"open[-. ]?matte", "Open Matte"),
    (Other, r"sample", "Sample"), (Other, r"fix", "Fix"), (Other, r"mux", "Mux"),
    (Other, r"bt[-. ]?2020", "BT.2020"), (Other, r"hd", "HD"), (Other, r"2in1", "2in1"), (Other, r"r5", "Region 5"),
    (Other, r"stv", "Straight to Video"), (Other, r"hr", "High Resolution"), (Other, r"mhd|hdlight", "Micro HD"),
    (Other, r"line", "Line Audio"), (Other, r"md", "Mic Dubbed"), (Other, r"dual", "Dual Audio"),
    (Other, r"dubbed|dub", "Dubbed"),
    (Marker, r"\d\.\d|\d+ch|x26[45]-\w+|hq|real", ""),
];

/// Compiled keyword table: one alternation per row, whole-token only. The
/// boundary is checked by hand after the match because the `regex` crate has
/// no look-around.
static COMPILED: LazyLock<Vec<(Field, Regex, &'static str)>> = LazyLock::new(|| {
    KEYWORDS
        .iter()
        .map(|(f, pat, v)| (*f, Regex::new(&format!(r"(?i)(?:^|[\s._\-\[\](){{}},+])({pat})")).unwrap(), *v))
        .collect()
});

/// Structural patterns, kept one per line so they read as a table.
#[rustfmt::skip]
mod re {
    use regex::Regex;
    use std::sync::LazyLock;
    macro_rules! patterns {
        ($($(#[$m:meta])* $name:ident = $p:expr;)*) => {$(
            $(#[$m])* pub static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($p).unwrap());
        )*};
    }
    patterns! {
        /// `S01E02`, `S01E01E02`, `S01E01-E03`, `S06xE01`, `S2014E18`.
        EPISODE = r"(?i)(?:^|[^a-z0-9])s(\d{1,4})[ ._x-]?e(\d{1,4})((?:[ ._-]?(?:-|e|-e)\d{1,4})*)";
        /// `2x05`, `5x44x45`, `1x01-03`.
        CROSS = r"(?i)(?:^|[^a-z0-9])(\d{1,2})x(\d{1,3})((?:-?x\d{1,3}|-\d{1,3})*)(?:[^a-z0-9]|$)";
        SEASON_WORD = r"(?i)(?:^|[^a-z0-9])(?:season|saison|staffel|temporada|s)[ ._-]?(\d{1,2})(?:[^a-z0-9]|$)";
        EPISODE_WORD = r"(?i)(?:^|[^a-z0-9])(?:episode|ep|e)[ ._-]?(\d{1,4})(?:[^a-z0-9]|$)";
        /// Anime style `Title - 01 [...]` or `Title - 01v2`.
        DASH_NUMBER = r"\s-\s(\d{1,4})(?:v\d)?(?:\s|\[|\(|$|\.[a-z0-9]{2,4}$)";
        /// A bare `06` / `117` / `0493`, the last resort for episodes.
        BARE_NUMBER = r"(?:^|[\s._\-\[(])(\d{2,4})(?:v\d)?(?:[\s._\-\])]|$)";
        YEAR = r"(?:^|[^a-zA-Z0-9])((?:19[0-9]|20[0-3])\d)(?:[^a-zA-Z0-9]|$)";
        GROUP_TAIL = r"-\s?([A-Za-z0-9][\w@&]*)\.?(?:\[[^\]]*\])*\s*$";
        GROUP_HEAD = r"^\[([^\]]+)\]";
        PROPER = r"(?i)(?:^|[^a-z0-9])(real[ ._-])?(proper|repack|rerip)(?:[^a-z0-9]|$)";
        /// The parts after the first episode of `E01E02` / `E01-E03`.
        EPISODE_PART = r"(?i)(-e?|e)(\d{1,4})";
        /// Source tokens that also mean the video was ripped.
        RIP = r"rip$|^br$";
    }
}
use re::*;

const CONTAINERS: &[&str] = &[
    "mkv", "mp4", "avi", "m4v", "mov", "wmv", "ts", "m2ts", "webm", "mpg", "mpeg", "flv", "ogm", "srt", "sub", "idx",
    "ass", "nfo", "torrent", "nzb", "iso", "mk3d", "divx", "vob",
];

/// One recognised piece of the name.
struct Hit {
    start: usize,
    end: usize,
    field: Field,
    value: &'static str,
}

/// Parses `name` with the in-house rules.
pub fn inspect(name: &str) -> ReleaseInfo {
    // The file name decides; its folder only fills what the file name
    // lacks (scene folders often carry the full name above an obfuscated
    // file, and `Season 2` folders carry the season).
    let mut parts = name.rsplit(['/', '\\']).filter(|p| !p.trim().is_empty());
    let mut info = component(parts.next().unwrap_or(name));
    if let Some(parent) = parts.next() {
        let mut up = component(parent);
        // An obfuscated file ("wthd-cab.avi") under a scene folder: the
        // folder is the real name, the file only adds its extension.
        if richness(&up) > richness(&info) + 1 {
            std::mem::swap(&mut up, &mut info);
            info.container = up.container.take();
            info.episode_title = info.episode_title.take().or(up.episode_title.take());
        }
        macro_rules! fill_missing {
            ($($f:ident),*) => {$( if info.$f.is_none() { info.$f = up.$f; } )*};
        }
        fill_missing!(title, year, season, screen_size, source, video_codec);
        fill_missing!(audio_codec, bit_depth, release_group, streaming_service);
        if info.episodes.is_empty() && info.season.is_some() {
            info.episodes = up.episodes;
        }
        if up.kind == Kind::Episode {
            info.kind = Kind::Episode;
        }
    }
    info
}

/// How many technical fields a parse found; used to pick between a file
/// name and its folder.
fn richness(r: &ReleaseInfo) -> usize {
    let some = |f: &Option<String>| usize::from(f.is_some());
    some(&r.screen_size)
        + some(&r.source)
        + some(&r.video_codec)
        + some(&r.audio_codec)
        + some(&r.release_group)
        + usize::from(r.year.is_some())
}

/// Parses one path component.
fn component(s: &str) -> ReleaseInfo {
    let mut info = ReleaseInfo::default();
    let mut s = s.trim();
    if let Some((stem, ext)) = s.rsplit_once('.')
        && CONTAINERS.iter().any(|c| c.eq_ignore_ascii_case(ext))
    {
        info.container = Some(ext.to_ascii_lowercase());
        s = stem;
    }

    let hits = keyword_hits(s);
    for h in &hits {
        fill(&mut info, h, &s[h.start..h.end]);
    }
    info.proper_count = proper_count(s);
    // A 2160p Blu-ray is an Ultra HD Blu-ray whether or not it says "UHD".
    if info.source.as_deref() == Some("Blu-ray") && info.screen_size.as_deref() == Some("2160p") {
        info.source = Some("Ultra HD Blu-ray".into());
    }

    // Episode markers, most specific first; the first that matches wins.
    let mut marker: Option<(usize, usize)> = None;
    if let Some(c) = EPISODE.captures(s) {
        info.season = c[1].parse().ok();
        info.episodes = episode_list(&c[2], c.get(3).map_or("", |m| m.as_str()));
        marker = span(&c);
    } else if let Some(c) = CROSS.captures_iter(s).find(|c| &c[1] != "1920" && &c[1] != "1280") {
        info.season = c[1].parse().ok();
        info.episodes = episode_list(&c[2], &c[3].replace('x', "e"));
        marker = span(&c);
    } else {
        if let Some(c) = SEASON_WORD.captures(s) {
            info.season = c[1].parse().ok();
            marker = span(&c);
        }
        if let Some(c) = EPISODE_WORD.captures(s).or_else(|| DASH_NUMBER.captures(s)) {
            info.episodes = c[1].parse().into_iter().collect();
            marker = marker.or(span(&c));
        }
    }
    if info.season.is_none() && info.episodes.is_empty() {
        marker = bare_number(s, &hits, &mut info).or(marker);
    }
    if info.season.is_some() || !info.episodes.is_empty() {
        info.kind = Kind::Episode;
    }

    // Release group: `[Group] Title ...` (fansubs) or `... -GROUP` (scene).
    let head = GROUP_HEAD.captures(s);
    let body_start = head.as_ref().map_or(0, |c| c.get(0).unwrap().end());
    let tail = GROUP_TAIL.captures(s).filter(|c| {
        // A trailing "-720p" or "-DTS" is a keyword, not a group.
        let g = c.get(1).unwrap();
        let keyword = hits.iter().any(|h| h.start <= g.start() && h.end >= g.end());
        g.start() > body_start && !keyword && !g.as_str().bytes().all(|b| b.is_ascii_digit())
    });
    // Without a dash, a last word right after a codec is the group
    // ("... x264 CCATS").
    let loose = || {
        let last = hits.last()?;
        let rest = &s[last.end..];
        let word = rest.trim_start_matches([' ', '.', '_']);
        let ok =
            word.len() > 1 && word.len() + 1 >= rest.len() && word.chars().all(|c| c.is_alphanumeric() || c == '@');
        (ok && matches!(last.field, VideoCodec | AudioCodec | Marker) && !word.chars().all(|c| c.is_ascii_digit()))
            .then(|| (last.end + rest.len() - word.len(), word.to_string()))
    };
    let (group_start, group) = match (tail, loose()) {
        (Some(c), _) => (c.get(0).unwrap().start(), Some(c[1].to_string())),
        (None, Some((at, w))) => (at, Some(w)),
        (None, None) => (s.len(), head.map(|c| c[1].trim().to_string())),
    };
    info.release_group = group;

    // Year: the first plausible year that is not the very start of the
    // title ("2012.2009.720p" is the film 2012 from 2009).
    let year = YEAR
        .captures_iter(&s[..group_start])
        .filter_map(|c| c.get(1))
        .find(|m| clean(&s[body_start..m.start()]).is_some());
    if let Some(m) = year {
        info.year = m.as_str().parse().ok();
    }

    // The title ends at the first recognised thing after the opening
    // bracket group; the episode title sits between the episode marker and
    // the next keyword.
    let first_tech = next_hit(&hits, body_start + 1, group_start);
    let mut title_end = first_tech.min(group_start);
    if let Some(y) = year {
        title_end = title_end.min(y.start());
    }
    if let Some((ms, me)) = marker
        && ms >= body_start
    {
        title_end = title_end.min(ms);
        let next = next_hit(&hits, me, group_start);
        let year_after = year.map(|y| y.start()).filter(|&p| p >= me);
        let end = next.min(year_after.unwrap_or(usize::MAX));
        info.episode_title = clean(&s[me.min(next)..end.max(me.min(next))]);
    }
    info.title = clean(&s[body_start.min(title_end)..title_end]);
    info
}

/// Start of the first keyword at or after `from`, else `default`.
fn next_hit(hits: &[Hit], from: usize, default: usize) -> usize {
    hits.iter().map(|h| h.start).find(|&p| p >= from).unwrap_or(default)
}

/// All keyword matches, longest-first where two overlap.
fn keyword_hits(s: &str) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    for (field, re, value) in COMPILED.iter() {
        for c in re.captures_iter(s) {
            let m = c.get(1).unwrap();
            let after = s[m.end()..].chars().next();
            let overlaps = hits.iter().any(|h| h.start < m.end() && m.start() < h.end);
            if !overlaps && !after.is_some_and(|ch| ch.is_alphanumeric()) {
                let (start, end, field) = (m.start(), m.end(), *field);
                hits.push(Hit { start, end, field, value });
            }
        }
    }
    // Short words that are also ordinary words or title fragments ("It",
    // "Pal Joey", "DC") only count after something unambiguous, or when
    // they stand in brackets like "[BD]".
    const AMBIGUOUS: &[&str] = &[
        "it", "dc", "dv", "ts", "tc", "dm", "hd", "pal", "int", "nf", "st", "sub", "subs", "dub", "fix", "mux", "ws",
        "hc", "pl", "por", "spa", "esp", "ita", "ger", "eng", "fre", "fra", "rus", "kor", "vf", "vff", "cam", "scr",
        "dd", "line", "md", "hr", "dual", "r5", "stv", "real", "sample", "complete", "limited", "int", "ac3", "dts",
    ];
    let ambiguous = |h: &Hit| AMBIGUOUS.iter().any(|w| s[h.start..h.end].eq_ignore_ascii_case(w));
    let strong = hits.iter().filter(|h| !ambiguous(h)).map(|h| h.start);
    let first_strong = strong.min().unwrap_or(usize::MAX);
    let bracketed = |h: &Hit| s[..h.start].ends_with(['[', '(']);
    hits.retain(|h| !ambiguous(h) || h.start > first_strong || bracketed(h));
    hits.sort_by_key(|h| h.start);
    hits
}

fn fill(info: &mut ReleaseInfo, h: &Hit, text: &str) {
    let set = |slot: &mut Option<String>| {
        if slot.is_none() {
            *slot = Some(h.value.to_string());
        }
    };
    let push = |list: &mut Vec<String>, v: &str| {
        if !list.iter().any(|x| x == v) {
            list.push(v.to_string());
        }
    };
    match h.field {
        // Unusual resolutions are reported as written (`960x544`).
        ScreenSize if h.value.is_empty() => {
            info.screen_size.get_or_insert_with(|| text.to_ascii_lowercase().replace('*', "x"));
        }
        ScreenSize => set(&mut info.screen_size),
        Source => {
            set(&mut info.source);
            // Compound source tokens carry flags guessit reports separately:
            // BRRip is a re-encoded rip, DVDScr a screener, BDMux a mux.
            let t = text.to_ascii_lowercase();
            let flags = [
                (RIP.is_match(&t) || t.contains("ripmux"), "Rip"),
                (t.starts_with("br"), "Reencoded"),
                (t.ends_with("scr"), "Screener"),
                (t.ends_with("mux"), "Mux"),
            ];
            for (_, flag) in flags.iter().filter(|(on, _)| *on) {
                push(&mut info.other, flag);
            }
        }
        VideoCodec => set(&mut info.video_codec),
        AudioCodec => set(&mut info.audio_codec),
        DynamicRange => push(&mut info.dynamic_range, h.value),
        BitDepth => set(&mut info.bit_depth),
        Edition => set(&mut info.edition),
        Language => push(&mut info.languages, h.value),
        SubtitleLanguage => push(&mut info.subtitle_languages, h.value),
        Streaming => set(&mut info.streaming_service),
        Other => push(&mut info.other, h.value),
        Marker => {}
    }
}

/// Last resort for episode numbers without a marker: `Show 06 (720p)`,
/// `Show_-_003_`, `new.girl.117.hdtv` (three digits read as season 1,
/// episode 17 unless the name looks like anime, where they are absolute).
fn bare_number(s: &str, hits: &[Hit], info: &mut ReleaseInfo) -> Option<(usize, usize)> {
    let anime = s.starts_with('[');
    let m = BARE_NUMBER.captures_iter(s).filter_map(|c| c.get(1)).find(|m| {
        let n: u32 = m.as_str().parse().unwrap_or(0);
        let is_year = (1900..2040).contains(&n) && m.as_str().len() == 4;
        !is_year && !hits.iter().any(|h| h.start <= m.start() && h.end >= m.end()) && (anime || m.as_str().len() <= 3)
    })?;
    let n: u32 = m.as_str().parse().ok()?;
    if m.as_str().len() == 3 && !anime && n >= 100 {
        info.season = Some(n / 100);
        info.episodes = vec![n % 100];
    } else {
        info.episodes = vec![n];
    }
    Some((m.start(), m.end()))
}

/// One per PROPER/REPACK/RERIP, plus one for a REAL prefix.
fn proper_count(s: &str) -> Option<u32> {
    let n: u32 = PROPER.captures_iter(s).map(|c| 1 + u32::from(c.get(1).is_some())).sum();
    (n > 0).then_some(n)
}

/// `E01`, `E01E02`, `E01-E03` / `E01-03` (a range), as a list.
fn episode_list(first: &str, rest: &str) -> Vec<u32> {
    let mut out: Vec<u32> = first.parse().into_iter().collect();
    for c in EPISODE_PART.captures_iter(rest) {
        let Ok(n) = c[2].parse::<u32>() else { continue };
        let last = out.last().copied().unwrap_or(n);
        if c[1].starts_with('-') && n > last && n - last < 50 {
            out.extend(last + 1..=n);
        } else if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

fn span(c: &Captures) -> Option<(usize, usize)> {
    let m = c.get(0)?;
    // The leading separator belongs to the text before the marker.
    let first = m.as_str().chars().next()?;
    let lead = if first.is_alphanumeric() { 0 } else { first.len_utf8() };
    Some((m.start() + lead, m.end()))
}

/// Turns a raw slice into a readable title: separators to spaces, stray
/// brackets and dashes trimmed. Empty or purely separator text gives None.
fn clean(raw: &str) -> Option<String> {
    // Dots between single letters are abbreviations (S.H.I.E.L.D.), keep them.
    let chars: Vec<char> = raw.chars().collect();
    let mut out = String::with_capacity(raw.len());
    for (i, &ch) in chars.iter().enumerate() {
        let abbrev = ch == '.'
            && i > 0
            && chars[i - 1].is_alphabetic()
            && (i < 2 || !chars[i - 2].is_alphanumeric())
            && chars.get(i + 1).is_some_and(|c| c.is_alphabetic())
            && chars.get(i + 2).is_none_or(|c| *c == '.');
        out.push(if (ch == '.' && !abbrev) || ch == '_' { ' ' } else { ch });
    }
    let t = out.split_whitespace().collect::<Vec<_>>().join(" ");
    let t = t.trim_matches(|c: char| c.is_whitespace() || "-[](){}:,+~".contains(c));
    // Drop a dangling opening bracket group such as "Title (".
    let t = t.split(['(', '[']).next().unwrap_or(t).trim_end_matches([' ', '-']);
    (!t.is_empty()).then(|| t.to_string())
}
