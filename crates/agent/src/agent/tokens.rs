//! Counting tokens. Where the provider's tokenizer is public (OpenAI's
//! `o200k_base`, for `openai-compatible`) the count is exact; elsewhere
//! (Anthropic, the scripted model) it is an estimate of characters per
//! token, corrected from what the provider reports it used: each answer's
//! `input_tokens` against the estimate for that request moves the ratio.
//! A run counts its requests through [`TokenCount`], so a message is
//! serialised and measured once, not again at every step.

use std::sync::Mutex;

use tiktoken_rs::CoreBPE;

use super::providers::{Message, ModelRequest};

/// Characters per token before any correction: about right for English
/// prose and JSON.
const START_CHARS_PER_TOKEN: f64 = 3.6;

enum Counting {
    Exact(&'static CoreBPE),
    Estimate(Mutex<f64>),
}

/// Counts tokens the way one provider would.
pub struct TokenCounter {
    kind: Counting,
}

impl TokenCounter {
    /// The counter for a `model.provider` value.
    pub fn for_provider(provider: &str) -> TokenCounter {
        match provider {
            "openai-compatible" => TokenCounter { kind: Counting::Exact(tiktoken_rs::o200k_base_singleton()) },
            _ => TokenCounter::estimate(),
        }
    }

    /// A calibrated estimate.
    pub fn estimate() -> TokenCounter {
        TokenCounter { kind: Counting::Estimate(Mutex::new(START_CHARS_PER_TOKEN)) }
    }

    pub fn is_exact(&self) -> bool {
        matches!(self.kind, Counting::Exact(_))
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        self.tokens_in(self.units(text))
    }

    /// What `text` measures before it becomes tokens: tokens for an exact
    /// counter, characters for an estimate (whose ratio moves, so the
    /// characters are what can be kept).
    fn units(&self, text: &str) -> usize {
        match &self.kind {
            Counting::Exact(bpe) => bpe.encode_ordinary(text).len(),
            Counting::Estimate(_) => text.chars().count(),
        }
    }

    fn tokens_in(&self, units: usize) -> usize {
        match &self.kind {
            Counting::Exact(_) => units,
            Counting::Estimate(ratio) => {
                let ratio = *ratio.lock().unwrap_or_else(|e| e.into_inner());
                (units as f64 / ratio).ceil() as usize
            }
        }
    }

    /// Tokens a whole request takes: the system prompt, each message and
    /// the tool schemas.
    pub(crate) fn count_request(&self, request: &ModelRequest) -> usize {
        self.count_request_measured(request, &[], &mut TokenCount::default())
    }

    /// [`TokenCounter::count_request`] for a run's next request, measuring
    /// only what `measured` does not hold yet: messages it has not seen,
    /// and the tools when `tools_key` (what identifies the offered tools)
    /// changed. An empty key measures the tools afresh.
    pub(crate) fn count_request_measured(
        &self,
        request: &ModelRequest,
        tools_key: &[String],
        measured: &mut TokenCount,
    ) -> usize {
        let messages = &request.messages;
        // All but the last message are kept: the last may still grow (a
        // message taken after tool results joins them).
        let settled = messages.len().saturating_sub(1);
        measured.messages.truncate(settled);
        while measured.messages.len() < settled {
            let units = self.message_units(&messages[measured.messages.len()]);
            measured.messages.push(units);
        }
        let last = messages.last().map(|m| self.message_units(m)).unwrap_or(0);
        let tools = match &measured.tools {
            Some((key, units)) if !tools_key.is_empty() && key == tools_key => *units,
            _ => {
                let units = self.units(&serde_json::to_string(&*request.tools).unwrap_or_default());
                measured.tools = Some((tools_key.to_vec(), units));
                units
            }
        };
        let units = self.units(&request.system) + measured.messages.iter().sum::<usize>() + last + tools;
        self.tokens_in(units)
    }

    fn message_units(&self, message: &Message) -> usize {
        self.units(&serde_json::to_string(message).unwrap_or_default())
    }

    /// Moves the estimate towards what the provider reported for a request
    /// this counter put at `estimated` tokens. Exact counters ignore it.
    pub fn calibrate(&self, estimated: usize, reported: u64) {
        if let Counting::Estimate(ratio) = &self.kind
            && estimated > 0
            && reported > 0
        {
            let mut ratio = ratio.lock().unwrap_or_else(|e| e.into_inner());
            let observed = *ratio * estimated as f64 / reported as f64;
            // Halfway each time: one odd answer does not swing it.
            *ratio = ((*ratio + observed) / 2.0).clamp(1.0, 8.0);
        }
    }

    /// The current characters-per-token ratio of an estimate.
    pub fn chars_per_token(&self) -> Option<f64> {
        match &self.kind {
            Counting::Exact(_) => None,
            Counting::Estimate(ratio) => Some(*ratio.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// What a run's requests measured so far, for
/// [`TokenCounter::count_request_measured`]. Its messages are those of one
/// history: after compaction replaces the history, [`Measured::forget_messages`].
#[derive(Debug, Default)]
pub(crate) struct TokenCount {
    /// Units of each message but the last.
    messages: Vec<usize>,
    /// The key of the tools last measured, and their units.
    tools: Option<(Vec<String>, usize)>,
}

impl TokenCount {
    pub(crate) fn forget_messages(&mut self) {
        self.messages.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::providers::{Block, ToolSpec};

    fn request(messages: Vec<Message>, tools: &[&str]) -> ModelRequest {
        let tools: Vec<ToolSpec> = tools
            .iter()
            .map(|name| ToolSpec {
                name: name.to_string(),
                description: format!("{name} does things"),
                input_schema: serde_json::json!({"type": "object"}),
            })
            .collect();
        ModelRequest { system: "system".into(), messages, tools: tools.into(), max_tokens: 100 }
    }

    fn result(n: usize) -> Message {
        Message {
            role: crate::agent::providers::Role::User,
            content: vec![Block::ToolResult { tool_use_id: format!("c{n}"), content: "x".repeat(n), is_error: false }],
        }
    }

    /// A measured count is always what counting the whole request afresh
    /// gives: as the history grows, when its last message grows, when
    /// compaction replaces it, and when the tools change.
    #[test]
    fn a_measured_count_matches_a_fresh_one() {
        for counter in [TokenCounter::for_provider("scripted"), TokenCounter::for_provider("openai-compatible")] {
            let mut measured = TokenCount::default();
            let mut messages = vec![Message::user_text("fetch Dune")];
            let key = vec!["a@1".to_string()];
            for n in 1..6 {
                messages.push(result(n * 50));
                let req = request(messages.clone(), &["a"]);
                assert_eq!(counter.count_request_measured(&req, &key, &mut measured), counter.count_request(&req));
            }
            // A message taken after the results joins the last message.
            messages.last_mut().unwrap().content.push(Block::Text { text: "and Arrival too".repeat(20) });
            let req = request(messages.clone(), &["a"]);
            assert_eq!(counter.count_request_measured(&req, &key, &mut measured), counter.count_request(&req));
            // Compaction replaces the history.
            messages = vec![Message::user_text("a digest of what happened".repeat(30)), result(7)];
            measured.forget_messages();
            let req = request(messages.clone(), &["a"]);
            assert_eq!(counter.count_request_measured(&req, &key, &mut measured), counter.count_request(&req));
            // Other tools, another key.
            let req = request(messages.clone(), &["a", "b"]);
            let other = vec!["a@1".to_string(), "b@1".to_string()];
            assert_eq!(counter.count_request_measured(&req, &other, &mut measured), counter.count_request(&req));
        }
    }
}
