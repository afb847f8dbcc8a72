//! Run and day budgets from settings. A run is checked before every model
//! request and tool call; the day before a run starts. Exceeding one ends
//! the run `budget_exceeded` and opens a decision `agent_budget:<runId>`.

use std::time::Duration;

use serde_json::Value;

use super::EngineError;
use crate::agent::runs::{Investigation, Run, Runs};
use crate::settings::SettingsSnapshot;
use crate::store::now_ms;

/// The per-run limits and prices in force when the run started a step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunLimits {
    pub max_tool_calls: i64,
    pub max_duration: Duration,
    pub max_tokens: i64,
    pub max_cost_usd: f64,
    pub price_input_per_mtok: f64,
    pub price_output_per_mtok: f64,
    pub max_tools: usize,
    pub context_budget: usize,
    pub compaction: bool,
    pub compaction_ratio: f64,
    pub goal_poll: Duration,
    pub goal_wait: Duration,
}

fn number(settings: &SettingsSnapshot, key: &str) -> Result<f64, EngineError> {
    let value = settings.get(key).map_err(|e| EngineError::setting(key, e))?;
    value.as_f64().ok_or_else(|| EngineError::setting(key, "is not a number"))
}

impl RunLimits {
    /// These limits, no wider than an investigation's own bounds.
    pub fn within(mut self, bounds: Option<&Investigation>) -> RunLimits {
        if let Some(b) = bounds {
            self.max_tool_calls = self.max_tool_calls.min(b.max_tool_calls.max(0));
            self.max_duration = self.max_duration.min(Duration::from_secs(b.max_duration_sec.max(1) as u64));
        }
        self
    }

    pub fn load(settings: &SettingsSnapshot) -> Result<RunLimits, EngineError> {
        let n = |key: &'static str| number(settings, key);
        let flag = settings
            .get("model.compaction.enabled")
            .map_err(|e| EngineError::setting("model.compaction.enabled", e))?;
        Ok(RunLimits {
            max_tool_calls: n("agent.max_tool_calls")? as i64,
            max_duration: Duration::from_secs(n("agent.max_duration_sec")? as u64),
            max_tokens: n("agent.max_tokens_per_run")? as i64,
            max_cost_usd: n("agent.max_cost_usd_per_run")?,
            price_input_per_mtok: n("model.price_input_usd_per_mtok")?,
            price_output_per_mtok: n("model.price_output_usd_per_mtok")?,
            max_tools: n("agent.max_tools")? as usize,
            context_budget: n("model.context_budget")? as usize,
            compaction: flag.as_bool().unwrap_or(true),
            compaction_ratio: n("model.compaction.threshold_ratio")?,
            goal_poll: Duration::from_secs(n("agent.goal_poll_sec")? as u64),
            goal_wait: Duration::from_secs(n("agent.goal_wait_hours")? as u64 * 3600),
        })
    }

    /// What a model answer cost.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.price_input_per_mtok + output_tokens as f64 * self.price_output_per_mtok) / 1e6
    }

    /// Which run budget is spent, if any, before `extra_calls` more tool calls.
    pub(crate) fn exceeded(&self, run: &Run, extra_calls: i64) -> Option<String> {
        if run.tool_calls + extra_calls > self.max_tool_calls {
            return Some(format!("the run would make more than {} tool calls", self.max_tool_calls));
        }
        if run.tokens > self.max_tokens {
            return Some(format!("the run used {} tokens, more than {}", run.tokens, self.max_tokens));
        }
        if run.cost_usd > self.max_cost_usd {
            return Some(format!("the run cost ${:.4}, more than ${:.4}", run.cost_usd, self.max_cost_usd));
        }
        // Counted from the run's latest start: a run a message woke up a
        // day later has its own time again.
        let started = run.resumed_at.or(run.started_at).unwrap_or_else(now_ms);
        if now_ms() - started > self.max_duration.as_millis() as i64 {
            return Some(format!("the run took longer than {} s", self.max_duration.as_secs()));
        }
        None
    }
}

/// Whether the day's budgets allow a run to start (the day is UTC); the
/// count of runs applies only to a `first_start`, the day's cost to every one.
pub(crate) async fn day_allows(
    settings: &SettingsSnapshot,
    runs: &Runs,
    first_start: bool,
) -> Result<Option<String>, EngineError> {
    let max_runs = number(settings, "budget.max_runs_per_day")? as i64;
    let max_cost = number(settings, "budget.max_cost_usd_per_day")?;
    let day_start = now_ms() - now_ms().rem_euclid(86_400_000);
    let (started, cost) = runs.started_since(day_start).await?;
    if first_start && started >= max_runs {
        return Ok(Some(format!("{started} runs already started today; the daily limit is {max_runs}")));
    }
    if cost >= max_cost {
        return Ok(Some(format!("runs today cost ${cost:.4}; the daily limit is ${max_cost:.4}")));
    }
    Ok(None)
}

/// The decision a spent budget opens: nothing the host can do by itself —
/// the operator raises the limit in Settings and sends the run a message,
/// or lets it stay ended.
pub fn decision_options() -> Value {
    serde_json::json!([
        {"id": "continue", "label": "I raised the budget; the run will be sent a message to go on", "action": "accept"},
        {"id": "leave", "label": "Leave the run ended", "action": "dismiss"}
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::runs::{RunMode, RunStatus};

    fn limits() -> RunLimits {
        RunLimits {
            max_tool_calls: 10,
            max_duration: Duration::from_secs(60),
            max_tokens: 1_000,
            max_cost_usd: 0.5,
            price_input_per_mtok: 3.0,
            price_output_per_mtok: 15.0,
            max_tools: 0,
            context_budget: 100_000,
            compaction: true,
            compaction_ratio: 0.8,
            goal_poll: Duration::from_secs(30),
            goal_wait: Duration::from_secs(3600),
        }
    }

    fn run(tool_calls: i64, tokens: i64, cost_usd: f64, started_ms_ago: i64) -> Run {
        let now = now_ms();
        Run {
            id: "r1".into(),
            goal: "fetch Dune".into(),
            mode: RunMode::Execute,
            capability_allowlist: None,
            status: RunStatus::Running,
            created_by: "admin:bob".into(),
            task_id: None,
            report_id: None,
            final_text: None,
            error: None,
            abort_reason: None,
            tool_calls,
            tokens,
            cost_usd,
            started_at: Some(now - started_ms_ago),
            resumed_at: None,
            finished_at: None,
            blocked_on: None,
            wake_at: None,
            wait_until: None,
            investigation: None,
            skill: None,
            plan: None,
            deleted_at: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn a_model_answer_costs_its_tokens_at_the_prices_per_million() {
        let cost = limits().cost(1_000_000, 100_000);
        assert!((cost - (3.0 + 1.5)).abs() < 1e-9, "{cost}");
        assert_eq!(limits().cost(0, 0), 0.0);
    }

    #[test]
    fn each_run_budget_says_which_is_spent() {
        let limits = limits();
        assert_eq!(limits.exceeded(&run(9, 999, 0.49, 0), 1), None, "at every limit, nothing is spent");
        let calls = limits.exceeded(&run(9, 0, 0.0, 0), 2).unwrap();
        assert!(calls.contains("more than 10 tool calls"), "{calls}");
        let tokens = limits.exceeded(&run(0, 1_001, 0.0, 0), 0).unwrap();
        assert!(tokens.contains("1001 tokens"), "{tokens}");
        let cost = limits.exceeded(&run(0, 0, 0.51, 0), 0).unwrap();
        assert!(cost.contains("$0.5100"), "{cost}");
        let time = limits.exceeded(&run(0, 0, 0.0, 61_000), 0).unwrap();
        assert!(time.contains("longer than 60 s"), "{time}");
    }

    #[test]
    fn a_run_woken_later_has_its_own_time_again() {
        let mut woken = run(0, 0, 0.0, 86_400_000);
        woken.resumed_at = Some(now_ms());
        assert_eq!(limits().exceeded(&woken, 0), None, "counted from the latest start");
    }
}
