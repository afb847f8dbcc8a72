//! Event sequence numbers on PostgreSQL, where several nodes write at once.
//! A writer does not number its events: it inserts them into
//! `event_intake` inside its own transaction, touching no row another
//! writer touches, and notifies at commit. The sequencer moves what has
//! committed into `event`, numbered after everything before it, under a
//! transaction-scoped advisory lock so one sequencer runs at a time. Any
//! node sequences — when told an intake committed, once a second in case a
//! notification was missed, and before it reads — so there is no leader
//! to lose: the lock is held only while one move commits.
//!
//! Why a reader never skips: numbers are given only by the sequencer,
//! each move's numbers follow the last move's, and a move commits before
//! the next can start. An append that commits late is simply numbered
//! later.
//!
//! Why order holds: the sequencer takes rows by their writer's
//! transaction id, then by the order of the appends within it. A
//! transaction that begins after another committed gets a larger id, so
//! an append that follows another is numbered after it, however close in
//! time; appends racing in separate transactions have no order to keep.

use std::sync::atomic::{AtomicI64, Ordering};

use sqlx::Row;

use crate::store::{Db, values_placeholders};

/// Orders the appends one transaction makes: all of a transaction's
/// appends come from this process, so a process-wide counter suffices.
static CALL_ORDER: AtomicI64 = AtomicI64::new(1);

/// The next append's place within its transaction.
pub(crate) fn next_call_order() -> i64 {
    CALL_ORDER.fetch_add(1, Ordering::Relaxed)
}

/// `VALUES` rows for an intake insert: `columns` bound parameters each,
/// then the writer's transaction id as the row's `tx_order`.
pub(crate) fn intake_rows(rows: usize, columns: usize) -> String {
    // Each row's parentheses close its bound parameters; none are nested.
    values_placeholders(rows, columns).replace(')', ", txid_current())")
}

/// The advisory lock the sequencer holds while it moves events.
const SEQUENCER_LOCK: i64 = 0x6361_7073_7461_6e02;

/// The PostgreSQL channel an append notifies at commit.
pub(super) const INTAKE_CHANNEL: &str = "capstan_event_intake";

/// Most events one move takes.
const MOVE: i64 = 2_000;

/// Most events one insert statement carries (7 parameters each).
const ROWS_PER_INSERT: usize = 256;

/// Inserts `events` into the intake inside `tx`, in order, and notifies
/// the sequencers at commit.
pub(super) async fn take_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    events: &[(&str, Option<&str>, &serde_json::Value)],
    at: i64,
) -> Result<(), sqlx::Error> {
    let batch = crate::store::new_id();
    let call = next_call_order();
    for (c, chunk) in events.chunks(ROWS_PER_INSERT).enumerate() {
        let sql = format!(
            "INSERT INTO event_intake (batch, n, kind, subject, payload, at, call_order, tx_order) VALUES {}",
            intake_rows(chunk.len(), 7)
        );
        let mut insert = sqlx::query(&sql);
        for (i, (kind, subject, payload)) in chunk.iter().enumerate() {
            let n = (c * ROWS_PER_INSERT + i) as i64;
            insert = insert
                .bind(batch.clone())
                .bind(n)
                .bind(*kind)
                .bind(*subject)
                .bind(payload.to_string())
                .bind(at)
                .bind(call);
        }
        insert.execute(&mut **tx).await?;
    }
    sqlx::query(&format!("NOTIFY {INTAKE_CHANNEL}")).execute(&mut **tx).await?;
    Ok(())
}

/// Whether events wait in the intake.
pub(super) async fn pending(db: &Db) -> Result<bool, sqlx::Error> {
    let one: Option<i64> = sqlx::query_scalar("SELECT 1 FROM event_intake LIMIT 1").fetch_optional(&db.pool).await?;
    Ok(one.is_some())
}

/// Moves every committed event of the intake into the log; answers how
/// many it numbered.
pub(super) async fn sequence(db: &Db) -> Result<usize, sqlx::Error> {
    let mut moved = 0;
    loop {
        let n = move_some(db).await?;
        moved += n;
        if n < MOVE as usize {
            return Ok(moved);
        }
    }
}

async fn move_some(db: &Db) -> Result<usize, sqlx::Error> {
    let mut tx = db.pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(SEQUENCER_LOCK).execute(&mut *tx).await?;
    let rows = sqlx::query(
        "SELECT batch, n, kind, subject, payload, at FROM event_intake ORDER BY tx_order, call_order, n LIMIT $1",
    )
    .bind(MOVE)
    .fetch_all(&mut *tx)
    .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let last: i64 = sqlx::query_scalar("UPDATE event_head SET seq = seq + $1 WHERE id = 1 RETURNING seq")
        .bind(rows.len() as i64)
        .fetch_one(&mut *tx)
        .await?;
    let first = last - rows.len() as i64 + 1;
    for (c, chunk) in rows.chunks(ROWS_PER_INSERT).enumerate() {
        let sql = format!(
            "INSERT INTO event (seq, kind, subject, payload, at) VALUES {}",
            values_placeholders(chunk.len(), 5)
        );
        let mut insert = sqlx::query(&sql);
        for (i, row) in chunk.iter().enumerate() {
            let seq = first + (c * ROWS_PER_INSERT + i) as i64;
            insert = insert
                .bind(seq)
                .bind(row.try_get::<String, _>("kind")?)
                .bind(row.try_get::<Option<String>, _>("subject")?)
                .bind(row.try_get::<String, _>("payload")?)
                .bind(row.try_get::<i64, _>("at")?);
        }
        insert.execute(&mut *tx).await?;
    }
    // What was moved leaves the intake, row by row: a move that stopped at
    // its limit inside a batch leaves the rest of it for the next.
    let keys = rows
        .iter()
        .map(|row| Ok((row.try_get::<String, _>("batch")?, row.try_get::<i64, _>("n")?)))
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    remove_taken(&mut tx, "event_intake", &keys).await?;
    sqlx::query(&format!("NOTIFY {}", super::CHANNEL)).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(rows.len())
}

/// Removes from intake table `table` the rows a sequencer took, by their
/// `(batch, n)` keys, 64 to a statement. Shared with the audit log's
/// sequencer, whose intake is keyed the same way.
pub(crate) async fn remove_taken(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    table: &'static str,
    keys: &[(String, i64)],
) -> Result<(), sqlx::Error> {
    for chunk in keys.chunks(64) {
        let clauses: Vec<String> =
            (0..chunk.len()).map(|i| format!("(batch = ${} AND n = ${})", 2 * i + 1, 2 * i + 2)).collect();
        let sql = format!("DELETE FROM {table} WHERE {}", clauses.join(" OR "));
        let mut delete = sqlx::query(&sql);
        for (batch, n) in chunk {
            delete = delete.bind(batch).bind(*n);
        }
        delete.execute(&mut **tx).await?;
    }
    Ok(())
}
