//! How a run ends and what stays of it: the report written when it ends
//! (and, while it waits, the report of where it stands now), the snapshot
//! of what it let go of, the decision a spent budget opens, and deleting a
//! run — its records at once, its session log after them.

use serde_json::{Value, json};

use super::{AgentRuntime, EngineError, budget, investigation, report, snapshot, verdict};
use crate::agent::runs::{BlockReason, Deleted, Run, RunStatus};

/// Session logs one pass of [`AgentRuntime::finish_deletions`] checks at
/// most; the next pass takes the rest.
const LOGS_CHECKED_AT_ONCE: usize = 10_000;

impl AgentRuntime {
    /// Deletes an ended run: its messages, events and settled receipts at
    /// once, then its session log and any results it kept. A run with
    /// writes whose outcome is open is kept, marked deleted, until they are
    /// settled.
    pub async fn delete(&self, run_id: &str) -> Result<Deleted, EngineError> {
        let deleted = self.runs.delete(run_id).await?;
        self.results.close_run(run_id);
        self.sessions.remove(run_id).await?;
        Ok(deleted)
    }

    /// Finishes deletions: removes deleted runs whose open writes have
    /// since settled, and session logs whose run is gone. Returns how many
    /// runs went.
    pub(crate) async fn finish_deletions(&self) -> Result<usize, EngineError> {
        let gone = self.runs.purge_deleted().await?;
        for id in self.sessions.runs_to_check(LOGS_CHECKED_AT_ONCE).await? {
            if matches!(self.runs.get(&id).await, Err(crate::agent::runs::RunError::NotFound(_))) {
                self.results.close_run(&id);
                if let Err(e) = self.sessions.remove(&id).await {
                    tracing::warn!(run = %id, error = %e, "cannot remove the session log of a deleted run");
                }
            }
        }
        Ok(gone.len())
    }

    /// Where a run that has not ended stands now: the AgentGoalReport's
    /// body built from the business tables as they are, marked `current`.
    pub async fn current_report(&self, run: &Run) -> Result<Value, EngineError> {
        let touched = report::touched(&self.svc.domain, &self.svc.db, &run.id).await?;
        let (calls, activity) = self.tool_calls(&run.id).await?;
        let unknown = report::unknown_writes(&self.svc.db, &run.id).await?;
        let ending = report::Ending {
            status: run.status,
            reason: run.error.as_deref(),
            touched: &touched,
            unknown: &unknown,
            tool_calls: &calls,
            activity: &activity,
            final_text: run.final_text.as_deref().unwrap_or_default(),
        };
        let mut body = report::body(run, &ending);
        body["current"] = Value::Bool(true);
        body["asOf"] = Value::from(crate::store::now_ms());
        Ok(body)
    }

    /// Ends the run once for what another attempt cannot change, blocked.
    pub(super) async fn end_blocked(&self, run: &Run, block: BlockReason, reason: &str) -> Result<Value, EngineError> {
        self.runs.block(&run.id, block).await?;
        let text = run.final_text.clone().unwrap_or_default();
        match block {
            BlockReason::DayBudget => self.end_over_budget(run, reason, &text).await,
            BlockReason::Config => self.finish(&run.id, RunStatus::Failed, Some(reason), &text).await,
        }
    }

    /// Ends a run whose task has no attempts left, as `failed`.
    pub async fn give_up(&self, run_id: &str, error: &str) {
        let reason = format!("the run could not go on: {error}");
        if let Err(e) = self.finish(run_id, RunStatus::Failed, Some(&reason), "").await {
            tracing::error!(run = %run_id, error = %e, "could not end a run that failed");
            let _ = self.runs.set_status(run_id, RunStatus::Failed, Some(&reason)).await;
        }
    }

    /// Ends the run with `status`, writing the report.
    pub(super) async fn finish(
        &self,
        run_id: &str,
        status: RunStatus,
        detail: Option<&str>,
        final_text: &str,
    ) -> Result<Value, EngineError> {
        let touched = report::touched(&self.svc.domain, &self.svc.db, run_id).await?;
        self.finish_with(run_id, status, detail, final_text, &touched).await
    }

    /// Ends the run with `status`, reporting what it touched as read just now.
    pub(super) async fn finish_with(
        &self,
        run_id: &str,
        status: RunStatus,
        detail: Option<&str>,
        final_text: &str,
        touched: &[report::Touched],
    ) -> Result<Value, EngineError> {
        let run = self.runs.get(run_id).await?;
        let (calls, activity) = self.tool_calls(run_id).await?;
        let unknown = report::unknown_writes(&self.svc.db, run_id).await?;
        let unsure;
        // An abort that was accepted wins over any other end.
        let (status, detail) = if let Some(reason) = run.abort_reason.as_deref() {
            (RunStatus::Cancelled, Some(reason))
        } else if status == RunStatus::Succeeded && !unknown.is_empty() {
            unsure = format!("the outcome of {} write(s) is unknown; verify them before trying again", unknown.len());
            (RunStatus::Failed, Some(unsure.as_str()))
        } else {
            (status, detail)
        };
        if matches!(status, RunStatus::Cancelled | RunStatus::Failed | RunStatus::BudgetExceeded) {
            snapshot::best_effort(self, run_id, detail.unwrap_or(status.as_str())).await;
        }
        // Nothing the run started outlives it.
        let stopped = self.svc.caps.runtime().stop_commands_of(&crate::runtime::run_owner(run_id));
        if stopped > 0 {
            tracing::info!(run = %run_id, stopped, "stopped the commands the run left running");
        }
        let ending = report::Ending {
            status,
            reason: detail,
            touched,
            unknown: &unknown,
            tool_calls: &calls,
            activity: &activity,
            final_text,
        };
        let report = report::write(&self.svc.domain, &run, &ending).await?;
        self.runs.set_outcome(run_id, Some(&report.id), final_text).await?;
        self.runs.set_status(run_id, status, detail).await?;
        self.results.close_run(run_id);
        investigation::ended(&self.svc.domain, &self.tasks, &run, status, final_text, &calls).await;
        Ok(json!({"runId": run_id, "status": status.as_str(), "reportId": report.id}))
    }

    pub(super) async fn end_over_budget(
        &self,
        run: &Run,
        reason: &str,
        final_text: &str,
    ) -> Result<Value, EngineError> {
        let evidence = json!({"runId": run.id, "reason": reason, "toolCalls": run.tool_calls, "tokens": run.tokens, "costUsd": run.cost_usd});
        self.svc
            .domain
            .open_decision(
                "agent_budget",
                Some(&run.id),
                &budget::decision_options(),
                &evidence,
                &format!("agent_budget:{}", run.id),
            )
            .await?;
        self.finish(&run.id, RunStatus::BudgetExceeded, Some(reason), final_text).await
    }

    /// The run's tool calls: a count by status, and the agent's own
    /// capability calls as they ended.
    pub(super) async fn tool_calls(&self, run_id: &str) -> Result<(Value, verdict::Activity), EngineError> {
        let mut counts = serde_json::Map::new();
        let all = self.runs.events_of_kind(run_id, "agent.tool_call").await?;
        for e in &all {
            if let Some(status) = e.payload.get("status").and_then(Value::as_str) {
                let n = counts.get(status).and_then(Value::as_i64).unwrap_or(0);
                counts.insert(status.to_string(), Value::from(n + 1));
            }
        }
        let rows = crate::ledger::for_run(&self.svc.db, run_id).await.map_err(crate::ledger::LedgerError::from)?;
        let ledger = rows.into_iter().map(|r| (r.id, r.status)).collect();
        let activity = verdict::Activity::from_events(&all, &self.svc.caps.runtime().snapshot(), &ledger);
        Ok((Value::Object(counts), activity))
    }
}
