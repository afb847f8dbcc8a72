//! The `hunch` crate behind the same [`ReleaseInfo`] schema, compiled only
//! for the parser comparison (`compare` feature and tests); the shipped
//! component does not contain it.
//!
//! `hunch` uses guessit's value vocabulary, so values pass through; HDR
//! flags move from `other` to `dynamic_range` and `kind` folds hunch's
//! `extra` type into movie or episode.

use hunch::{HunchResult, MediaType, Property};

use crate::parse::{Kind, ReleaseInfo};

/// Values `hunch` files under `other` that belong in `dynamic_range`.
const DYNAMIC_RANGE: &[&str] = &["HDR10", "HDR10+", "Dolby Vision", "Standard Dynamic Range"];

/// Parses a release or file name with `hunch`.
pub fn inspect(name: &str) -> ReleaseInfo {
    from_hunch(&hunch::hunch(name))
}

fn from_hunch(r: &HunchResult) -> ReleaseInfo {
    let text = |p: Property| r.first(p).map(str::to_string);
    let list = |p: Property| r.all(p).into_iter().map(str::to_string).collect::<Vec<_>>();
    // hunch stores numbers as strings; a value that does not parse (it
    // should not happen) is dropped rather than guessed.
    let number = |p: Property| r.first(p).and_then(|v| v.parse::<u32>().ok());

    let mut episodes: Vec<u32> = r.all(Property::Episode).iter().filter_map(|v| v.parse().ok()).collect();
    episodes.dedup();

    let (dynamic_range, other): (Vec<String>, Vec<String>) =
        list(Property::Other).into_iter().partition(|v| DYNAMIC_RANGE.contains(&v.as_str()));

    // hunch has a third type, `extra` (openings, specials, bonus clips). Our
    // schema only distinguishes movies from episodes, so an extra counts as
    // an episode when it carries series numbering and as a movie otherwise.
    let kind = match r.media_type() {
        Some(MediaType::Episode) => Kind::Episode,
        Some(MediaType::Extra) if !episodes.is_empty() || r.season().is_some() => Kind::Episode,
        _ => Kind::Movie,
    };

    ReleaseInfo {
        kind,
        title: text(Property::Title),
        year: number(Property::Year),
        season: number(Property::Season),
        seasons: Vec::new(),
        episodes,
        episode_title: text(Property::EpisodeTitle),
        date: text(Property::Date),
        screen_size: text(Property::ScreenSize),
        source: text(Property::Source),
        video_codec: text(Property::VideoCodec),
        audio_codec: text(Property::AudioCodec),
        dynamic_range,
        bit_depth: text(Property::ColorDepth),
        release_group: text(Property::ReleaseGroup),
        site: None,
        edition: text(Property::Edition),
        languages: list(Property::Language),
        subtitle_languages: list(Property::SubtitleLanguage),
        streaming_service: text(Property::StreamingService),
        container: text(Property::Container),
        other,
        proper_count: number(Property::ProperCount),
    }
}
