//! Counting tokens. Where the provider's tokenizer is public (OpenAI's
//! `o200k_base`, for `openai-compatible`) the count is exact; elsewhere
//! (Anthropic, the scripted model) it is an estimate of characters per
//! token, corrected from what the provider reports it used: each answer's
//! `input_tokens` against the estimate for that request moves the ratio.

use std::sync::Mutex;

use tiktoken_rs::CoreBPE;

use super::providers::ModelRequest;

/// Characters per token before any correction: about right for English
/// prose and JSON.
const START_CHARS_PER_TOKEN: f64 = 3.6;

enum Kind {
    Exact(&'static CoreBPE),
    Estimate(Mutex<f64>),
}

/// Counts tokens the way one provider would.
pub struct TokenCounter {
    kind: Kind,
}

impl TokenCounter {
    /// The counter for a `model.provider` value.
    pub fn for_provider(provider: &str) -> TokenCounter {
        match provider {
            "openai-compatible" => TokenCounter { kind: Kind::Exact(tiktoken_rs::o200k_base_singleton()) },
            _ => TokenCounter::estimate(),
        }
    }

    /// A calibrated estimate.
    pub fn estimate() -> TokenCounter {
        TokenCounter { kind: Kind::Estimate(Mutex::new(START_CHARS_PER_TOKEN)) }
    }

    pub fn is_exact(&self) -> bool {
        matches!(self.kind, Kind::Exact(_))
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        match &self.kind {
            Kind::Exact(bpe) => bpe.encode_ordinary(text).len(),
            Kind::Estimate(ratio) => {
                let ratio = *ratio.lock().unwrap_or_else(|e| e.into_inner());
                (text.chars().count() as f64 / ratio).ceil() as usize
            }
        }
    }

    /// Tokens a whole request takes: the system prompt, the messages and
    /// the tool schemas.
    pub fn count_request(&self, request: &ModelRequest) -> usize {
        let messages = serde_json::to_string(&request.messages).unwrap_or_default();
        let tools = serde_json::to_string(&request.tools).unwrap_or_default();
        self.count(&request.system) + self.count(&messages) + self.count(&tools)
    }

    /// Moves the estimate towards what the provider reported for a request
    /// this counter put at `estimated` tokens. Exact counters ignore it.
    pub fn calibrate(&self, estimated: usize, reported: u64) {
        if let Kind::Estimate(ratio) = &self.kind
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
            Kind::Exact(_) => None,
            Kind::Estimate(ratio) => Some(*ratio.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}
