//! What one model answer costs: the token counter calibrated from the
//! usage the provider reports (or an estimate when it reports none), and
//! the tokens and their price, written with the step's other writes.

use super::RunState;
use crate::agent::providers::Completion;
use crate::agent::runs::StepWrites;

impl RunState<'_> {
    /// Adds what one model answer cost to `writes`.
    pub(super) fn charge(&self, completion: &Completion, estimated: usize, writes: &mut StepWrites) {
        if let Some(reported) = completion.usage.input_tokens {
            self.counter.calibrate(estimated, reported);
        }
        let (input_tokens, output_tokens) = (
            completion.usage.input_tokens.unwrap_or(estimated as u64),
            completion.usage.output_tokens.unwrap_or((completion.text.chars().count() / 4) as u64),
        );
        let cost = self.limits.cost(input_tokens, output_tokens);
        writes.tokens += (input_tokens + output_tokens) as i64;
        writes.cost_micro_usd += (cost * 1e6).round() as i64;
    }
}
