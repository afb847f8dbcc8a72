//! Writes whose outcome is still open: rows `running` for an owner that is
//! gone, and rows `unknown`. Before a caller writes again what such a row
//! may already have done — the same capability and canonical input, by the
//! same principal, in a later request, or a run going on after it stopped —
//! the row is found here, taken over from a dead owner, and settled from
//! what a read-only check found. Nothing here runs a capability.

use super::{Ledger, LedgerError, LedgerStatus, Record};
use crate::store::now_ms;

impl Ledger {
    /// The newest row of `principal` for `capability_id` with the input
    /// `input_digest`, other than `except_key`, whose outcome is open.
    pub async fn open_like(
        &self,
        principal: &str,
        capability_id: &str,
        input_digest: &str,
        except_key: &str,
    ) -> Result<Option<Record>, sqlx::Error> {
        let row = sqlx::query_as::<_, Record>(
            "SELECT * FROM capability_invocation WHERE principal = $1 AND capability_id = $2 AND input_digest = $3 \
             AND status IN ('running', 'unknown') AND idempotency_key <> $4 ORDER BY created_at DESC, id LIMIT 1",
        )
        .bind(principal)
        .bind(capability_id)
        .bind(input_digest)
        .bind(except_key)
        .fetch_optional(&self.db.pool)
        .await?;
        Ok(row)
    }

    /// The rows of run `run_id` whose outcome is open, oldest first.
    pub async fn open_of_run(&self, run_id: &str) -> Result<Vec<Record>, sqlx::Error> {
        let rows = sqlx::query_as::<_, Record>(
            "SELECT * FROM capability_invocation WHERE run_id = $1 AND status IN ('running', 'unknown') \
             ORDER BY created_at, id",
        )
        .bind(run_id)
        .fetch_all(&self.db.pool)
        .await?;
        Ok(rows)
    }

    /// An open row as it can be checked: an `unknown` row as it is, a
    /// `running` row of a dead owner made `unknown` (with a new token, so
    /// a late finish from that owner is refused), `None` while a live
    /// owner is still running it.
    pub async fn take_over(&self, record: &Record) -> Result<Option<Record>, LedgerError> {
        match record.status {
            LedgerStatus::Unknown => Ok(Some(record.clone())),
            LedgerStatus::Running => {
                let mut tx = self.db.begin_durable_write().await?;
                if self.owner_alive(&mut tx, &record.owner).await? {
                    return Ok(None);
                }
                let record = self.mark_unknown_in(&mut tx, record.clone()).await?;
                tx.commit().await?;
                Ok(Some(record))
            }
            _ => Ok(None),
        }
    }

    /// Settles an `unknown` row from a read-only check: `succeeded` with
    /// what the check found done, or `failed` with why nothing was done
    /// (so the same key may be claimed and run again).
    pub async fn settle_checked(
        &self,
        record: &Record,
        status: LedgerStatus,
        result: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), LedgerError> {
        let n = sqlx::query(
            "UPDATE capability_invocation SET status = $1, result = $2, error = COALESCE($3, error), \
             finished_at = $4, updated_at = $4 WHERE id = $5 AND claim_token = $6 AND status = 'unknown'",
        )
        .bind(status.as_str())
        .bind(result)
        .bind(error)
        .bind(now_ms())
        .bind(&record.id)
        .bind(&record.claim_token)
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        if n == 0 {
            return Err(LedgerError::StaleToken(record.id.clone()));
        }
        Ok(())
    }
}
