//! The user messages sent to a run (`agent_run_message`): added in order,
//! each either going on with the run's current task or starting a new one,
//! and marked taken once the session log holds them.

use super::{RunError, RunMessage, Runs, append_event_in};
use crate::store::now_ms;

impl Runs {
    /// Adds a user message; the loop reads it after the current turn.
    /// `new_task` says the sender starts a new task rather than going on
    /// with the current one. The run's row is updated first,
    /// conditionally: that refuses a run whose abort is still under way
    /// (it ends `cancelled` first; a message may then reopen it) and
    /// serialises concurrent messages to one run.
    pub(crate) async fn add_message(
        &self,
        id: &str,
        text: &str,
        by: &str,
        new_task: bool,
    ) -> Result<RunMessage, RunError> {
        let now = now_ms();
        let mut tx = self.db.begin_write().await?;
        let open = sqlx::query(
            "UPDATE agent_run SET updated_at = $2 WHERE id = $1 AND deleted_at IS NULL \
             AND NOT (abort_reason IS NOT NULL AND status IN ('queued', 'running', 'waiting'))",
        )
        .bind(id)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if open == 0 {
            drop(tx);
            let run = self.get(id).await?;
            let why = if run.deleted_at.is_some() {
                "it was deleted"
            } else {
                "it is being aborted; send the message once it has stopped"
            };
            return Err(RunError::WrongState(id.to_string(), run.status.as_str(), why));
        }
        let seq: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) + 1 FROM agent_run_message WHERE run_id = $1")
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO agent_run_message (run_id, seq, text, consumed, created_by, created_at, new_task) \
             VALUES ($1, $2, $3, 0, $4, $5, $6)",
        )
        .bind(id)
        .bind(seq)
        .bind(text)
        .bind(by)
        .bind(now)
        .bind(i64::from(new_task))
        .execute(&mut *tx)
        .await?;
        let payload = serde_json::json!({"seq": seq, "text": text, "newTask": new_task});
        append_event_in(&mut tx, &self.db, id, "agent.message", &payload).await?;
        tx.commit().await?;
        self.events.announce();
        Ok(RunMessage { seq, text: text.to_string(), consumed: false, new_task })
    }

    pub async fn messages(&self, id: &str) -> Result<Vec<RunMessage>, RunError> {
        let query = "SELECT seq, text, consumed, new_task FROM agent_run_message WHERE run_id = $1 ORDER BY seq";
        Ok(sqlx::query_as::<_, RunMessage>(query).bind(id).fetch_all(&self.db.pool).await?)
    }

    /// Whether a message waits to be taken.
    pub(crate) async fn has_unconsumed(&self, id: &str) -> Result<bool, RunError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agent_run_message WHERE run_id = $1 AND consumed = 0")
            .bind(id)
            .fetch_one(&self.db.pool)
            .await?;
        Ok(n > 0)
    }

    /// Marks every message up to `seq` taken: a request the session log
    /// already holds is never left looking unread (the waker would reopen
    /// the run for it again and again).
    pub(crate) async fn mark_consumed_through(&self, id: &str, seq: i64) -> Result<(), RunError> {
        sqlx::query("UPDATE agent_run_message SET consumed = 1 WHERE run_id = $1 AND seq <= $2 AND consumed = 0")
            .bind(id)
            .bind(seq)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    pub async fn mark_consumed(&self, id: &str, seq: i64) -> Result<(), RunError> {
        sqlx::query("UPDATE agent_run_message SET consumed = 1 WHERE run_id = $1 AND seq = $2")
            .bind(id)
            .bind(seq)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }
}
