//! What one model answer costs: the token counter calibrated from the
//! usage the provider reports (or an estimate when it reports none), and
//! the run charged its tokens and their price.

use super::RunState;
use crate::agent::engine::EngineError;
use crate::agent::providers::Completion;

impl RunState<'_> {
    /// Charges what one model answer cost.
    pub(super) async fn charge(&self, completion: &Completion, estimated: usize) -> Result<(), EngineError> {
        if let Some(reported) = completion.usage.input_tokens {
            self.counter.calibrate(estimated, reported);
        }
        let (input_tokens, output_tokens) = (
            completion.usage.input_tokens.unwrap_or(estimated as u64),
            completion.usage.output_tokens.unwrap_or((completion.text.chars().count() / 4) as u64),
        );
        let cost = self.limits.cost(input_tokens, output_tokens);
        self.rt.runs.charge_tokens(&self.run_id, (input_tokens + output_tokens) as i64, cost).await?;
        Ok(())
    }
}
