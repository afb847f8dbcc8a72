//! Agent runs as records: the `agent_run` row (goal, mode, allowlist,
//! status, what the run has spent), the user messages sent to it
//! (`agent_run_message`, consumed by the loop in order), and its own event
//! stream (`agent_run_event`, run id + seq unique), each event also
//! published on the global event log in the same transaction.

mod delete;
mod gate;
mod messages;
mod model;
mod step;

use serde_json::Value;
use sqlx::Row;

pub use delete::Deleted;
pub use gate::{BlockReason, Blocked};
pub use model::{Investigation, NewRun, Run, RunEvent, RunMessage, RunMode, RunStatus};
pub use step::StepWrites;

use crate::agent::tools::plan::StepPlan;
use crate::audit::Audit;
use crate::events::Events;
use crate::store::{Db, new_id, now_ms};

/// Why a run operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("no agent run with id {0}")]
    NotFound(String),
    #[error("agent run {0} is {1}: {2}")]
    WrongState(String, &'static str, &'static str),
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

/// The run records over one database.
#[derive(Clone)]
pub struct Runs {
    db: Db,
    events: Events,
}

impl Runs {
    pub fn new(db: Db, events: Events) -> Runs {
        Runs { db, events }
    }

    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Records a new run, `queued`, with its goal as the first message.
    pub async fn create(&self, new: &NewRun) -> Result<Run, RunError> {
        self.create_with(new, |_| StepWrites::default()).await
    }

    /// [`Runs::create`], with the run's first events and audit rows (what
    /// `first` makes of its id) in the same transaction.
    pub(crate) async fn create_with(
        &self,
        new: &NewRun,
        first: impl FnOnce(&str) -> StepWrites,
    ) -> Result<Run, RunError> {
        let id = new_id();
        let first = first(&id);
        let now = now_ms();
        let allowlist = new.allowlist.as_ref().map(|a| serde_json::to_string(a).unwrap_or_default());
        let mut tx = self.db.begin_write().await?;
        let investigation = new.investigation.as_ref();
        sqlx::query(
            "INSERT INTO agent_run (id, goal, mode, allowlist, status, created_by, decision_id, max_tool_calls, \
             max_duration_sec, skill, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9, $10, $10)",
        )
        .bind(&id)
        .bind(&new.goal)
        .bind(new.mode.as_str())
        .bind(allowlist)
        .bind(&new.created_by)
        .bind(investigation.map(|i| i.decision_id.clone()))
        .bind(investigation.map(|i| i.max_tool_calls))
        .bind(investigation.map(|i| i.max_duration_sec))
        .bind(&new.skill)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO agent_run_message (run_id, seq, text, consumed, created_by, created_at, new_task) \
             VALUES ($1, 1, $2, 0, $3, $4, 1)",
        )
        .bind(&id)
        .bind(&new.goal)
        .bind(&new.created_by)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        Audit::append_all_in(&mut tx, &first.audit_rows).await?;
        let events: Vec<(&str, &Value)> = first.events.iter().map(|(k, p)| (*k, p)).collect();
        append_events_in(&mut tx, &self.db, &id, &events).await?;
        tx.commit().await?;
        self.events.announce();
        self.get(&id).await
    }

    pub async fn get(&self, id: &str) -> Result<Run, RunError> {
        let row = sqlx::query("SELECT * FROM agent_run WHERE id = $1").bind(id).fetch_optional(&self.db.pool).await?;
        row.map(|r| Run::from_row(&r)).transpose()?.ok_or_else(|| RunError::NotFound(id.to_string()))
    }

    /// Newest first; deleted runs kept for their open receipts are left out.
    pub async fn list(&self, limit: i64) -> Result<Vec<Run>, RunError> {
        let rows =
            sqlx::query("SELECT * FROM agent_run WHERE deleted_at IS NULL ORDER BY created_at DESC, id LIMIT $1")
                .bind(limit.clamp(1, 500))
                .fetch_all(&self.db.pool)
                .await?;
        Ok(rows.iter().map(Run::from_row).collect::<Result<_, _>>()?)
    }

    /// Runs created since `since_ms` (for the daily budget).
    pub(crate) async fn started_since(&self, since_ms: i64) -> Result<(i64, f64), RunError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n, CAST(COALESCE(SUM(cost_micro_usd), 0) AS BIGINT) AS cost FROM agent_run \
             WHERE started_at IS NOT NULL AND started_at >= $1",
        )
        .bind(since_ms)
        .fetch_one(&self.db.pool)
        .await?;
        let n: i64 = row.try_get("n")?;
        let cost: i64 = row.try_get("cost")?;
        Ok((n, cost as f64 / 1e6))
    }

    pub(crate) async fn set_task(&self, id: &str, task_id: &str) -> Result<(), RunError> {
        sqlx::query("UPDATE agent_run SET task_id = $2, updated_at = $3 WHERE id = $1")
            .bind(id)
            .bind(task_id)
            .bind(now_ms())
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// Moves the run to `status` and records an `agent.run_status` event in
    /// the same transaction: one conditional update, so a finished run stays
    /// finished whoever races it, and an abort that was accepted wins over
    /// any other end (the run ends `cancelled`, with the abort's reason).
    pub async fn set_status(&self, id: &str, status: RunStatus, detail: Option<&str>) -> Result<Run, RunError> {
        let now = now_ms();
        let ending = status.is_final() && status != RunStatus::Cancelled;
        let mut tx = self.db.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE agent_run SET \
             status = CASE WHEN $6 = 1 AND abort_reason IS NOT NULL THEN 'cancelled' ELSE $2 END, \
             error = CASE WHEN $6 = 1 AND abort_reason IS NOT NULL THEN abort_reason \
                          WHEN $5 IS NOT NULL THEN $5 WHEN $2 IN ('running', 'succeeded') THEN NULL ELSE error END, \
             updated_at = $3, finished_at = COALESCE($4, finished_at), \
             started_at = CASE WHEN $2 = 'running' AND started_at IS NULL THEN $3 ELSE started_at END, \
             resumed_at = CASE WHEN $2 = 'running' THEN $3 ELSE resumed_at END, \
             blocked_on = CASE WHEN $6 = 1 AND abort_reason IS NOT NULL THEN NULL ELSE blocked_on END \
             WHERE id = $1 AND status IN ('queued', 'running', 'waiting')",
        )
        .bind(id)
        .bind(status.as_str())
        .bind(now)
        .bind(status.is_final().then_some(now))
        .bind(if status.is_final() && status != RunStatus::Succeeded { detail } else { None })
        .bind(i64::from(ending))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 0 {
            drop(tx);
            let run = self.get(id).await?;
            return Err(RunError::WrongState(id.to_string(), run.status.as_str(), "a finished run does not change"));
        }
        let (now_status, error): (String, Option<String>) =
            sqlx::query_as("SELECT status, error FROM agent_run WHERE id = $1").bind(id).fetch_one(&mut *tx).await?;
        let detail = if now_status == status.as_str() { detail.map(str::to_string) } else { error };
        let payload = serde_json::json!({"status": now_status, "detail": detail});
        append_event_in(&mut tx, &self.db, id, "agent.run_status", &payload).await?;
        tx.commit().await?;
        self.events.announce();
        self.get(id).await
    }

    /// An ended run that was sent a new message, or whose obstacle is gone,
    /// is queued again (see [`RunStatus::reopens`]), with no error, no
    /// block, no abort and a fresh waiting window.
    pub(crate) async fn reopen(&self, id: &str) -> Result<Run, RunError> {
        let mut tx = self.db.begin_write().await?;
        let n = sqlx::query(
            "UPDATE agent_run SET status = 'queued', finished_at = NULL, error = NULL, wake_at = NULL, \
             wait_until = NULL, blocked_on = NULL, blocked_checks = 0, recheck_at = NULL, abort_reason = NULL, \
             updated_at = $2 WHERE id = $1 AND status IN ('succeeded', 'failed', 'budget_exceeded', 'nothing_done', \
             'cancelled')",
        )
        .bind(id)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let mut announce = false;
        if n == 1 {
            let payload = serde_json::json!({"status": "queued", "detail": "a new message arrived"});
            append_event_in(&mut tx, &self.db, id, "agent.run_status", &payload).await?;
            announce = true;
        }
        tx.commit().await?;
        if announce {
            self.events.announce();
        }
        self.get(id).await
    }

    /// A waiting run past its window says why it still waits (once: the
    /// reason is its `error` and an `agent.run_status` event), and keeps
    /// waiting.
    pub(crate) async fn wait_overdue(&self, id: &str, reason: &str) -> Result<(), RunError> {
        let mut tx = self.db.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE agent_run SET error = $2, updated_at = $3 WHERE id = $1 AND status = 'waiting' \
             AND (error IS NULL OR error <> $2)",
        )
        .bind(id)
        .bind(reason)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let mut announce = false;
        if changed == 1 {
            let payload = serde_json::json!({"status": "waiting", "detail": reason});
            append_event_in(&mut tx, &self.db, id, "agent.run_status", &payload).await?;
            announce = true;
        }
        tx.commit().await?;
        if announce {
            self.events.announce();
        }
        Ok(())
    }

    /// A waiting run's next look, and the end of its wait (kept once set).
    pub async fn schedule_wake(&self, id: &str, wake_at: i64, wait_until: i64) -> Result<(), RunError> {
        sqlx::query(
            "UPDATE agent_run SET wake_at = $2, wait_until = COALESCE(wait_until, $3), updated_at = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(wake_at)
        .bind(wait_until)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Runs to queue again: waiting ones whose next look is due or that
    /// were asked to abort, and waiting or reopenable ones with a message
    /// not yet taken (one that arrived while their task was finishing).
    pub async fn due(&self, now: i64) -> Result<Vec<String>, RunError> {
        let ids = sqlx::query_scalar(
            "SELECT id FROM agent_run WHERE status = 'waiting' AND (wake_at <= $1 OR abort_reason IS NOT NULL) \
             UNION \
             SELECT m.run_id FROM agent_run_message m JOIN agent_run r ON r.id = m.run_id \
             WHERE m.consumed = 0 AND r.blocked_on IS NULL \
             AND r.status IN ('waiting', 'succeeded', 'failed', 'budget_exceeded', 'nothing_done') \
             LIMIT 100",
        )
        .bind(now)
        .fetch_all(&self.db.pool)
        .await?;
        Ok(ids)
    }

    /// Remembers that the run waits on a human's decision of `approval_id`.
    pub(crate) async fn watch_approval(&self, id: &str, approval_id: &str) -> Result<(), RunError> {
        sqlx::query(
            "INSERT INTO agent_run_approval (run_id, approval_id, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (run_id, approval_id) DO NOTHING",
        )
        .bind(id)
        .bind(approval_id)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// The runs waiting on `approval_id`.
    pub async fn watching(&self, approval_id: &str) -> Result<Vec<String>, RunError> {
        Ok(sqlx::query_scalar("SELECT run_id FROM agent_run_approval WHERE approval_id = $1 ORDER BY created_at")
            .bind(approval_id)
            .fetch_all(&self.db.pool)
            .await?)
    }

    /// Records the run's current plan (`None`: it has none) and announces
    /// it as an `agent.plan` event, in one transaction.
    pub(crate) async fn set_plan(&self, id: &str, plan: Option<&StepPlan>) -> Result<(), RunError> {
        let text = plan.map(|p| serde_json::to_string(p).unwrap_or_default());
        let mut tx = self.db.begin_write().await?;
        sqlx::query("UPDATE agent_run SET plan = $2, updated_at = $3 WHERE id = $1")
            .bind(id)
            .bind(text)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
        append_event_in(&mut tx, &self.db, id, "agent.plan", &serde_json::json!({"plan": plan})).await?;
        tx.commit().await?;
        self.events.announce();
        Ok(())
    }

    /// Records the end of a run: the report and the model's own words.
    pub(crate) async fn set_outcome(
        &self,
        id: &str,
        report_id: Option<&str>,
        final_text: &str,
    ) -> Result<(), RunError> {
        sqlx::query(
            "UPDATE agent_run SET report_id = COALESCE($2, report_id), final_text = $3, updated_at = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(report_id)
        .bind(final_text)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Asks the run to stop after its current step; undoes nothing. One
    /// conditional update: a run already ended is left as it is
    /// (`WrongState`), a queued or blocked one ends `cancelled` here, a running or
    /// waiting one keeps the reason and ends `cancelled` at its next check
    /// (an abort always wins over another end, see [`Runs::set_status`]).
    pub async fn request_abort(&self, id: &str, reason: &str) -> Result<Run, RunError> {
        let now = now_ms();
        let mut tx = self.db.begin_write().await?;
        // A queued run, or a blocked one (ended, but waiting for its
        // obstacle to go to go on), ends here; a running or waiting one at
        // its next check.
        let changed = sqlx::query(
            "UPDATE agent_run SET abort_reason = COALESCE(abort_reason, $2), updated_at = $3, \
             status = CASE WHEN status = 'queued' OR blocked_on IS NOT NULL THEN 'cancelled' ELSE status END, \
             finished_at = CASE WHEN status = 'queued' OR blocked_on IS NOT NULL THEN $3 ELSE finished_at END, \
             error = CASE WHEN status = 'queued' OR blocked_on IS NOT NULL THEN $2 ELSE error END, \
             blocked_on = NULL, recheck_at = NULL \
             WHERE id = $1 AND (status IN ('queued', 'running', 'waiting') \
             OR (blocked_on IS NOT NULL AND status IN ('failed', 'budget_exceeded')))",
        )
        .bind(id)
        .bind(reason)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 0 {
            drop(tx);
            let run = self.get(id).await?;
            return Err(RunError::WrongState(id.to_string(), run.status.as_str(), "there is nothing to abort"));
        }
        // The row is ours until commit: `cancelled` now means it was queued.
        let status: String =
            sqlx::query_scalar("SELECT status FROM agent_run WHERE id = $1").bind(id).fetch_one(&mut *tx).await?;
        let mut announce = false;
        if RunStatus::parse(&status)? == RunStatus::Cancelled {
            let payload = serde_json::json!({"status": "cancelled", "detail": reason});
            append_event_in(&mut tx, &self.db, id, "agent.run_status", &payload).await?;
            announce = true;
        }
        tx.commit().await?;
        if announce {
            self.events.announce();
        }
        self.get(id).await
    }

    /// Appends to the run's stream and the global log, in the next group
    /// commit.
    pub(crate) async fn append_event(&self, id: &str, kind: &'static str, payload: &Value) -> Result<(), RunError> {
        self.commit_step(id, StepWrites { events: vec![(kind, payload.clone())], ..StepWrites::default() }).await
    }

    /// Every event of the run of `kind`, oldest first.
    pub(crate) async fn events_of_kind(&self, id: &str, kind: &str) -> Result<Vec<RunEvent>, RunError> {
        let query = "SELECT * FROM agent_run_event WHERE run_id = $1 AND kind = $2 ORDER BY seq";
        Ok(sqlx::query_as::<_, RunEvent>(query).bind(id).bind(kind).fetch_all(&self.db.pool).await?)
    }

    /// The run's events after `after_seq`, oldest first.
    pub async fn run_events(&self, id: &str, after_seq: i64, limit: i64) -> Result<Vec<RunEvent>, RunError> {
        let query = "SELECT * FROM agent_run_event WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";
        let events = sqlx::query_as::<_, RunEvent>(query).bind(id).bind(after_seq).bind(limit.clamp(1, 1000));
        Ok(events.fetch_all(&self.db.pool).await?)
    }
}

/// Appends one run event inside `tx` ([`append_events_in`]); announce it
/// once committed.
async fn append_event_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    db: &Db,
    run_id: &str,
    kind: &str,
    payload: &Value,
) -> Result<(), sqlx::Error> {
    append_events_in(tx, db, run_id, &[(kind, payload)]).await
}

/// Most run events one insert statement carries.
const EVENTS_PER_INSERT: usize = 64;

/// Appends run events inside `tx`, in order: the run's next seqs, then the
/// same events on the global log with the run's seq in their payloads.
/// Announce them once committed. The run's seq read once and one
/// insert per 64 events on each log, three statements for one event (a
/// statement is a round trip to the database; a step writes several).
async fn append_events_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    db: &Db,
    run_id: &str,
    events: &[(&str, &Value)],
) -> Result<(), sqlx::Error> {
    if events.is_empty() {
        return Ok(());
    }
    // Two appends must not pick the same seq (the (run_id, seq) key would
    // refuse the second). SQLite's one writer serialises them; on
    // PostgreSQL, where writers of several nodes run at once, the run's row
    // is locked first, so the appends to one run take turns and those to
    // different runs do not wait on each other.
    if db.backend == crate::store::Backend::Postgres {
        sqlx::query("SELECT id FROM agent_run WHERE id = $1 FOR UPDATE").bind(run_id).fetch_optional(&mut **tx).await?;
    }
    let at = now_ms();
    let first: i64 = if let [(kind, payload)] = events {
        // One event takes its seq in the insert itself.
        sqlx::query_scalar(
            "INSERT INTO agent_run_event (run_id, seq, kind, payload, at) \
             SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4 FROM agent_run_event WHERE run_id = $1 RETURNING seq",
        )
        .bind(run_id)
        .bind(*kind)
        .bind(payload.to_string())
        .bind(at)
        .fetch_one(&mut **tx)
        .await?
    } else {
        let last: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM agent_run_event WHERE run_id = $1")
            .bind(run_id)
            .fetch_one(&mut **tx)
            .await?;
        for (c, chunk) in events.chunks(EVENTS_PER_INSERT).enumerate() {
            let sql = format!(
                "INSERT INTO agent_run_event (run_id, seq, kind, payload, at) VALUES {}",
                crate::store::values_placeholders(chunk.len(), 5)
            );
            let mut insert = sqlx::query(&sql);
            for (i, (kind, payload)) in chunk.iter().enumerate() {
                let seq = last + 1 + (c * EVENTS_PER_INSERT + i) as i64;
                insert = insert.bind(run_id).bind(seq).bind(*kind).bind(payload.to_string()).bind(at);
            }
            insert.execute(&mut **tx).await?;
        }
        last + 1
    };
    let globals: Vec<Value> = events
        .iter()
        .enumerate()
        .map(|(i, (_, payload))| {
            let mut global = (*payload).clone();
            if let Value::Object(map) = &mut global {
                map.insert("runId".into(), Value::from(run_id));
                map.insert("runSeq".into(), Value::from(first + i as i64));
            }
            global
        })
        .collect();
    let appended: Vec<(&str, Option<&str>, &Value)> =
        events.iter().zip(&globals).map(|((kind, _), global)| (*kind, Some(run_id), global)).collect();
    Events::append_all_in(tx, db.backend, &appended).await
}
