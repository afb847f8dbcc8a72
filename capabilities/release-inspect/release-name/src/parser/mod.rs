//! The release-name parser that ships in `release.inspect`.
//!
//! Owns the entry point [`inspect`] and how the components of a path are
//! combined: the file name decides, folders fill in what it lacks, and an
//! obfuscated or abbreviated file name under a scene folder defers to the
//! folder. Everything is static tables and hand-written matchers; nothing
//! is built at run time, so a freshly instantiated component parses its
//! first name exactly as fast as its thousandth.
//!
//! The passes, in order (see [`component::parse`]): tokenise, drop repost
//! suffixes, mark web sites, checksums and dates, find explicit episode
//! markers, match keywords, find the title start and years, demote
//! ambiguous words, find bare episode numbers, then cut the title and
//! episode title, pick the release group and fill the fields.

mod component;
mod episode;
mod fill;
mod group;
mod implicit;
mod keywords;
pub(crate) mod language;
mod suffix;
mod title;
mod token;

use crate::parse::{Kind, ReleaseInfo};

/// What a token was recognised as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Not (yet) recognised: a title, episode title or group word.
    Free,
    /// Part of an active keyword hit.
    Kw,
    /// Part of a season/episode marker.
    Marker,
    Date,
    Year,
    Crc,
    Website,
    /// A repost suffix after the group.
    Noise,
}

/// Parses a release or file name, optionally with folders before it.
pub fn inspect(name: &str) -> ReleaseInfo {
    let parts: Vec<&str> = path_components(name).into_iter().filter(|p| !p.trim().is_empty()).collect();
    let Some((file, folders)) = parts.split_last() else {
        return ReleaseInfo::default();
    };
    let mut main = component::parse(file);
    let mut ups: Vec<component::Parsed> = folders.iter().rev().map(|f| component::parse(f)).collect();
    if ups.is_empty() {
        return main.info;
    }

    // An obfuscated file (`dmd-aw.avi`, a hash, a reversed name) or a
    // scene abbreviation (`grp-title.720p.mkv`) under a release folder:
    // the folder is the release, the file adds its extension and the
    // episode numbers the folder lacks. Hash-named folders in between are
    // skipped.
    let release = ups.iter().take(2).position(|p| {
        p.richness > main.richness + 1 || (main.prefix_group && p.info.release_group.is_some() && !p.prefix_group)
    });
    if let Some(k) = release {
        let mut folder = ups.remove(k);
        ups.drain(..k);
        std::mem::swap(&mut main, &mut folder);
        let file = folder.info;
        main.info.container = file.container.or(main.info.container.take());
        if main.info.episodes.is_empty() && !file.episodes.is_empty() {
            main.info.episodes = file.episodes;
            main.info.season = main.info.season.or(file.season);
        }
    }
    let info = &mut main.info;

    // A file whose title came from after its episode marker
    // (`S02E06 - Name.mkv`), or a file without numbering in a season
    // folder (`Caprica/Season 1/Apotheosis.mp4`), takes the series title
    // from the nearest folder that has one.
    let in_season_folder = ups.first().is_some_and(|p| is_season_folder(&p.info));
    let mut needs_title = info.title.is_none()
        || main.title_after_marker
        || (info.season.is_none() && info.episodes.is_empty() && in_season_folder);
    for (depth, p) in ups.iter().enumerate() {
        let season_folder = is_season_folder(&p.info);
        if season_folder && info.season.is_none() {
            info.season = p.info.season;
        }
        if needs_title && !season_folder && p.info.title.is_some() {
            if info.title.is_some() && info.episode_title.is_none() && !main.title_after_marker {
                info.episode_title = info.title.take();
            }
            info.title = p.info.title.clone();
            info.year = info.year.or(p.info.year);
            needs_title = false;
        }
        macro_rules! fill_missing {
            ($($f:ident),*) => {$( if info.$f.is_none() { info.$f = p.info.$f.clone(); } )*};
        }
        fill_missing!(screen_size, source, video_codec, audio_codec, bit_depth, streaming_service);
        if (depth == 0 || season_folder) && p.info.release_group.is_some() && !p.prefix_group && p.richness >= 3 {
            fill_missing!(release_group);
        }
        // The same title in a library folder (`Title (Year)/...`): take its
        // year, and its spelling when it has accents the file name lost.
        if let (Some(ours), Some(theirs)) = (&info.title, &p.info.title)
            && fold(ours) == fold(theirs)
        {
            fill_missing!(year);
            if !theirs.is_ascii() && ours.is_ascii() {
                info.title = Some(theirs.clone());
            }
        }
    }
    if info.season.is_some() || !info.episodes.is_empty() {
        info.kind = Kind::Episode;
    }
    main.info
}

/// Splits a path at `/` and `\\`, except inside brackets
/// (`[720p/MKV]` is one tag, not two folders).
fn path_components(name: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0usize, 0);
    for (i, c) in name.char_indices() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth = depth.saturating_sub(1),
            '/' | '\\' if depth == 0 => {
                parts.push(&name[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&name[from..]);
    parts
}

/// `Season 2`, `S01`, `Saison 6`: a folder that only numbers a season.
fn is_season_folder(r: &ReleaseInfo) -> bool {
    r.season.is_some() && r.title.is_none() && r.episodes.is_empty()
}

/// Lower case, common Latin accents removed, letters and digits only: for
/// comparing a title with a folder's spelling of it.
fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
            'ç' => 'c',
            'è' | 'é' | 'ê' | 'ë' => 'e',
            'ì' | 'í' | 'î' | 'ï' => 'i',
            'ñ' => 'n',
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' => 'o',
            'ù' | 'ú' | 'û' | 'ü' => 'u',
            'ý' | 'ÿ' => 'y',
            other => other,
        })
        .collect()
}
