//! Deleting a run. Its messages, its own events (in its stream and on the
//! global log), the approvals it watched and its receipts whose outcome is
//! known go at once, in one transaction. Receipts still `running` or
//! `unknown` are never removed — by deletion or by time — so a run with any
//! is kept, marked deleted, until they are settled ([`Runs::purge_deleted`]).
//! The session log is the caller's to remove once this has committed.

use super::{RunError, Runs};
use crate::events::Events;
use crate::store::now_ms;

/// What deleting a run left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// Nothing of it remains.
    Gone,
    /// It is kept, marked deleted, for this many receipts with an open
    /// outcome; it goes once they are settled.
    Kept { open: i64 },
}

impl Runs {
    /// Deletes run `id`, which must have ended (a running or waiting run is
    /// aborted first).
    pub async fn delete(&self, id: &str) -> Result<Deleted, RunError> {
        let mut tx = self.db.begin_write().await?;
        let marked = sqlx::query(
            "UPDATE agent_run SET deleted_at = COALESCE(deleted_at, $2), updated_at = $2 WHERE id = $1 \
             AND status IN ('succeeded', 'failed', 'cancelled', 'budget_exceeded', 'nothing_done')",
        )
        .bind(id)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if marked == 0 {
            drop(tx);
            let run = self.get(id).await?;
            return Err(RunError::WrongState(id.to_string(), run.status.as_str(), "abort it before deleting it"));
        }
        let open = remove_in(&mut tx, id).await?;
        tx.commit().await?;
        Ok(if open == 0 { Deleted::Gone } else { Deleted::Kept { open } })
    }

    /// Removes the deleted runs whose open receipts have since been
    /// settled; returns their ids.
    pub(crate) async fn purge_deleted(&self) -> Result<Vec<String>, RunError> {
        let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM agent_run WHERE deleted_at IS NOT NULL")
            .fetch_all(&self.db.pool)
            .await?;
        let mut gone = Vec::new();
        for id in ids {
            let mut tx = self.db.begin_write().await?;
            if remove_in(&mut tx, &id).await? == 0 {
                gone.push(id);
            }
            tx.commit().await?;
        }
        Ok(gone)
    }
}

/// Removes what of run `id` may go; the row itself when no receipt with an
/// open outcome remains. Returns how many such receipts remain.
async fn remove_in(tx: &mut sqlx::Transaction<'_, sqlx::Any>, id: &str) -> Result<i64, sqlx::Error> {
    for table in ["agent_run_event", "agent_run_message", "agent_run_approval"] {
        sqlx::query(&format!("DELETE FROM {table} WHERE run_id = $1")).bind(id).execute(&mut **tx).await?;
    }
    Events::remove_in(tx, id, "agent.").await?;
    let open = crate::ledger::remove_run_receipts_in(tx, id).await?;
    if open == 0 {
        sqlx::query("DELETE FROM agent_run WHERE id = $1").bind(id).execute(&mut **tx).await?;
    }
    Ok(open)
}
