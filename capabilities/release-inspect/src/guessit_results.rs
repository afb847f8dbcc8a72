//! guessit's answers, read back behind the same [`ReleaseInfo`] schema, for
//! the parser comparison (`compare` feature). guessit is Python: the
//! comparison script (`scripts/compare-release-parsers.sh`) runs it on every
//! name once and writes one JSON line per name (`{"name", "result"}`); this
//! reads that file. Values keep guessit's vocabulary, which the scorer
//! already speaks; a `GRP[site]` group is split as the scorer splits
//! guessit's expectations, and HDR flags move from `other` to
//! `dynamic_range`, as for hunch.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::parse::{Kind, ReleaseInfo};

/// Values guessit files under `other` that belong in `dynamic_range`.
const DYNAMIC_RANGE: &[&str] = &["HDR10", "HDR10+", "Dolby Vision", "Standard Dynamic Range"];

/// guessit's answer for each name of a results file.
pub struct GuessitResults {
    by_name: HashMap<String, ReleaseInfo>,
}

impl GuessitResults {
    /// Reads a results file; a line that is not `{"name", "result"}` is an
    /// error naming its line.
    pub fn load(path: &Path) -> Result<GuessitResults, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let mut by_name = HashMap::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let row: Value =
                serde_json::from_str(line).map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))?;
            let (Some(name), Some(result)) = (row["name"].as_str(), row.get("result")) else {
                return Err(format!("{} line {}: not a {{name, result}} object", path.display(), i + 1));
            };
            by_name.insert(name.to_string(), from_guessit(result));
        }
        Ok(GuessitResults { by_name })
    }

    /// guessit's answer for `name`; a name it was not run on answers empty
    /// (and so scores as a miss, never as a pass).
    pub fn inspect(&self, name: &str) -> ReleaseInfo {
        self.by_name.get(name).cloned().unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// A value or a list of them, as strings.
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::String(s) => vec![s.clone()],
        Value::Number(n) => vec![n.to_string()],
        _ => Vec::new(),
    }
}

fn numbers(v: &Value) -> Vec<u32> {
    strings(v).iter().filter_map(|s| s.parse().ok()).collect()
}

fn from_guessit(r: &Value) -> ReleaseInfo {
    let first = |key: &str| strings(&r[key]).into_iter().next();
    let seasons = numbers(&r["season"]);
    let (dynamic_range, other): (Vec<String>, Vec<String>) =
        strings(&r["other"]).into_iter().partition(|v| DYNAMIC_RANGE.contains(&v.as_str()));
    let (release_group, site) = match first("release_group") {
        Some(group) => match group.split_once('[').and_then(|(g, rest)| Some((g, rest.strip_suffix(']')?))) {
            Some((g, s)) if !g.is_empty() && !s.is_empty() => (Some(g.to_string()), Some(s.to_string())),
            _ => (Some(group), None),
        },
        None => (None, None),
    };
    ReleaseInfo {
        kind: if r["type"] == "episode" { Kind::Episode } else { Kind::Movie },
        title: first("title"),
        year: numbers(&r["year"]).first().copied(),
        season: seasons.first().copied(),
        seasons: if seasons.len() > 1 { seasons } else { Vec::new() },
        episodes: numbers(&r["episode"]),
        episode_title: first("episode_title"),
        date: first("date"),
        screen_size: first("screen_size"),
        source: first("source"),
        video_codec: first("video_codec"),
        audio_codec: first("audio_codec"),
        dynamic_range,
        bit_depth: first("color_depth"),
        release_group,
        site,
        edition: first("edition"),
        languages: strings(&r["language"]),
        subtitle_languages: strings(&r["subtitle_language"]),
        streaming_service: first("streaming_service"),
        container: first("container"),
        other,
        proper_count: numbers(&r["proper_count"]).first().copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guessit_answers_read_back_as_release_info() {
        let r = serde_json::json!({"title": "Show", "season": [1, 2], "episode": 3, "type": "episode",
            "release_group": "LOL[ettv]", "other": ["HDR10", "Proper"], "language": ["en", "fr"]});
        let info = from_guessit(&r);
        assert_eq!((info.kind, info.title.as_deref(), info.season), (Kind::Episode, Some("Show"), Some(1)));
        assert_eq!((info.seasons, info.episodes), (vec![1, 2], vec![3]));
        assert_eq!((info.release_group.as_deref(), info.site.as_deref()), (Some("LOL"), Some("ettv")));
        assert_eq!((info.dynamic_range, info.other), (vec!["HDR10".to_string()], vec!["Proper".to_string()]));
        assert_eq!(info.languages, ["en", "fr"]);
    }
}
