//! What a download is, read from the domain store: `download.get` →
//! `plan.get` (the slot's entity, season and quality, the source release)
//! → `entity.get` and `release.get` (the parsed fields of the release
//! name). Everything a naming template can ask for comes from here.

use capstan_sdk::Failure;
use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::{DownloadGet, EntityGet, EpisodesForEntity, PlanGet, ReleaseGet, SlotGet};
use capstan_sdk::contract::status::{DownloadStatus, EntityKind};
use capstan_sdk::host::domain;
use serde_json::Value;

/// A movie or a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Movie,
    Tv,
}

/// A download and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    pub download_id: String,
    pub status: DownloadStatus,
    /// The content under the `downloads` root, once the client reported it.
    pub content_path: Option<String>,
    pub kind: Kind,
    pub title: String,
    pub original_title: Option<String>,
    pub year: Option<i64>,
    /// The slot's season (series only).
    pub season: Option<u32>,
    /// `Bluray-2160p`, `WEBDL-1080p`, ...
    pub quality_full: String,
    pub release_group: Option<String>,
    /// Episodes the release name itself lists, for a single-file episode
    /// whose file name has no marker.
    pub release_episodes: Vec<u32>,
    /// Episode titles the catalogue lists, by season and episode.
    pub episode_titles: std::collections::BTreeMap<(u32, u32), String>,
    /// Season and episode of each absolute number the catalogue lists.
    pub absolute: std::collections::BTreeMap<u32, (u32, u32)>,
    /// Whether the release name numbers episodes absolutely (episodes and
    /// no season, as anime releases do).
    pub release_is_absolute: bool,
    /// The file the library holds for the movie, if any (an upgrade
    /// replaces it).
    pub held_movie: Option<String>,
    /// The file the library holds for each episode, by season and episode.
    pub held_episodes: std::collections::BTreeMap<(u32, u32), String>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

fn field(v: &Value, key: &str) -> Result<String, Failure> {
    text(v, key).ok_or_else(|| Failure::Internal(format!("the domain store answered without {key}")))
}

impl Subject {
    /// Reads download `id` and everything it refers to.
    pub fn load(id: &str) -> Result<Subject, Failure> {
        let download = domain::call::<DownloadGet>(&ById::new(id))?;
        let plan = domain::call::<PlanGet>(&ById::new(&download.plan_id))?;
        let payload = plan.payload;
        let entity = domain::call::<EntityGet>(&ById::new(field(&payload, "entityId")?))?;
        let release = domain::call::<ReleaseGet>(&ById::new(field(&payload, "sourceReleaseId")?))?;
        let parsed = release.parsed;
        let kind = match entity.kind {
            EntityKind::Tv => Kind::Tv,
            EntityKind::Movie => Kind::Movie,
        };
        let season = payload
            .get("season")
            .and_then(Value::as_u64)
            .or_else(|| parsed.get("season").and_then(Value::as_u64))
            .map(|s| s as u32);
        let release_episodes: Vec<u32> = parsed
            .get("episodes")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_u64).map(|e| e as u32).collect())
            .unwrap_or_default();
        let listed = match kind {
            Kind::Tv => domain::call::<EpisodesForEntity>(&ById::new(&entity.id))?,
            Kind::Movie => Vec::new(),
        };
        let mut episode_titles = std::collections::BTreeMap::new();
        let mut absolute = std::collections::BTreeMap::new();
        let mut held_episodes = std::collections::BTreeMap::new();
        for e in listed {
            let (Ok(s), Ok(n)) = (u32::try_from(e.season), u32::try_from(e.episode)) else { continue };
            if let Some(file) = e.file.filter(|f| !f.trim().is_empty()) {
                held_episodes.insert((s, n), file);
            }
            if let Some(title) = e.title.map(|t| t.trim().to_string()).filter(|t| !t.is_empty()) {
                episode_titles.insert((s, n), title);
            }
            if let Some(a) = e.absolute.and_then(|a| u32::try_from(a).ok()) {
                absolute.insert(a, (s, n));
            }
        }
        let release_is_absolute = parsed.get("season").is_none_or(Value::is_null) && !release_episodes.is_empty();
        let held_movie = match (kind, text(&payload, "slotId")) {
            (Kind::Movie, Some(slot)) => domain::call::<SlotGet>(&ById::new(slot))?.file,
            _ => None,
        };
        Ok(Subject {
            download_id: download.id,
            status: download.status,
            content_path: download.content_path.map(|p| p.trim().to_string()).filter(|p| !p.is_empty()),
            kind,
            title: entity.title.trim().to_string(),
            original_title: entity.original_title.map(|t| t.trim().to_string()).filter(|t| !t.is_empty()),
            year: entity.year,
            season,
            quality_full: quality_full(&parsed, text(&payload, "quality").as_deref()),
            release_group: text(&parsed, "release_group"),
            release_episodes,
            episode_titles,
            absolute,
            release_is_absolute,
            held_movie,
            held_episodes,
        })
    }

    /// The season and episodes absolute numbers stand for, when they all
    /// fall in one season the catalogue lists.
    pub fn from_absolute(&self, numbers: &[u32]) -> Option<(u32, Vec<u32>)> {
        let mapped: Vec<(u32, u32)> = numbers.iter().map(|n| self.absolute.get(n).copied()).collect::<Option<_>>()?;
        let season = mapped.first()?.0;
        mapped.iter().all(|(s, _)| *s == season).then(|| (season, mapped.iter().map(|(_, e)| *e).collect()))
    }

    /// The title of the file holding `episodes` of `season`: the one
    /// episode's, or the distinct titles joined with ` + ` (a double episode
    /// titled `Part 1` and `Part 2` keeps both); `None` while the catalogue
    /// lists none of them.
    pub fn episode_title(&self, season: u32, episodes: &[u32]) -> Option<String> {
        let mut titles: Vec<&str> = Vec::new();
        for e in episodes {
            if let Some(t) = self.episode_titles.get(&(season, *e))
                && !titles.contains(&t.as_str())
            {
                titles.push(t);
            }
        }
        (!titles.is_empty()).then(|| titles.join(" + "))
    }
}

/// Sonarr/Radarr's quality name: source and resolution (`Bluray-2160p`,
/// `WEBDL-1080p`, `WEBRip-720p`, `Remux-2160p`, `HDTV-720p`), with
/// ` Proper` when the release is a re-do. The resolution falls back to the
/// slot's quality when the release name did not say.
pub fn quality_full(parsed: &Value, slot_quality: Option<&str>) -> String {
    let list = |key: &str| -> Vec<String> {
        parsed
            .get(key)
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).map(str::to_lowercase).collect())
            .unwrap_or_default()
    };
    let other = list("other");
    let source = text(parsed, "source").map(|s| s.to_lowercase());
    let source = match source.as_deref() {
        _ if other.iter().any(|o| o == "remux") => Some("Remux".to_string()),
        Some("blu-ray" | "ultra hd blu-ray" | "bluray") => Some("Bluray".into()),
        Some("web") if other.iter().any(|o| o == "rip") => Some("WEBRip".into()),
        Some("web") => Some("WEBDL".into()),
        Some("hdtv") => Some("HDTV".into()),
        Some("digital tv" | "tv") => Some("SDTV".into()),
        Some("dvd") => Some("DVD".into()),
        Some("camera") => Some("CAM".into()),
        Some("telesync") => Some("TELESYNC".into()),
        Some(s) => Some(s.replace(' ', "")),
        None => None,
    };
    let is_resolution =
        |s: &str| s.len() > 1 && s.ends_with(['p', 'i']) && s[..s.len() - 1].bytes().all(|b| b.is_ascii_digit());
    let resolution =
        text(parsed, "screen_size").or_else(|| slot_quality.map(str::to_string)).filter(|s| is_resolution(s));
    let mut name = match (source, resolution) {
        (Some(s), Some(r)) => format!("{s}-{r}"),
        (Some(s), None) => s,
        (None, Some(r)) => r,
        (None, None) => "Unknown".into(),
    };
    if parsed.get("proper_count").and_then(Value::as_u64).unwrap_or(0) > 0 {
        name.push_str(" Proper");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::quality_full;
    use serde_json::json;

    #[test]
    fn quality_names_read_like_sonarr_and_radarr() {
        assert_eq!(quality_full(&json!({"source": "Blu-ray", "screen_size": "2160p"}), None), "Bluray-2160p");
        assert_eq!(quality_full(&json!({"source": "Web", "screen_size": "1080p"}), None), "WEBDL-1080p");
        assert_eq!(
            quality_full(&json!({"source": "Web", "other": ["Rip"], "screen_size": "720p"}), None),
            "WEBRip-720p"
        );
        assert_eq!(
            quality_full(&json!({"source": "Blu-ray", "other": ["Remux"], "screen_size": "2160p"}), None),
            "Remux-2160p"
        );
        assert_eq!(quality_full(&json!({"source": "HDTV", "proper_count": 1}), Some("720p")), "HDTV-720p Proper");
        assert_eq!(quality_full(&json!({}), Some("1080p")), "1080p");
        assert_eq!(quality_full(&json!({}), Some("any")), "Unknown");
    }
}
