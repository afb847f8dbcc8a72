//! The global event log: `download.status_changed`, `organization.changed`,
//! `capability.invoked`, ... each with a sequence number that only grows.
//! Writers append inside the transaction of the change they describe, so an
//! event exists exactly when its change does. Readers page by sequence
//! number and wait for news: in this process through a broadcast channel,
//! from other processes through PostgreSQL `LISTEN/NOTIFY`, and on SQLite
//! by polling once a second. On PostgreSQL appends are numbered by a
//! sequencer ([`sequencer`]) rather than by their writers. Owns the
//! `event`, `event_head` and `event_intake` tables.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::{Any, Row, Transaction};
use tokio::sync::broadcast;

pub(crate) mod sequencer;

use crate::background::Background;
use crate::store::{Backend, Db, JsonText, now_ms, values_placeholders};

/// The PostgreSQL channel appends notify.
const CHANNEL: &str = "capstan_events";

/// Most events one insert statement carries.
const ROWS_PER_INSERT: usize = 64;

/// One stored event.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema, sqlx::FromRow)]
pub struct Event {
    pub seq: i64,
    pub kind: String,
    pub subject: Option<String>,
    /// What happened, in the shape its kind gives it.
    #[sqlx(try_from = "JsonText")]
    pub payload: Value,
    pub at: i64,
}

/// The event log over one database; cheap to clone, one per process.
#[derive(Clone)]
pub struct Events {
    db: Db,
    news: Arc<broadcast::Sender<i64>>,
    /// The listener for other processes' appends (PostgreSQL).
    background: Background,
}

impl Events {
    /// Must be called inside a tokio runtime: on PostgreSQL it starts
    /// listening for other processes' appends.
    pub fn new(db: Db) -> Events {
        let (news, _) = broadcast::channel(256);
        let events = Events { db, news: Arc::new(news), background: Background::default() };
        if events.db.backend == Backend::Postgres {
            events.background.spawn(listen(events.db.clone(), events.news.clone()));
        }
        events
    }

    /// Stops listening for other processes' appends.
    pub async fn close(&self) {
        self.background.close().await;
    }

    /// Removes, inside `tx`, the events of kind `<prefix>*` about
    /// `subject` (a deleted run's own `agent.*` events). The sequence goes
    /// on from where it was: a reader resuming after a removed event misses
    /// nothing that remains.
    pub async fn remove_in(tx: &mut Transaction<'_, Any>, subject: &str, prefix: &str) -> Result<u64, sqlx::Error> {
        let n = sqlx::query("DELETE FROM event WHERE subject = $1 AND kind LIKE $2")
            .bind(subject)
            .bind(format!("{prefix}%"))
            .execute(&mut **tx)
            .await?;
        let waiting = sqlx::query("DELETE FROM event_intake WHERE subject = $1 AND kind LIKE $2")
            .bind(subject)
            .bind(format!("{prefix}%"))
            .execute(&mut **tx)
            .await?;
        Ok(n.rows_affected() + waiting.rows_affected())
    }

    /// Appends inside `tx`; call [`Events::announce`] after it commits.
    pub async fn append_in(
        tx: &mut Transaction<'_, Any>,
        backend: Backend,
        kind: &str,
        subject: Option<&str>,
        payload: &Value,
    ) -> Result<(), sqlx::Error> {
        Self::append_all_in(tx, backend, &[(kind, subject, payload)]).await
    }

    /// Appends `events` (`kind, subject, payload`), in order, inside `tx`,
    /// one insert per 64 events, since each statement is a round trip to
    /// the database. On SQLite they are numbered at once (the head taken
    /// once); on PostgreSQL they wait in the intake for the sequencer
    /// ([`sequencer`]), so writers of several nodes never wait on each
    /// other for the head. Call [`Events::announce`] after it commits.
    pub async fn append_all_in(
        tx: &mut Transaction<'_, Any>,
        backend: Backend,
        events: &[(&str, Option<&str>, &Value)],
    ) -> Result<(), sqlx::Error> {
        if events.is_empty() {
            return Ok(());
        }
        if backend == Backend::Postgres {
            return sequencer::take_in(tx, events, now_ms()).await;
        }
        let last: i64 = sqlx::query_scalar("UPDATE event_head SET seq = seq + $1 WHERE id = 1 RETURNING seq")
            .bind(events.len() as i64)
            .fetch_one(&mut **tx)
            .await?;
        let first = last - events.len() as i64 + 1;
        let at = now_ms();
        for (c, chunk) in events.chunks(ROWS_PER_INSERT).enumerate() {
            let sql = format!(
                "INSERT INTO event (seq, kind, subject, payload, at) VALUES {}",
                values_placeholders(chunk.len(), 5)
            );
            let mut insert = sqlx::query(&sql);
            for (i, (kind, subject, payload)) in chunk.iter().enumerate() {
                let seq = first + (c * ROWS_PER_INSERT + i) as i64;
                insert = insert.bind(seq).bind(*kind).bind(*subject).bind(payload.to_string()).bind(at);
            }
            insert.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Wakes this process's readers after an append committed.
    pub fn announce(&self) {
        let _ = self.news.send(0);
    }

    /// Appends in the next group commit and announces it.
    pub async fn publish(&self, kind: &str, subject: Option<&str>, payload: &Value) -> Result<(), sqlx::Error> {
        let (backend, kind, subject, payload) =
            (self.db.backend, kind.to_string(), subject.map(str::to_string), payload.clone());
        self.db
            .write(move |tx| {
                let (kind, subject, payload) = (kind.clone(), subject.clone(), payload.clone());
                Box::pin(async move { Self::append_in(tx, backend, &kind, subject.as_deref(), &payload).await })
            })
            .await?;
        self.announce();
        Ok(())
    }

    /// Numbers what waits in the intake (PostgreSQL), so a reader sees
    /// every append that committed before it asked.
    async fn catch_up(&self) -> Result<(), sqlx::Error> {
        if self.db.backend == Backend::Postgres && sequencer::pending(&self.db).await? {
            sequencer::sequence(&self.db).await?;
        }
        Ok(())
    }

    /// Events after `after`, oldest first, at most `limit`.
    pub async fn list(&self, after: i64, limit: i64) -> Result<Vec<Event>, sqlx::Error> {
        self.catch_up().await?;
        sqlx::query_as::<_, Event>("SELECT * FROM event WHERE seq > $1 ORDER BY seq LIMIT $2")
            .bind(after)
            .bind(limit.clamp(1, 1000))
            .fetch_all(&self.db.pool)
            .await
    }

    /// The newest sequence number (0 when there are no events).
    pub async fn head(&self) -> Result<i64, sqlx::Error> {
        self.catch_up().await?;
        let row = sqlx::query("SELECT seq FROM event_head WHERE id = 1").fetch_one(&self.db.pool).await?;
        row.try_get("seq")
    }

    /// A subscription to this process's wake-ups. Take it before reading,
    /// so an append between the read and the wait is not missed.
    pub fn subscribe(&self) -> broadcast::Receiver<i64> {
        self.news.subscribe()
    }

    /// Waits until something may have been appended, or `timeout` passes.
    /// Callers re-read with [`Events::list`]; a wake-up may be spurious.
    pub async fn wait(&self, news: &mut broadcast::Receiver<i64>, timeout: Duration) {
        // SQLite has no notifications across processes; a short poll
        // interval bounds how late another process's event is seen.
        let timeout = if self.db.backend == Backend::Sqlite { timeout.min(Duration::from_secs(1)) } else { timeout };
        let _ = tokio::time::timeout(timeout, news.recv()).await;
    }
}

/// Least time between the starts of two moves this process's listener
/// makes. Every append notifies every node; under load, one move then
/// takes what many appends queued instead of each append costing a move
/// (a lock, a read, the head, an insert, a delete and a commit) on every
/// node. Readers do not wait for it: they sequence before they read.
const MOVE_EVERY: Duration = Duration::from_millis(10);

/// Forwards PostgreSQL notifications to this process's readers, and
/// sequences an intake that committed (when told, at most every
/// [`MOVE_EVERY`], and once a second in case a notification was missed),
/// reconnecting when the connection drops.
async fn listen(db: Db, news: Arc<broadcast::Sender<i64>>) {
    let sequence = async |db: &Db| {
        if let Err(e) = sequencer::sequence(db).await {
            tracing::warn!(error = %e, "cannot number the events waiting in the intake; retrying");
        }
    };
    loop {
        match sqlx::postgres::PgListener::connect(&db.url).await {
            Ok(mut listener) => {
                if listener.listen_all([CHANNEL, sequencer::INTAKE_CHANNEL]).await.is_ok() {
                    sequence(&db).await;
                    let mut moved_at = tokio::time::Instant::now();
                    loop {
                        match tokio::time::timeout(Duration::from_secs(1), listener.recv()).await {
                            Ok(Ok(note)) if note.channel() == sequencer::INTAKE_CHANNEL => {
                                tokio::time::sleep_until(moved_at + MOVE_EVERY).await;
                                // What arrived meanwhile is taken by this move;
                                // wake-ups for readers are passed on.
                                while let Ok(Ok(note)) = tokio::time::timeout(Duration::ZERO, listener.recv()).await {
                                    if note.channel() != sequencer::INTAKE_CHANNEL {
                                        let _ = news.send(0);
                                    }
                                }
                                moved_at = tokio::time::Instant::now();
                                sequence(&db).await;
                            }
                            Ok(Ok(_)) => {
                                let _ = news.send(0);
                            }
                            Ok(Err(_)) => break,
                            Err(_) => {
                                if matches!(sequencer::pending(&db).await, Ok(true)) {
                                    sequence(&db).await;
                                }
                            }
                        }
                        if Arc::strong_count(&news) == 1 {
                            return;
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot listen for events; retrying"),
        }
        if Arc::strong_count(&news) == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
