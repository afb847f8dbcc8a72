//! Release-name parsing: the [`ReleaseInfo`] output type and [`inspect`],
//! which fills it with the parser in [`crate::parser`].
//!
//! Values use guessit's vocabulary ("Blu-ray", "H.265", "Dolby Digital
//! Plus", ...), the de-facto standard for release names. Our schema
//! differs from guessit's in three ways: episode lists are numbers, HDR
//! flags have their own field instead of the catch-all `other`, and `kind`
//! is always `movie` or `episode`.

use serde::Serialize;

/// Fields read from a release name. Only what the name actually says is
/// filled in; nothing is looked up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ReleaseInfo {
    /// `movie` or `episode`. A name with a season/episode marker, an air
    /// date or an anime-style episode number is an episode; anything else
    /// is treated as a movie.
    pub kind: Kind,

    /// The movie or series title as written in the name, with separators
    /// turned into spaces (e.g. `The Matrix`, `Breaking Bad`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,

    /// Release year of the movie or series, when the name carries one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<u32>,

    /// Season number (`S02E05` gives 2); the first season of a pack.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub season: Option<u32>,

    /// Every season of a multi-season pack (`S01-S03` gives 1, 2, 3), in
    /// order; empty for a single season.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seasons: Vec<u32>,

    /// Every episode number the release contains, in order: one for a single
    /// episode, several for multi-episode releases such as `S01E01E02` or
    /// `S01E01-E03`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub episodes: Vec<u32>,

    /// Episode title, when the name has one after the episode marker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub episode_title: Option<String>,

    /// Air date of a daily show's episode, `YYYY-MM-DD`, from a date in
    /// the name (`2024.03.15`, `15.03.2024`, `20240315`); a day and month
    /// that could be either way round are read day first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,

    /// Vertical resolution such as `2160p`, `1080p`, `720p` or `480p`
    /// (`1080i` for interlaced sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen_size: Option<String>,

    /// Where the video came from: `Blu-ray`, `Ultra HD Blu-ray`, `Web`,
    /// `HDTV`, `DVD`, `Digital TV`, `Camera`, `Telesync`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,

    /// Video codec: `H.264`, `H.265`, `AV1`, `Xvid`, `DivX`, `MPEG-2`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video_codec: Option<String>,

    /// Main audio codec: `AAC`, `Dolby Digital`, `Dolby Digital Plus`,
    /// `Dolby TrueHD`, `Dolby Atmos`, `DTS`, `DTS-HD`, `FLAC`, `Opus`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio_codec: Option<String>,

    /// High-dynamic-range formats the release declares: `HDR10`, `HDR10+`,
    /// `Dolby Vision`; `Standard Dynamic Range` when it says SDR explicitly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dynamic_range: Vec<String>,

    /// Colour bit depth, e.g. `10-bit` or `8-bit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bit_depth: Option<String>,

    /// Release group, usually the tag after the last `-` or in leading
    /// square brackets for anime releases. Never a site tag or a repost
    /// suffix, and absent rather than guessed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_group: Option<String>,

    /// The site or tracker tag bracketed after the group (`-GRP[site]`),
    /// as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,

    /// Edition of a movie: `Director's Cut`, `Extended`, `Theatrical`,
    /// `Unrated`, `Remastered`, `IMAX`, `Criterion`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edition: Option<String>,

    /// Audio languages named in the release, as English names (`French`,
    /// `Japanese`); `mul` for a multi-language release.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,

    /// Subtitle languages named in the release, same vocabulary as
    /// `languages`; `und` when subtitles are announced without a language.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subtitle_languages: Vec<String>,

    /// Streaming service the video was taken from: `Netflix`,
    /// `Amazon Prime`, `Disney+`, `HBO Max`, `Apple TV+`, `iTunes`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming_service: Option<String>,

    /// File extension without the dot (`mkv`, `mp4`, `avi`, `srt`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,

    /// Other flags: `Proper`, `Rip`, `Remux`, `Complete`, `Dual Audio`,
    /// `Internal`, `Screener`, `BT.2020`, ... (HDR flags are in
    /// `dynamic_range` instead).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<String>,

    /// How many times the release was re-done: one per `PROPER`/`REPACK`
    /// tag (a `REAL` prefix adds one more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proper_count: Option<u32>,
}

/// Whether a release is a movie or an episode of a series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A standalone film.
    #[default]
    Movie,
    /// One or more episodes of a series.
    Episode,
}

impl Kind {
    /// The lower-case name used in JSON (`movie` / `episode`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Movie => "movie",
            Kind::Episode => "episode",
        }
    }
}

/// Parses a release or file name (optionally with folders before it).
pub fn inspect(name: &str) -> ReleaseInfo {
    crate::parser::inspect(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uhd_web_movie_with_dolby_vision() {
        let r = inspect("Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX.mkv");
        assert_eq!(r.kind, Kind::Movie);
        // Our schema has no `part` field, so "Part Two" stays in the title
        // (it is part of the film's name as catalogues list it).
        assert_eq!(r.title.as_deref(), Some("Dune Part Two"));
        assert_eq!(r.year, Some(2024));
        assert_eq!(r.screen_size.as_deref(), Some("2160p"));
        assert_eq!(r.source.as_deref(), Some("Web"));
        assert_eq!(r.video_codec.as_deref(), Some("H.265"));
        assert_eq!(r.release_group.as_deref(), Some("FLUX"));
        assert_eq!(r.container.as_deref(), Some("mkv"));
        assert!(r.dynamic_range.iter().any(|v| v == "Dolby Vision"), "{r:?}");
        assert!(r.dynamic_range.iter().any(|v| v == "HDR10"), "{r:?}");
        assert!(!r.other.iter().any(|v| v.starts_with("HDR")), "HDR must not stay in other: {r:?}");
    }

    #[test]
    fn multi_episode_tv_release() {
        let r = inspect("The.Last.of.Us.S01E01E02.1080p.AMZN.WEB-DL.DDP5.1.H.264-NTb.mkv");
        assert_eq!(r.kind, Kind::Episode);
        assert_eq!(r.title.as_deref(), Some("The Last of Us"));
        assert_eq!(r.season, Some(1));
        assert_eq!(r.episodes, vec![1, 2]);
        assert_eq!(r.screen_size.as_deref(), Some("1080p"));
        assert_eq!(r.streaming_service.as_deref(), Some("Amazon Prime"));
        assert_eq!(r.audio_codec.as_deref(), Some("Dolby Digital Plus"));
        assert_eq!(r.release_group.as_deref(), Some("NTb"));
    }

    #[test]
    fn scene_episode_without_extension() {
        let r = inspect("The.Mandalorian.S02E05.1080p.WEB.H264-GLHF");
        assert_eq!(r.kind, Kind::Episode);
        assert_eq!(r.title.as_deref(), Some("The Mandalorian"));
        assert_eq!((r.season, r.episodes.as_slice()), (Some(2), &[5][..]));
        assert_eq!(r.screen_size.as_deref(), Some("1080p"));
        assert_eq!(r.source.as_deref(), Some("Web"));
        assert_eq!(r.video_codec.as_deref(), Some("H.264"));
        assert_eq!(r.release_group.as_deref(), Some("GLHF"));
    }

    #[test]
    fn fansub_episode_with_checksum() {
        let r = inspect("[SubsPlease] Frieren - 12 (1080p) [ABCD1234].mkv");
        assert_eq!(r.kind, Kind::Episode);
        assert_eq!(r.title.as_deref(), Some("Frieren"));
        assert_eq!(r.episodes, vec![12]);
        assert_eq!(r.season, None);
        assert_eq!(r.screen_size.as_deref(), Some("1080p"));
        assert_eq!(r.release_group.as_deref(), Some("SubsPlease"));
    }

    #[test]
    fn episode_range_is_expanded() {
        let r = inspect("Severance.S02E01-E03.2160p.ATVP.WEB-DL.DDP5.1.HDR.H.265-FLUX");
        assert_eq!(r.season, Some(2));
        assert_eq!(r.episodes, vec![1, 2, 3]);
    }

    #[test]
    fn anime_fansub_style() {
        let r = inspect("[SubsPlease] Sousou no Frieren - 01 [1080p].mkv");
        assert_eq!(r.kind, Kind::Episode);
        assert_eq!(r.title.as_deref(), Some("Sousou no Frieren"));
        assert_eq!(r.episodes, vec![1]);
        assert_eq!(r.screen_size.as_deref(), Some("1080p"));
        assert_eq!(r.release_group.as_deref(), Some("SubsPlease"));
        assert_eq!(r.container.as_deref(), Some("mkv"));
    }

    #[test]
    fn chinese_titled_release() {
        let r = inspect("流浪地球2.The.Wandering.Earth.II.2023.2160p.WEB-DL.H265.10bit.DDP5.1-HHWEB.mkv");
        assert_eq!(r.kind, Kind::Movie);
        assert_eq!(r.year, Some(2023));
        assert_eq!(r.screen_size.as_deref(), Some("2160p"));
        assert_eq!(r.bit_depth.as_deref(), Some("10-bit"));
        assert_eq!(r.video_codec.as_deref(), Some("H.265"));
        assert_eq!(r.release_group.as_deref(), Some("HHWEB"));
        let title = r.title.unwrap_or_default();
        assert!(title.contains("Wandering Earth") || title.contains("流浪地球"), "title: {title}");
    }

    #[test]
    fn schema_carries_field_descriptions() {
        let schema = serde_json::to_value(schemars::schema_for!(ReleaseInfo)).unwrap();
        let props = &schema["properties"];
        assert!(props["episodes"]["description"].as_str().unwrap().contains("S01E01E02"));
        assert!(props["dynamic_range"]["description"].as_str().unwrap().contains("Dolby Vision"));
        assert_eq!(schema["required"], serde_json::json!(["kind"]));
    }

    #[test]
    fn json_is_snake_case_and_omits_empty_fields() {
        let r = inspect("Show.Name.S03E07.720p.HDTV.x264-GRP");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["kind"], "episode");
        assert_eq!(json["episodes"], serde_json::json!([7]));
        assert!(json.get("year").is_none());
        assert!(json.get("dynamic_range").is_none());
    }
}
