//! What one step of a run writes, committed together: the last of the
//! streamed text, the tokens the answer cost, a tool call's end and count
//! (with the audit row of a read it made) with the next call's start. A
//! step whose calls each end within 20 ms is one commit; a longer call's
//! start commits on its own while it runs, and what came before a call
//! that may act commits before it (`engine::turn::calls`). Each goes in
//! the next group commit of the store.

use std::sync::Arc;

use serde_json::Value;

use super::{Run, RunError, Runs, append_events_in};
use crate::audit::{Audit, NewAuditEntry};
use crate::store::now_ms;

/// Writes of a step waiting for their commit.
#[derive(Debug, Clone, Default)]
pub struct StepWrites {
    pub tokens: i64,
    pub cost_micro_usd: i64,
    /// Tool calls ended, counted against the run's budget.
    pub calls_counted: i64,
    /// Run events `(kind, payload)`, appended in order.
    pub events: Vec<(&'static str, Value)>,
    /// Audit rows of the step's reads (`Capabilities::invoke_in_run`).
    pub audit_rows: Vec<NewAuditEntry>,
}

impl StepWrites {
    pub fn is_empty(&self) -> bool {
        self.tokens == 0
            && self.cost_micro_usd == 0
            && self.calls_counted == 0
            && self.events.is_empty()
            && self.audit_rows.is_empty()
    }

    /// `run` as it will be once these writes are committed.
    pub(crate) fn apply_to(&self, run: &mut Run) {
        run.tokens += self.tokens;
        run.cost_usd += self.cost_micro_usd as f64 / 1e6;
        run.tool_calls += self.calls_counted;
    }
}

impl Runs {
    /// Commits `writes` in one transaction and announces their events.
    pub(crate) async fn commit_step(&self, id: &str, writes: StepWrites) -> Result<(), RunError> {
        self.queue_step(id, writes).await.map(|_| ())
    }

    /// [`Runs::commit_step`], queued now: the step may go on (run a read
    /// call, say) while the writes commit, and await the answer after;
    /// what it writes meanwhile commits after these. Answers the run's row
    /// as the commit left it when the writes changed it (spend or calls).
    pub(crate) fn queue_step(
        &self,
        id: &str,
        writes: StepWrites,
    ) -> impl Future<Output = Result<Option<Run>, RunError>> + use<> {
        let (db, events, id, writes) = (self.db.clone(), self.events.clone(), id.to_string(), Arc::new(writes));
        let empty = writes.is_empty();
        let committed = (!empty).then(|| {
            self.db.write(move |tx| {
                let (db, id, writes) = (db.clone(), id.clone(), writes.clone());
                Box::pin(async move {
                    let mut run = None;
                    if writes.tokens != 0 || writes.cost_micro_usd != 0 || writes.calls_counted != 0 {
                        let row = sqlx::query(
                            "UPDATE agent_run SET tokens = tokens + $2, cost_micro_usd = cost_micro_usd + $3, \
                             tool_calls = tool_calls + $4, updated_at = $5 WHERE id = $1 RETURNING *",
                        )
                        .bind(&id)
                        .bind(writes.tokens)
                        .bind(writes.cost_micro_usd)
                        .bind(writes.calls_counted)
                        .bind(now_ms())
                        .fetch_optional(&mut **tx)
                        .await?;
                        run = row.map(|r| Run::from_row(&r)).transpose()?;
                    }
                    Audit::append_all_in(tx, &writes.audit_rows).await?;
                    let events: Vec<(&str, &Value)> = writes.events.iter().map(|(k, p)| (*k, p)).collect();
                    append_events_in(tx, &db, &id, &events).await?;
                    Ok::<_, sqlx::Error>(run)
                })
            })
        });
        async move {
            let Some(committed) = committed else { return Ok(None) };
            let run = committed.await?;
            events.announce();
            Ok(run)
        }
    }
}
