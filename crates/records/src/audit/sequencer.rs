//! The audit chain on PostgreSQL, where several nodes append at once. A
//! writer does not chain its rows: it inserts them into `audit_intake`
//! inside its own transaction, taking no row another writer takes. The
//! sequencer chains what has committed onto `audit_event` — numbered after
//! the head, each hash over the row and the one before — under a
//! transaction-scoped advisory lock, so one sequencer runs at a time and
//! the chain has one order, as a transparency log's sequencer gives it.
//! Any node sequences: its loop does every half second
//! ([`Audit::sequence_loop`]), and every reader of the log does first, so a
//! caller reads what it appended. No leader is elected, so none can be
//! lost: the lock is held only while one batch commits.

use sqlx::{Any, FromRow, Row, Transaction};

use super::{Audit, NewAuditEntry, chain_in};
use crate::events::sequencer::{intake_rows, next_call_order};
use crate::store::{Backend, Db};

/// The advisory lock the sequencer holds while it chains a batch.
const SEQUENCER_LOCK: i64 = 0x6361_7073_7461_6e03;

/// Most rows one batch chains.
const BATCH: i64 = 2_000;

/// Most rows one insert statement carries (13 parameters each).
const ROWS_PER_INSERT: usize = 64;

/// Inserts `events` into the intake inside `tx`, in order.
pub(super) async fn take_in(
    tx: &mut Transaction<'_, Any>,
    events: &[NewAuditEntry],
    at: i64,
) -> Result<(), sqlx::Error> {
    let batch = crate::store::new_id();
    let call = next_call_order();
    for (c, chunk) in events.chunks(ROWS_PER_INSERT).enumerate() {
        let sql = format!(
            "INSERT INTO audit_intake (batch, n, at, actor_kind, principal, action, subject, outcome, \
             authorization_id, idempotency_key, input_summary, detail, call_order, tx_order) VALUES {}",
            intake_rows(chunk.len(), 13)
        );
        let mut insert = sqlx::query(&sql);
        for (i, e) in chunk.iter().enumerate() {
            insert = insert
                .bind(batch.clone())
                .bind((c * ROWS_PER_INSERT + i) as i64)
                .bind(at)
                .bind(&e.actor_kind)
                .bind(&e.principal)
                .bind(&e.action)
                .bind(&e.subject)
                .bind(&e.outcome)
                .bind(&e.authorization_id)
                .bind(&e.idempotency_key)
                .bind(&e.input_summary)
                .bind(&e.detail)
                .bind(call);
        }
        insert.execute(&mut **tx).await?;
    }
    Ok(())
}

/// Chains one batch of what waits; answers how many rows it chained.
async fn chain_some(db: &Db) -> Result<usize, sqlx::Error> {
    let mut tx = db.pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(SEQUENCER_LOCK).execute(&mut *tx).await?;
    let rows = sqlx::query("SELECT * FROM audit_intake ORDER BY tx_order, call_order, n LIMIT $1")
        .bind(BATCH)
        .fetch_all(&mut *tx)
        .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let mut entries = Vec::with_capacity(rows.len());
    let mut keys = Vec::with_capacity(rows.len());
    for row in &rows {
        entries.push((row.try_get::<i64, _>("at")?, NewAuditEntry::from_row(row)?));
        keys.push((row.try_get::<String, _>("batch")?, row.try_get::<i64, _>("n")?));
    }
    chain_in(&mut tx, &entries).await?;
    crate::events::sequencer::remove_taken(&mut tx, "audit_intake", &keys).await?;
    tx.commit().await?;
    Ok(rows.len())
}

impl Audit {
    /// Chains every row waiting in the intake (PostgreSQL; nothing on
    /// SQLite); answers how many it chained.
    pub async fn sequence(&self) -> Result<usize, sqlx::Error> {
        if self.db.backend != Backend::Postgres {
            return Ok(0);
        }
        let mut chained = 0;
        loop {
            let n = chain_some(&self.db).await?;
            chained += n;
            if n < BATCH as usize {
                return Ok(chained);
            }
        }
    }

    /// Whether appends wait for a sequencer (PostgreSQL).
    pub fn sequenced(&self) -> bool {
        self.db.backend == Backend::Postgres
    }

    /// Rows appended and not chained yet (0 on SQLite).
    pub async fn waiting(&self) -> Result<i64, sqlx::Error> {
        if self.db.backend != Backend::Postgres {
            return Ok(0);
        }
        sqlx::query_scalar("SELECT COUNT(*) FROM audit_intake").fetch_one(&self.db.pool).await
    }

    /// Chains what waits before a read, so a reader sees what it appended.
    pub(super) async fn catch_up(&self) -> Result<(), sqlx::Error> {
        if self.db.backend == Backend::Postgres {
            let one: Option<i64> =
                sqlx::query_scalar("SELECT 1 FROM audit_intake LIMIT 1").fetch_optional(&self.db.pool).await?;
            if one.is_some() {
                self.sequence().await?;
            }
        }
        Ok(())
    }

    /// Chains what waits every half second until `stop` (PostgreSQL):
    /// each node runs one, and whichever takes the lock chains.
    pub async fn sequence_loop(&self, stop: tokio_util::sync::CancellationToken) {
        if self.db.backend != Backend::Postgres {
            return;
        }
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {
                    if let Err(e) = self.catch_up().await {
                        tracing::warn!(error = %e, "cannot chain the audit rows waiting; retrying");
                    }
                }
            }
        }
    }
}
