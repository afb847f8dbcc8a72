//! The runtime's [`OutputStore`] in the database: command output every
//! node of a PostgreSQL cluster can read (`command_output` for each
//! process's state, `command_output_page` for its bytes). Only used on
//! PostgreSQL; on SQLite the archives are files on the one machine.
//! Writes are single statements on the pool, outside the host's write
//! path: nothing else is ordered against them.

use futures_util::future::BoxFuture;
use sqlx::Row;

use crate::runtime::host::{CommandOutcome, OutputOpened, OutputState, OutputStore, StoredOutput};
use crate::store::{Backend, Db, now_ms};

/// Command output in the database.
#[derive(Clone)]
pub struct CommandOutputRows {
    db: Db,
}

impl CommandOutputRows {
    /// The store over `db` when it is PostgreSQL, where nodes share
    /// nothing else; `None` on SQLite.
    pub fn for_db(db: &Db) -> Option<CommandOutputRows> {
        (db.backend == Backend::Postgres).then(|| CommandOutputRows { db: db.clone() })
    }

    async fn find_row(&self, owner: &str, handle: &str) -> Result<Option<StoredOutput>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT command, written, kept, truncated, head, tail, outcome, exit_code, duration_ms, seen_at \
             FROM command_output WHERE handle = $1 AND owner = $2",
        )
        .bind(handle)
        .bind(owner)
        .fetch_optional(&self.db.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let outcome: Option<String> = row.try_get("outcome")?;
        let state = OutputState {
            written: row.try_get::<i64, _>("written")? as u64,
            kept: row.try_get::<i64, _>("kept")? as u64,
            truncated: row.try_get::<i64, _>("truncated")? != 0,
            head: row.try_get::<Option<Vec<u8>>, _>("head")?.unwrap_or_default(),
            tail: row.try_get::<Option<Vec<u8>>, _>("tail")?.unwrap_or_default(),
            outcome: outcome.as_deref().map(CommandOutcome::parse),
            exit_code: row.try_get::<Option<i64>, _>("exit_code")?.map(|c| c as i32),
            duration_ms: row.try_get::<i64, _>("duration_ms")? as u64,
            seen_ms: row.try_get("seen_at")?,
        };
        Ok(Some(StoredOutput { command: row.try_get("command")?, state }))
    }

    async fn read_pages(&self, handle: &str, offset: u64, limit: usize) -> Result<Vec<u8>, sqlx::Error> {
        let end = offset.saturating_add(limit as u64);
        // The page that holds `offset` starts at or before it: the last
        // such, and every page after it up to `end`.
        let rows = sqlx::query(
            "SELECT at, body FROM command_output_page WHERE handle = $1 AND at < $3 AND at >= \
             COALESCE((SELECT MAX(at) FROM command_output_page WHERE handle = $1 AND at <= $2), 0) ORDER BY at",
        )
        .bind(handle)
        .bind(offset as i64)
        .bind(end as i64)
        .fetch_all(&self.db.pool)
        .await?;
        let mut out = Vec::with_capacity(limit.min(1 << 20));
        for row in rows {
            let at = row.try_get::<i64, _>("at")? as u64;
            let body: Vec<u8> = row.try_get("body")?;
            let from = offset.saturating_sub(at).min(body.len() as u64) as usize;
            let upto = (end.saturating_sub(at)).min(body.len() as u64) as usize;
            if at + from as u64 != offset + out.len() as u64 {
                break; // a gap: what follows it is not this offset's
            }
            out.extend_from_slice(&body[from..upto]);
        }
        Ok(out)
    }

    async fn prune_before(&self, before_ms: i64) -> Result<usize, sqlx::Error> {
        let mut tx = self.db.pool.begin().await?;
        sqlx::query(
            "DELETE FROM command_output_page WHERE handle IN (SELECT handle FROM command_output WHERE seen_at < $1)",
        )
        .bind(before_ms)
        .execute(&mut *tx)
        .await?;
        let gone =
            sqlx::query("DELETE FROM command_output WHERE seen_at < $1").bind(before_ms).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(gone.rows_affected() as usize)
    }
}

impl OutputStore for CommandOutputRows {
    fn open<'a>(&'a self, opened: &'a OutputOpened) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            sqlx::query("INSERT INTO command_output (handle, owner, command, seen_at) VALUES ($1, $2, $3, $4)")
                .bind(&opened.handle)
                .bind(&opened.owner)
                .bind(&opened.command)
                .bind(now_ms())
                .execute(&self.db.pool)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }

    fn append<'a>(&'a self, handle: &'a str, at: u64, bytes: &'a [u8]) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            // A page written by an attempt that failed after committing
            // is there already.
            sqlx::query(
                "INSERT INTO command_output_page (handle, at, body) VALUES ($1, $2, $3) \
                 ON CONFLICT (handle, at) DO NOTHING",
            )
            .bind(handle)
            .bind(at as i64)
            .bind(bytes.to_vec())
            .execute(&self.db.pool)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
        })
    }

    fn update<'a>(&'a self, handle: &'a str, state: &'a OutputState) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            sqlx::query(
                "UPDATE command_output SET written = $2, kept = $3, truncated = $4, head = $5, tail = $6, \
                 outcome = $7, exit_code = $8, duration_ms = $9, seen_at = $10 WHERE handle = $1",
            )
            .bind(handle)
            .bind(state.written as i64)
            .bind(state.kept as i64)
            .bind(i64::from(state.truncated))
            .bind(state.head.clone())
            .bind(state.tail.clone())
            .bind(state.outcome.map(|o| o.as_str()))
            .bind(state.exit_code.map(i64::from))
            .bind(state.duration_ms as i64)
            .bind(state.seen_ms)
            .execute(&self.db.pool)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
        })
    }

    fn find<'a>(&'a self, owner: &'a str, handle: &'a str) -> BoxFuture<'a, Result<Option<StoredOutput>, String>> {
        Box::pin(async move { self.find_row(owner, handle).await.map_err(|e| e.to_string()) })
    }

    fn read<'a>(&'a self, handle: &'a str, offset: u64, limit: usize) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move { self.read_pages(handle, offset, limit).await.map_err(|e| e.to_string()) })
    }

    fn prune(&self, before_ms: i64) -> BoxFuture<'_, Result<usize, String>> {
        Box::pin(async move { self.prune_before(before_ms).await.map_err(|e| e.to_string()) })
    }
}
