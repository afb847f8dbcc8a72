//! Naming templates with Sonarr/Radarr-style tokens, e.g.
//! `{Movie Title} ({Release Year})/{Movie Title} ({Release Year}) {Quality Full}`.
//!
//! A template is parsed once, so an unknown token is refused before any
//! file is looked at. Token values are made safe for every common file
//! system (`:` becomes ` -`, `?*"<>|` go, `/` and `\` inside a value cannot
//! make folders); `/` written in the template itself separates folders.
//! Every rendered segment is tidied (double spaces, empty brackets left by
//! a missing value, trailing dots and spaces that Windows shares refuse),
//! and a segment that would be `.` or `..` is refused, so a template can
//! never name a path outside the library root.

use capstan_sdk::Failure;

/// The default movie template.
pub const MOVIE_TEMPLATE: &str = "{Movie Title} ({Release Year})/{Movie Title} ({Release Year}) {Quality Full}";
/// The default episode template: the folder and file names Jellyfin, Emby
/// and Plex read a series by (`Show (2024)/Season 01/Show - S01E02 -
/// Title.mkv`).
pub const EPISODE_TEMPLATE: &str =
    "{Series Title} ({Release Year})/Season {season:00}/{Series Title} - S{season:00}E{episode:00} - {Episode Title}";

/// The tokens a template may use, as written (case does not matter).
pub const TOKENS: &[&str] = &[
    "Movie Title",
    "Series Title",
    "Original Title",
    "Release Year",
    "season",
    "episode",
    "Episode Title",
    "Quality Full",
    "Release Group",
];

/// A file name segment is cut to this many bytes (before the extension);
/// most file systems allow 255.
const MAX_SEGMENT: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Title,
    OriginalTitle,
    Year,
    /// Zero-padded to the width given (`{season:00}` → 2).
    Season(usize),
    Episode(usize),
    EpisodeTitle,
    QualityFull,
    ReleaseGroup,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Token(Token),
}

/// The values a template is rendered with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Values {
    pub title: String,
    pub original_title: Option<String>,
    pub year: Option<i64>,
    pub season: Option<u32>,
    pub episodes: Vec<u32>,
    /// The episodes' titles as the catalogue lists them, joined with ` + `
    /// for a file holding several.
    pub episode_title: Option<String>,
    pub quality_full: String,
    pub release_group: Option<String>,
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

fn token(inner: &str, setting: &str) -> Result<Token, Failure> {
    let (name, format) = match inner.split_once(':') {
        Some((n, f)) => (n.trim(), Some(f.trim())),
        None => (inner.trim(), None),
    };
    let width = match format {
        None => 0,
        Some(f) if !f.is_empty() && f.bytes().all(|b| b == b'0') => f.len(),
        Some(f) => {
            return Err(Failure::InvalidInput(format!(
                "{setting}: token {{{inner}}} has format {f:?}; only zeros such as {{season:00}} are understood"
            )));
        }
    };
    let plain = |t: Token| -> Result<Token, Failure> {
        if format.is_some() {
            return Err(Failure::InvalidInput(format!("{setting}: token {{{name}}} takes no format")));
        }
        Ok(t)
    };
    match name.to_lowercase().as_str() {
        "movie title" | "series title" => plain(Token::Title),
        "original title" => plain(Token::OriginalTitle),
        "release year" => plain(Token::Year),
        "season" => Ok(Token::Season(width)),
        "episode" => Ok(Token::Episode(width)),
        "episode title" => plain(Token::EpisodeTitle),
        "quality full" => plain(Token::QualityFull),
        "release group" => plain(Token::ReleaseGroup),
        _ => Err(Failure::InvalidInput(format!(
            "{setting}: unknown token {{{inner}}}; known tokens: {}",
            TOKENS.iter().map(|t| format!("{{{t}}}")).collect::<Vec<_>>().join(", ")
        ))),
    }
}

impl Template {
    /// Parses `text`; `setting` names it in error messages.
    pub fn parse(text: &str, setting: &str) -> Result<Template, Failure> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find(['{', '}']) {
            if rest.as_bytes()[open] == b'}' {
                return Err(Failure::InvalidInput(format!("{setting}: unmatched }} in {text:?}")));
            }
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(Failure::InvalidInput(format!("{setting}: unclosed {{ in {text:?}")));
            };
            parts.push(Part::Token(token(&rest[open + 1..open + close], setting)?));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        if text.trim().is_empty() {
            return Err(Failure::InvalidInput(format!("{setting} is empty")));
        }
        if text.trim_start().starts_with(['/', '\\']) {
            return Err(Failure::InvalidInput(format!("{setting}: paths are relative to the library root")));
        }
        Ok(Template { parts })
    }

    /// Whether the template names the episode (series templates must).
    pub fn uses_episode(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Token(Token::Episode(_))))
    }

    /// Whether the template uses season or episode numbers.
    pub fn uses_numbers(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Token(Token::Season(_) | Token::Episode(_))))
    }

    /// The path under the library root, with `extension` appended to the
    /// file name.
    pub fn render(&self, values: &Values, extension: &str) -> Result<String, Failure> {
        let mut raw = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => raw.push_str(&t.replace('\\', "/")),
                Part::Token(t) => raw.push_str(&clean_value(&value(*t, values))),
            }
        }
        // Checked before tidying, which would quietly turn `..` into nothing.
        if raw.split('/').any(|s| matches!(s.trim(), "." | "..")) {
            return Err(Failure::InvalidInput(format!("the template names {raw:?}, which leaves the library root")));
        }
        let mut segments: Vec<String> = raw.split('/').map(tidy).filter(|s| !s.is_empty()).collect();
        let Some(last) = segments.last_mut() else {
            return Err(Failure::InvalidInput(format!("the template gave an empty file name ({raw:?})")));
        };
        *last = cut(last, MAX_SEGMENT);
        if !extension.is_empty() {
            last.push('.');
            last.push_str(extension);
        }
        Ok(segments.join("/"))
    }
}

fn pad(n: u32, width: usize) -> String {
    format!("{n:0width$}")
}

fn value(token: Token, v: &Values) -> String {
    match token {
        Token::Title => v.title.clone(),
        Token::OriginalTitle => v.original_title.clone().unwrap_or_else(|| v.title.clone()),
        Token::Year => v.year.map(|y| y.to_string()).unwrap_or_default(),
        Token::Season(w) => v.season.map(|s| pad(s, w)).unwrap_or_default(),
        // Several episodes in one file read `01-E02`, so `E{episode:00}`
        // gives Sonarr's `S01E01-E02`.
        Token::Episode(w) => v.episodes.iter().map(|e| pad(*e, w)).collect::<Vec<_>>().join("-E"),
        Token::EpisodeTitle => v.episode_title.clone().unwrap_or_default(),
        Token::QualityFull => v.quality_full.clone(),
        Token::ReleaseGroup => v.release_group.clone().unwrap_or_default(),
    }
}

/// Makes a token value safe: it can neither make folders nor carry
/// characters common file systems refuse.
pub fn clean_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            ':' => out.push_str(" -"),
            '/' | '\\' => out.push('-'),
            '?' | '*' | '"' | '<' | '>' | '|' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Tidies one path segment: template text is cleaned like values (without
/// touching `/`), brackets a missing value left empty go, spaces collapse,
/// and no segment starts with a space or ends with a dot, a space or the
/// dash of a ` - {Release Group}` whose value is missing.
fn tidy(segment: &str) -> String {
    let mut s = clean_value(segment);
    for empty in ["()", "[]", "( )", "[ ]"] {
        s = s.replace(empty, "");
    }
    while s.contains("  ") {
        s = s.replace("  ", " ");
    }
    s.trim().trim_end_matches(['.', ' ', '-']).trim_end().to_string()
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].trim_end_matches([' ', '.']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dune() -> Values {
        Values {
            title: "Dune: Part Two".into(),
            original_title: None,
            year: Some(2024),
            quality_full: "Bluray-2160p".into(),
            release_group: Some("FLUX".into()),
            ..Values::default()
        }
    }

    #[test]
    fn the_default_movie_template_reads_like_radarr() {
        let t = Template::parse(MOVIE_TEMPLATE, "movie_template").unwrap();
        assert_eq!(t.render(&dune(), "mkv").unwrap(), "Dune - Part Two (2024)/Dune - Part Two (2024) Bluray-2160p.mkv");
    }

    #[test]
    fn the_default_episode_template_reads_like_sonarr() {
        let t = Template::parse(EPISODE_TEMPLATE, "episode_template").unwrap();
        let v = Values {
            title: "Severance".into(),
            year: Some(2022),
            season: Some(2),
            episodes: vec![5],
            episode_title: Some("Trojan's Horse".into()),
            quality_full: "WEBDL-1080p".into(),
            ..Values::default()
        };
        assert_eq!(t.render(&v, "mkv").unwrap(), "Severance (2022)/Season 02/Severance - S02E05 - Trojan's Horse.mkv");
        let two =
            Values { episodes: vec![1, 2], episode_title: Some("Hello, Ms. Cobel + Goodbye, Mrs. Selvig".into()), ..v };
        assert!(
            t.render(&two, "mkv")
                .unwrap()
                .ends_with("Severance - S02E01-E02 - Hello, Ms. Cobel + Goodbye, Mrs. Selvig.mkv")
        );
        let untitled = Values { episode_title: None, ..two };
        assert!(
            t.render(&untitled, "mkv").unwrap().ends_with("Season 02/Severance - S02E01-E02.mkv"),
            "no dangling dash"
        );
    }

    #[test]
    fn values_cannot_make_folders_or_bad_characters() {
        let t = Template::parse("{Movie Title}/{Movie Title} - {Release Group}", "movie_template").unwrap();
        let v = Values { title: "AC/DC: Live? <at> \"River\" *Plate*|..".into(), ..Values::default() };
        let path = t.render(&v, "mp4").unwrap();
        assert_eq!(path, "AC-DC - Live at River Plate/AC-DC - Live at River Plate.mp4");
        let up = Values { title: "..".into(), ..Values::default() };
        assert!(Template::parse("{Movie Title}/x", "t").unwrap().render(&up, "mkv").is_err());
        assert!(Template::parse("../{Movie Title}", "t").unwrap().render(&dune(), "mkv").is_err());
    }

    #[test]
    fn missing_values_leave_no_empty_brackets() {
        let t = Template::parse("{Movie Title} ({Release Year}) [{Release Group}]", "t").unwrap();
        let v = Values { title: "Primer".into(), ..Values::default() };
        assert_eq!(t.render(&v, "avi").unwrap(), "Primer.avi");
    }

    #[test]
    fn unknown_tokens_and_formats_are_named() {
        let Err(Failure::InvalidInput(m)) = Template::parse("{Movie Titel}", "movie_template") else { panic!() };
        assert!(m.contains("movie_template") && m.contains("{Movie Titel}") && m.contains("{Movie Title}"), "{m}");
        assert!(matches!(Template::parse("{season:xx}", "t"), Err(Failure::InvalidInput(_))));
        assert!(matches!(Template::parse("{Movie Title", "t"), Err(Failure::InvalidInput(_))));
        assert!(matches!(Template::parse("/abs/{Movie Title}", "t"), Err(Failure::InvalidInput(_))));
        assert!(Template::parse("{movie title}", "t").is_ok(), "token names ignore case");
    }
}
