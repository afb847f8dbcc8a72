//! Large tool results and `read_tool_result(result_id, offset, limit)`. A
//! result longer than the preview is shown as its first characters with a
//! `result_id` and `next_offset`; the model pages through the rest by
//! Unicode characters without running the tool again. Results are kept in
//! memory only: at most 1 MiB each, 8 and 4 MiB per run (the oldest make
//! room), for 15 minutes. A result is readable only by the identity that
//! made it ([`Holder`]: the run's agent, or its subagent) holding at least
//! the class it held then, so a subagent cannot read its parent's results,
//! and none at all once the run lets go of its privileges (it ended or was
//! cancelled; a run reopened later starts with none). A result too large
//! to keep asks the model to narrow the query instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::runtime::EffectClass;

/// Characters shown before a result is paged.
pub const PREVIEW_CHARS: usize = 4_000;
/// Largest result kept, in bytes.
pub const MAX_RESULT_BYTES: usize = 1 << 20;
/// Most results kept per run.
pub const MAX_RESULTS_PER_RUN: usize = 8;
/// Most bytes kept per run.
pub const MAX_RUN_BYTES: usize = 4 << 20;
/// How long a result stays readable.
pub(crate) const RESULT_TTL: Duration = Duration::from_secs(15 * 60);

/// How a result reaches the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shown {
    /// Short enough to show whole.
    Whole { text: String },
    /// The first characters; the rest through `read_tool_result`.
    Preview { text: String, result_id: String, next_offset: usize, total_chars: usize },
    /// Too large to keep: nothing is stored.
    TooLarge { message: String },
}

/// One page of a kept result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResultPage {
    pub text: String,
    /// Where the next page starts; `None` at the end.
    pub next_offset: Option<usize>,
    pub total_chars: usize,
}

/// Who made a kept result, and so who may read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// `agent:<run>` or `subagent:<run>`.
    pub principal: String,
    /// The highest class the maker's calls could use.
    pub class: EffectClass,
}

impl Holder {
    fn may_read(&self, kept: &Holder) -> bool {
        self.principal == kept.principal && self.class >= kept.class
    }
}

struct Kept {
    id: String,
    holder: Holder,
    text: Arc<str>,
    chars: usize,
    at: Instant,
}

#[derive(Default)]
struct RunResults {
    kept: Vec<Kept>,
}

/// The results of every run in this process.
pub struct ResultStore {
    ttl: Duration,
    runs: Mutex<HashMap<String, RunResults>>,
}

impl Default for ResultStore {
    fn default() -> Self {
        ResultStore::with_ttl(RESULT_TTL)
    }
}

fn chars_slice(text: &str, offset: usize, limit: usize) -> String {
    text.chars().skip(offset).take(limit).collect()
}

impl ResultStore {
    pub fn with_ttl(ttl: Duration) -> ResultStore {
        ResultStore { ttl, runs: Mutex::new(HashMap::new()) }
    }

    /// Decides how `text`, a result of a call `holder` made in `run`, is
    /// shown, keeping it when it must be paged.
    pub fn keep(&self, run: &str, holder: &Holder, text: &str) -> Shown {
        let chars = text.chars().count();
        if chars <= PREVIEW_CHARS {
            return Shown::Whole { text: text.to_string() };
        }
        if text.len() > MAX_RESULT_BYTES {
            return Shown::TooLarge {
                message: format!(
                    "the result is {} bytes, more than the {} that can be kept; narrow the query (filters, a limit) and call again",
                    text.len(),
                    MAX_RESULT_BYTES
                ),
            };
        }
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let results = runs.entry(run.to_string()).or_default();
        let now = Instant::now();
        results.kept.retain(|k| now.duration_since(k.at) < self.ttl);
        while results.kept.len() >= MAX_RESULTS_PER_RUN
            || results.kept.iter().map(|k| k.text.len()).sum::<usize>() + text.len() > MAX_RUN_BYTES
        {
            results.kept.remove(0);
        }
        let id = format!("res_{}", crate::store::new_id());
        results.kept.push(Kept { id: id.clone(), holder: holder.clone(), text: text.into(), chars, at: now });
        Shown::Preview {
            text: chars_slice(text, 0, PREVIEW_CHARS),
            result_id: id,
            next_offset: PREVIEW_CHARS,
            total_chars: chars,
        }
    }

    /// A page of a kept result, for the identity in `run` that made it.
    pub fn read(
        &self,
        run: &str,
        holder: &Holder,
        result_id: &str,
        offset: usize,
        limit: usize,
    ) -> Result<ResultPage, String> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let unknown = || {
            format!(
                "no result {result_id} is readable here: a result is read only by whoever made it, while the run \
                 goes on, and expires after 15 minutes"
            )
        };
        let results = runs.get(run).ok_or_else(unknown)?;
        let kept = results
            .kept
            .iter()
            .find(|k| k.id == result_id && holder.may_read(&k.holder) && Instant::now().duration_since(k.at) < self.ttl)
            .ok_or_else(unknown)?;
        if offset > kept.chars {
            return Err(format!("offset {offset} is past the end ({} characters)", kept.chars));
        }
        let limit = limit.clamp(1, PREVIEW_CHARS * 4);
        let text = chars_slice(&kept.text, offset, limit);
        let end = offset + text.chars().count();
        Ok(ResultPage { text, next_offset: (end < kept.chars).then_some(end), total_chars: kept.chars })
    }

    /// The run's privileges dropped (it ended, or was cancelled): nothing
    /// it kept can be read again. A run reopened later keeps anew.
    pub fn close_run(&self, run: &str) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.remove(run);
    }

    /// Bytes kept for `run` now.
    pub fn kept_bytes(&self, run: &str) -> usize {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.get(run).map_or(0, |r| r.kept.iter().map(|k| k.text.len()).sum())
    }
}
