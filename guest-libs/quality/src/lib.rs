//! The quality profile a `quality.*` policy body holds, its checks, and how
//! it judges one release: acceptable or rejected (with reasons), and the
//! rank that picks the preferred release among the acceptable ones. Shared
//! by `policy.preview` (what a new profile would change) and the host's
//! acquisition sweep (which release a slot gets), so both judge alike; and
//! which seasons a release covers, for a season's slot. [`upgrade`] says
//! when a file the library holds is good enough and what would replace it.

pub mod upgrade;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A quality profile.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QualityProfile {
    /// Acceptable resolutions, best first (`2160p`, `1080p`, `720p`, `576p`, `480p`).
    pub preferred_resolutions: Vec<String>,
    /// Acceptable sources (`Blu-ray`, `Web`, `HDTV`, ...); any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_sources: Option<Vec<String>>,
    /// Smallest acceptable size in megabytes (10^6 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size_mb: Option<f64>,
    /// Largest acceptable size in megabytes (10^6 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size_mb: Option<f64>,
    /// Video codecs to prefer, best first (`H.265`, `H.264`, `AV1`); others are still acceptable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_codecs: Option<Vec<String>>,
    /// Words that reject a release when its name contains them (`CAM`, `HDTS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_terms: Option<Vec<String>>,
    /// The resolution (one of `preferredResolutions`) at which a file is
    /// good enough: one below it is replaced by a release of a better
    /// resolution when one appears. Without it a file is never upgraded,
    /// only replaced by a PROPER or REPACK of itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutoff: Option<String>,
}

pub const RESOLUTIONS: &[&str] = &["2160p", "1440p", "1080p", "1080i", "720p", "576p", "480p"];

/// Most values in one of a profile's lists, and longest value: every
/// release is judged against them, so they stay small.
pub const MAX_LISTED: usize = 100;
pub const MAX_VALUE_CHARS: usize = 64;

impl QualityProfile {
    /// Why the profile cannot be used, if it cannot.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.preferred_resolutions.is_empty() {
            problems.push("preferredResolutions must name at least one resolution".to_string());
        }
        if self.preferred_resolutions.len() > RESOLUTIONS.len() {
            problems
                .push(format!("preferredResolutions lists more than the {} resolutions there are", RESOLUTIONS.len()));
        } else if let Some(r) =
            self.preferred_resolutions.iter().find(|r| !RESOLUTIONS.contains(&r.to_ascii_lowercase().as_str()))
        {
            let shown: String = r.chars().take(MAX_VALUE_CHARS).collect();
            problems.push(format!("resolution {shown:?} is not one of {}", RESOLUTIONS.join(", ")));
        }
        for (field, list) in [
            ("allowedSources", &self.allowed_sources),
            ("preferredCodecs", &self.preferred_codecs),
            ("rejectTerms", &self.reject_terms),
        ] {
            if let Some(list) = list {
                if list.len() > MAX_LISTED {
                    problems.push(format!("{field} lists {} values; at most {MAX_LISTED}", list.len()));
                }
                if list.iter().any(|v| v.chars().count() > MAX_VALUE_CHARS) {
                    problems.push(format!("{field} values must be at most {MAX_VALUE_CHARS} characters"));
                }
                if field == "allowedSources" && list.is_empty() {
                    problems.push("allowedSources, when given, must name a source".into());
                }
                if list.iter().any(|v| canon(v).is_empty()) {
                    problems.push(format!("{field} must not contain empty values"));
                }
            }
        }
        for (field, value) in [("minSizeMb", self.min_size_mb), ("maxSizeMb", self.max_size_mb)] {
            if value.is_some_and(|v| !v.is_finite() || v < 0.0) {
                problems.push(format!("{field} must be a non-negative number"));
            }
        }
        if let (Some(min), Some(max)) = (self.min_size_mb, self.max_size_mb)
            && min > max
        {
            problems.push(format!("minSizeMb {min} is larger than maxSizeMb {max}"));
        }
        if let Some(cutoff) = &self.cutoff
            && self.resolution_rank(cutoff).is_none()
        {
            let shown: String = cutoff.chars().take(MAX_VALUE_CHARS).collect();
            problems.push(format!(
                "cutoff {shown:?} is not one of preferredResolutions ({})",
                self.preferred_resolutions.join(", ")
            ));
        }
        problems
    }
}

/// What a release offers, as the profile looks at it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offer {
    pub name: String,
    pub resolution: Option<String>,
    pub source: Option<String>,
    pub codec: Option<String>,
    pub size: Option<i64>,
    /// The group that made the release (`-GRP`), for telling a PROPER of
    /// the same release from another group's.
    pub group: Option<String>,
    /// How many times it was re-done (`PROPER`, `REPACK`); 0 for the first.
    pub proper: u32,
}

/// Lower case letters and digits only, with the usual spellings of one
/// source or codec folded together, so `WEB-DL` = `Web` and `x265` = `H.265`.
pub fn canon(text: &str) -> String {
    let plain: String = text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect();
    match plain.as_str() {
        "webdl" | "webrip" => "web".into(),
        "bdrip" | "brrip" | "bd" => "bluray".into(),
        "uhdbluray" => "ultrahdbluray".into(),
        "x265" | "hevc" => "h265".into(),
        "x264" | "avc" => "h264".into(),
        _ => plain,
    }
}

/// A profile's judgement of one release.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Judgement {
    pub acceptable: bool,
    /// Why it is rejected; empty when acceptable.
    pub reasons: Vec<String>,
}

impl QualityProfile {
    pub fn judge(&self, offer: &Offer) -> Judgement {
        let mut reasons = Vec::new();
        match &offer.resolution {
            Some(r) if self.resolution_rank(r).is_some() => {}
            Some(r) => reasons.push(format!("resolution {r} is not preferred")),
            None => reasons.push("the release states no resolution".into()),
        }
        if let Some(allowed) = &self.allowed_sources {
            match &offer.source {
                Some(s) if allowed.iter().any(|a| canon(a) == canon(s)) => {}
                Some(s) => reasons.push(format!("source {s} is not allowed")),
                None => reasons.push("the release states no source".into()),
            }
        }
        let mb = offer.size.map(|b| b as f64 / 1_000_000.0);
        if let (Some(min), Some(mb)) = (self.min_size_mb, mb)
            && mb < min
        {
            reasons.push(format!("{mb:.0} MB is below the minimum of {min} MB"));
        }
        if let (Some(max), Some(mb)) = (self.max_size_mb, mb)
            && mb > max
        {
            reasons.push(format!("{mb:.0} MB is above the maximum of {max} MB"));
        }
        let name = offer.name.to_lowercase();
        let words: Vec<String> = name.split(|c: char| !c.is_alphanumeric()).map(str::to_string).collect();
        for term in self.reject_terms.iter().flatten() {
            let term_lower = term.trim().to_lowercase();
            // Whole words only: rejecting `CAM` must not reject `CAMERA` or `Cambridge`.
            let hit = if term_lower.chars().all(char::is_alphanumeric) {
                words.contains(&term_lower)
            } else {
                name.contains(&term_lower)
            };
            if hit {
                reasons.push(format!("the name contains the rejected term {term:?}"));
            }
        }
        Judgement { acceptable: reasons.is_empty(), reasons }
    }

    pub(crate) fn resolution_rank(&self, resolution: &str) -> Option<usize> {
        self.preferred_resolutions.iter().position(|r| r.eq_ignore_ascii_case(resolution))
    }

    /// Sort key among acceptable releases, smaller is better: resolution in
    /// preference order, then preferred codec, then the larger file.
    pub fn rank(&self, offer: &Offer) -> (usize, usize, i64) {
        let resolution = offer.resolution.as_deref().and_then(|r| self.resolution_rank(r)).unwrap_or(usize::MAX);
        let codecs = self.preferred_codecs.as_deref().unwrap_or_default();
        let codec = offer
            .codec
            .as_deref()
            .and_then(|c| codecs.iter().position(|p| canon(p) == canon(c)))
            .unwrap_or(codecs.len());
        (resolution, codec, -offer.size.unwrap_or(0))
    }
}

/// What a release record (`{title, parsed, size}`) offers: its stored
/// parsed fields, with what the release-name parser reads from its title
/// filling the gaps.
pub fn offer(release: &Value) -> Offer {
    let title = release["title"].as_str().unwrap_or_default();
    offer_of(title, &release["parsed"], release["size"].as_i64())
}

/// What a release named `title`, with the `parsed` fields stored for it
/// and `size` bytes, offers: as [`offer`] reads a record.
pub fn offer_of(title: &str, parsed: &Value, size: Option<i64>) -> Offer {
    let name = title.to_string();
    let read = release_name::parse::inspect(&name);
    let field = |key: &str, fallback: Option<String>| parsed[key].as_str().map(str::to_string).or(fallback);
    Offer {
        resolution: field("screen_size", read.screen_size),
        source: field("source", read.source),
        codec: field("video_codec", read.video_codec),
        size,
        group: field("release_group", read.release_group),
        proper: parsed["proper_count"].as_u64().map(|n| n as u32).or(read.proper_count).unwrap_or(0),
        name,
    }
}

/// Whether a release's parsed fields (`release.inspect` output) cover
/// `season`: a pack's `seasons` list (`S01-S03`) or its one `season`.
/// `None` when the name says no season (a complete series, a film).
pub fn covers_season(parsed: &Value, season: i64) -> Option<bool> {
    let pack: Vec<i64> = parsed["seasons"].as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
    if !pack.is_empty() {
        return Some(pack.contains(&season));
    }
    parsed["season"].as_i64().map(|s| s == season)
}

/// The release a profile would pick: the best-ranked acceptable one
/// (ties go to the first). Without a profile nothing is preferred.
pub fn preferred<'a, K>(profile: Option<&QualityProfile>, offers: &'a [(K, Offer)]) -> Option<&'a K> {
    let profile = profile?;
    offers.iter().filter(|(_, o)| profile.judge(o).acceptable).min_by_key(|(_, o)| profile.rank(o)).map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> QualityProfile {
        QualityProfile {
            preferred_resolutions: vec!["2160p".into(), "1080p".into()],
            allowed_sources: Some(vec!["WEB-DL".into(), "Blu-ray".into()]),
            min_size_mb: Some(1000.0),
            max_size_mb: None,
            preferred_codecs: Some(vec!["x265".into()]),
            reject_terms: Some(vec!["CAM".into()]),
            cutoff: None,
        }
    }

    #[test]
    fn a_pack_covers_each_of_its_seasons() {
        let pack = serde_json::json!({"season": 1, "seasons": [1, 2, 3]});
        assert_eq!([1, 2, 3, 4].map(|s| covers_season(&pack, s)), [Some(true), Some(true), Some(true), Some(false)]);
        let one = serde_json::json!({"season": 2, "episodes": [5]});
        assert_eq!((covers_season(&one, 2), covers_season(&one, 1)), (Some(true), Some(false)));
        assert_eq!(covers_season(&serde_json::json!({"title": "Show"}), 1), None);
    }

    #[test]
    fn source_and_codec_spellings_fold_together() {
        let offer = Offer {
            name: "Film.2024.1080p.WEB-DL.H.265-GRP".into(),
            resolution: Some("1080p".into()),
            source: Some("Web".into()),
            codec: Some("H.265".into()),
            size: Some(4_000_000_000),
            ..Offer::default()
        };
        assert!(profile().judge(&offer).acceptable);
        assert_eq!(profile().rank(&offer).1, 0, "H.265 is the preferred x265");
    }

    #[test]
    fn reject_terms_match_whole_words_only() {
        let base = Offer {
            resolution: Some("2160p".into()),
            source: Some("Web".into()),
            size: Some(9_000_000_000),
            ..Offer::default()
        };
        let camera = Offer { name: "Camera.Buff.2024.2160p.WEB".into(), ..base.clone() };
        assert!(profile().judge(&camera).acceptable);
        let cam = Offer { name: "Film.2024.2160p.CAM".into(), ..base };
        assert!(!profile().judge(&cam).acceptable);
    }

    #[test]
    fn contradictory_sizes_and_unknown_resolutions_are_problems() {
        let mut p = profile();
        p.max_size_mb = Some(10.0);
        p.preferred_resolutions.push("4k".into());
        p.cutoff = Some("720p".into());
        let problems = p.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
    }
}
