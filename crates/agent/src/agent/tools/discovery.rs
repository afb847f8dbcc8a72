//! Tool discovery for runs that start with a few tools (`agent.max_tools >
//! 0`): `search_tools(search, limit)` ranks the session's catalog — the
//! capabilities the run's mode and allowlist permit, nothing more — by
//! exact name, then alias, an alias the text holds (whole words, or
//! anywhere in Chinese or Japanese, which has no spaces to split on), tag,
//! part of the name, and description (at most
//! 8 results). Found tools join a window of the 16 most recent candidates;
//! the next request enables those whose schemas fit min(4096 tokens, 10% of
//! the context window) while the whole request keeps 15% headroom, and the
//! model is told which were enabled and why the others were not. Discovery
//! starts afresh with each user request.

use std::collections::VecDeque;

use serde::Serialize;

use crate::agent::providers::ToolSpec;
use crate::runtime::Descriptor;

/// Most results one search returns.
pub const MAX_RESULTS: usize = 8;
/// Most candidates remembered between requests.
pub const WINDOW: usize = 16;
/// Largest schema budget for discovered tools, in tokens.
pub(crate) const MAX_DISCOVERY_TOKENS: usize = 4096;

/// A calibrated estimate: about four characters per token for JSON schemas.
pub(crate) fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The tool as offered to the model.
pub fn spec(d: &Descriptor) -> ToolSpec {
    ToolSpec { name: d.id.clone(), description: d.description.clone(), input_schema: d.input_schema.clone() }
}

fn tokens_of(d: &Descriptor) -> usize {
    estimate_tokens(&serde_json::to_string(&spec(d)).unwrap_or_default())
}

/// How well `d` matches `search`: higher is better, 0 is no match.
fn score(d: &Descriptor, search: &str) -> u32 {
    let q = search.trim().to_lowercase();
    if q.is_empty() {
        return 0;
    }
    if d.id == q {
        return 50;
    }
    if d.aliases.iter().any(|a| a.to_lowercase() == q) {
        return 40;
    }
    // The text names an alias inside it: "帮我整理下载" holds 整理, "please
    // check downloads now" holds "check downloads".
    if d.aliases.iter().any(|a| names_alias(&q, &a.to_lowercase())) {
        return 35;
    }
    if d.tags.iter().any(|t| t.to_lowercase() == q) {
        return 30;
    }
    let words: Vec<&str> = q.split_whitespace().collect();
    if d.id.split(['.', '-', '_']).any(|part| words.contains(&part)) || d.id.contains(&q) {
        return 20;
    }
    if d.aliases.iter().any(|a| a.to_lowercase().contains(&q)) {
        return 15;
    }
    let text = format!("{} {}", d.summary, d.description).to_lowercase();
    if words.iter().all(|w| text.contains(w)) {
        return 10;
    }
    0
}

/// Whether `text` names `alias`: as whole words for an alias in Latin
/// letters (so "df" is not found in "pdf"), and anywhere for one in a
/// script written without spaces (Chinese, Japanese), which no word
/// split would find. Aliases of one character are too loose to count.
fn names_alias(text: &str, alias: &str) -> bool {
    if alias.chars().count() < 2 {
        return false;
    }
    if !alias.chars().any(is_unspaced_script) {
        let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        let wanted: Vec<&str> = alias.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        return !wanted.is_empty() && words.windows(wanted.len()).any(|w| w == wanted.as_slice());
    }
    text.contains(alias)
}

/// Whether `c` is of a script written without spaces between words: CJK
/// ideographs, kana, and the fullwidth forms used beside them.
fn is_unspaced_script(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

/// One search's answer.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSearch {
    pub name: String,
    pub summary: String,
}

/// What the next request enables, and why the rest are left out.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Selection {
    pub enabled: Vec<String>,
    /// `(tool, reason)` for candidates not enabled.
    pub left_out: Vec<(String, String)>,
}

/// A run's discovery state for the current user request.
pub struct Discovery {
    /// What the run may use at all: its mode and allowlist applied.
    catalog: Vec<Descriptor>,
    candidates: VecDeque<String>,
}

impl Discovery {
    pub fn new(catalog: Vec<Descriptor>) -> Discovery {
        Discovery { catalog, candidates: VecDeque::new() }
    }

    /// The first request's tools: the `max_tools` best for the user's words
    /// (the catalog's order breaks ties).
    pub fn initial(&self, request: &str, max_tools: usize) -> Vec<String> {
        let mut ranked: Vec<(u32, usize, &Descriptor)> = self
            .catalog
            .iter()
            .enumerate()
            .map(|(i, d)| {
                (request.split_whitespace().map(|w| score(d, w)).max().unwrap_or(0).max(score(d, request)), i, d)
            })
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked.into_iter().take(max_tools).map(|(_, _, d)| d.id.clone()).collect()
    }

    /// `search_tools`: ranked matches, remembered as candidates.
    pub fn search(&mut self, search: &str, limit: usize) -> Vec<ToolSearch> {
        let mut ranked: Vec<(u32, &Descriptor)> =
            self.catalog.iter().map(|d| (score(d, search), d)).filter(|(s, _)| *s > 0).collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
        let found: Vec<ToolSearch> = ranked
            .into_iter()
            .take(limit.clamp(1, MAX_RESULTS))
            .map(|(_, d)| ToolSearch { name: d.id.clone(), summary: d.summary.clone() })
            .collect();
        let names: Vec<String> = found.iter().map(|f| f.name.clone()).collect();
        self.enable(&names);
        found
    }

    /// Makes `names` the newest candidates, first name first, as a search
    /// that found them would (a skill read enables its tools this way);
    /// a name outside the catalog is not made one.
    pub fn enable(&mut self, names: &[String]) {
        for name in names.iter().rev() {
            if !self.catalog.iter().any(|d| &d.id == name) {
                continue;
            }
            self.candidates.retain(|c| c != name);
            self.candidates.push_front(name.clone());
        }
        self.candidates.truncate(WINDOW);
    }

    /// The candidates the next request enables, most recent first, within
    /// the budgets; `used_tokens` is what the request takes without them.
    pub fn select(&self, context_window: usize, used_tokens: usize) -> Selection {
        let budget = MAX_DISCOVERY_TOKENS.min(context_window / 10);
        let headroom_left = (context_window * 85 / 100).saturating_sub(used_tokens);
        let mut spent = 0;
        let mut selection = Selection::default();
        for name in &self.candidates {
            let Some(d) = self.catalog.iter().find(|d| &d.id == name) else { continue };
            let cost = tokens_of(d);
            if spent + cost > budget {
                selection.left_out.push((
                    name.clone(),
                    format!("its schema (~{cost} tokens) does not fit the {budget}-token discovery budget"),
                ));
            } else if spent + cost > headroom_left {
                selection
                    .left_out
                    .push((name.clone(), "the request would leave less than 15% of the context window free".into()));
            } else {
                spent += cost;
                selection.enabled.push(name.clone());
            }
        }
        selection
    }

    /// A new user request starts discovery afresh.
    pub fn reset(&mut self) {
        self.candidates.clear();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runtime::{EffectClass, Replay};

    fn tool(id: &str, aliases: &[&str], tags: &[&str], description: &str, schema_chars: usize) -> Descriptor {
        Descriptor {
            id: id.into(),
            version: 1,
            label: EffectClass::Read,
            summary: format!("{id} summary"),
            description: description.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            input_schema: json!({"type": "object", "description": "x".repeat(schema_chars)}),
            output_schema: json!({}),
            replay: Replay::Safe,
            services: Vec::new(),
        }
    }

    fn catalog() -> Vec<Descriptor> {
        vec![
            tool("release.search", &["find torrents"], &["indexer"], "Searches Torznab indexers for releases", 100),
            tool("organize.plan", &["整理"], &["library"], "Plans where a finished download's files go", 100),
            tool("catalog.lookup", &["tmdb"], &["metadata"], "Looks titles up on TMDB", 100),
            tool("download.status", &[], &["qbittorrent"], "Reads torrent progress from qBittorrent", 100),
        ]
    }

    fn names(found: &[ToolSearch]) -> Vec<&str> {
        found.iter().map(|f| f.name.as_str()).collect()
    }

    #[test]
    fn the_exact_name_beats_an_alias_beats_a_tag_beats_a_word_of_the_name_beats_the_description() {
        let mut catalog = catalog();
        // Each of these matches "library" in a different way.
        catalog.push(tool("library", &[], &[], "", 10));
        catalog.push(tool("inventory.query", &["library"], &[], "", 10));
        catalog.push(tool("library.want", &[], &[], "", 10));
        catalog.push(tool("task.inspect", &[], &[], "Lists what the library's tasks did", 10));
        let mut discovery = Discovery::new(catalog);
        let found = discovery.search("library", 8);
        assert_eq!(
            names(&found),
            ["library", "inventory.query", "organize.plan", "library.want", "task.inspect"],
            "exact id, alias, tag, a word of the id, the description"
        );
        assert!(discovery.search("nothing matches this", 8).is_empty());
        assert!(discovery.search("   ", 8).is_empty(), "an empty search finds nothing");
    }

    #[test]
    fn aliases_in_any_language_and_results_are_capped() {
        let mut discovery = Discovery::new(catalog());
        assert_eq!(names(&discovery.search("整理", 8)), ["organize.plan"]);
        let mut many: Vec<Descriptor> =
            (0..20).map(|i| tool(&format!("probe.p{i}"), &[], &["probe"], "", 10)).collect();
        many.extend(catalog());
        let mut discovery = Discovery::new(many);
        assert_eq!(discovery.search("probe", 100).len(), MAX_RESULTS);
        assert_eq!(discovery.search("probe", 0).len(), 1, "a limit below one still finds one");
    }

    #[test]
    fn an_alias_inside_unsegmented_text_or_a_sentence_is_found() {
        let mut catalog = catalog();
        catalog.push(tool("system.command", &["df", "run command", "运行命令"], &[], "", 10));
        catalog.push(tool("download.status", &["check downloads", "下载状态"], &[], "", 10));
        let discovery = Discovery::new(catalog);
        assert_eq!(discovery.initial("帮我整理下载", 1), ["organize.plan"], "整理 inside a sentence");
        assert_eq!(discovery.initial("帮我看看下载状态", 1), ["download.status"]);
        assert_eq!(discovery.initial("请运行命令看磁盘", 1), ["system.command"]);
        assert_eq!(discovery.initial("please check downloads now", 1), ["download.status"], "a phrase");
        assert_eq!(discovery.initial("how much space? run df", 1), ["system.command"], "a word");
        assert_ne!(discovery.initial("convert this pdf", 1), ["system.command"], "not inside another word");
        let mut searching = Discovery::new(discovery.catalog.clone());
        assert_eq!(names(&searching.search("我想整理一下", 8)), ["organize.plan"]);
    }

    #[test]
    fn the_first_request_gets_the_tools_its_words_name() {
        let discovery = Discovery::new(catalog());
        assert_eq!(discovery.initial("look up Dune on tmdb", 1), ["catalog.lookup"]);
        assert_eq!(discovery.initial("is my download done? check qbittorrent", 1), ["download.status"]);
        assert_eq!(discovery.initial("hello", 2), ["release.search", "organize.plan"], "ties keep the catalog's order");
    }

    #[test]
    fn candidates_are_enabled_most_recent_first_within_both_budgets() {
        let mut catalog = catalog();
        catalog.push(tool("huge.tool", &[], &["big"], "", 40_000));
        let mut discovery = Discovery::new(catalog);
        discovery.search("metadata", 8);
        discovery.search("qbittorrent", 8);
        discovery.search("big", 8);
        let selection = discovery.select(200_000, 1_000);
        assert_eq!(selection.enabled, ["download.status", "catalog.lookup"], "most recent first");
        assert_eq!(selection.left_out.len(), 1);
        assert!(selection.left_out[0].1.contains("discovery budget"), "{:?}", selection.left_out);

        // A request that already fills the window leaves no headroom.
        let crowded = discovery.select(200_000, 199_000);
        assert!(crowded.enabled.is_empty());
        assert!(crowded.left_out.iter().any(|(_, why)| why.contains("15%")), "{:?}", crowded.left_out);

        // Enabled by name (a skill read), within the catalog only.
        discovery.enable(&["organize.plan".into(), "download.submit".into()]);
        assert_eq!(discovery.select(200_000, 1_000).enabled[0], "organize.plan");
        assert!(!discovery.select(200_000, 1_000).enabled.contains(&"download.submit".to_string()));

        // A new user request starts afresh.
        discovery.reset();
        assert_eq!(discovery.select(200_000, 0), Selection::default());
    }

    #[test]
    fn the_window_keeps_the_most_recent_candidates() {
        let many: Vec<Descriptor> = (0..40).map(|i| tool(&format!("probe.p{i:02}"), &[], &[], "", 10)).collect();
        let mut discovery = Discovery::new(many);
        for i in 0..40 {
            discovery.search(&format!("probe.p{i:02}"), 1);
        }
        let enabled = discovery.select(1_000_000, 0).enabled;
        assert_eq!(enabled.len(), WINDOW);
        assert_eq!(enabled[0], "probe.p39");
        assert!(!enabled.contains(&"probe.p00".to_string()), "the oldest fell out of the window");
    }
}
