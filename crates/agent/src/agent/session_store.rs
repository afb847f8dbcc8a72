//! Where runs' session logs are kept. On SQLite, one machine: a file per
//! run in `AGENT_SESSION_DIR` (else `<data-dir>/agent-sessions`). On
//! PostgreSQL, where several nodes share the database and nothing else:
//! rows of `agent_session_entry`, one per line, so the node that takes a
//! run over reads the log the node before it wrote.
//!
//! The rows keep the files' rules. Lines written without a sync wait in
//! memory and a sync inserts them in one transaction, so a step's answer
//! and its results become durable together; a crash loses at most what
//! was not synced. Each line has the next number of its run, and the
//! primary key refuses a number written twice: a worker that lost its run
//! to another node and writes on fails rather than interleaving.
//!
//! A run started on PostgreSQL by a version that kept files still has its
//! log in the folder: the first open on this node moves it into the rows.

use std::path::PathBuf;

use crate::store::{Backend, Db, values_placeholders};

use super::session_log::{self, SessionLog, SessionState};

/// The lines one insert carries at most (3 parameters each).
const ROWS_PER_INSERT: usize = 200;

/// Where session logs are kept.
#[derive(Clone)]
pub enum SessionStore {
    /// A file per run in a folder (SQLite).
    Files(PathBuf),
    /// Rows of the database every node reaches (PostgreSQL). The folder is
    /// read once per run, for a log an earlier version left there.
    Database { db: Db, folder: PathBuf },
}

/// The unsynced tail and the next line number of a log kept in rows.
pub(crate) struct Rows {
    db: Db,
    run_id: String,
    next_seq: i64,
    pending: Vec<String>,
}

impl Rows {
    pub(crate) fn push(&mut self, line: String) {
        self.pending.push(line);
    }

    /// Whether lines wait for a flush.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Inserts the lines written since the last flush, in one transaction.
    pub(crate) fn flush(&mut self) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        let lines = std::mem::take(&mut self.pending);
        let first = self.next_seq;
        self.next_seq += lines.len() as i64;
        let (db, run_id) = (self.db.clone(), self.run_id.clone());
        async move { insert(&db, &run_id, first, &lines).await.map_err(std::io::Error::other) }
    }
}

async fn insert(db: &Db, run_id: &str, first: i64, lines: &[String]) -> Result<(), sqlx::Error> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut tx = db.pool.begin().await?;
    for (chunk_no, chunk) in lines.chunks(ROWS_PER_INSERT).enumerate() {
        let sql = format!(
            "INSERT INTO agent_session_entry (run_id, seq, body) VALUES {}",
            values_placeholders(chunk.len(), 3)
        );
        let mut query = sqlx::query(&sql);
        for (i, line) in chunk.iter().enumerate() {
            let seq = first + (chunk_no * ROWS_PER_INSERT + i) as i64;
            query = query.bind(run_id.to_string()).bind(seq).bind(line.clone());
        }
        query.execute(&mut *tx).await?;
    }
    tx.commit().await
}

impl SessionStore {
    /// The store for a process over `db`: rows on PostgreSQL, files on
    /// SQLite, the folder being `AGENT_SESSION_DIR` or
    /// `<data_dir>/agent-sessions`.
    pub fn for_db(db: &Db, data_dir: &std::path::Path) -> SessionStore {
        let folder =
            std::env::var_os("AGENT_SESSION_DIR").map(PathBuf::from).unwrap_or_else(|| data_dir.join("agent-sessions"));
        match db.backend {
            Backend::Postgres => SessionStore::Database { db: db.clone(), folder },
            Backend::Sqlite => SessionStore::Files(folder),
        }
    }

    /// Opens run `run_id`'s log for appending, with what it holds.
    pub(crate) async fn open(&self, run_id: &str) -> std::io::Result<(SessionLog, SessionState)> {
        match self {
            SessionStore::Files(dir) => {
                let (dir, id) = (dir.clone(), run_id.to_string());
                tokio::task::spawn_blocking(move || SessionLog::open_file(&dir, &id))
                    .await
                    .map_err(std::io::Error::other)?
            }
            SessionStore::Database { db, folder } => {
                let mut lines = lines_of(db, run_id).await?;
                if lines.is_empty() {
                    lines = adopt_file(db, folder, run_id).await?;
                }
                let session = session_log::replay(lines.iter().map(String::as_str), false, &format!("run {run_id}"))?;
                let rows = Rows {
                    db: db.clone(),
                    run_id: run_id.to_string(),
                    next_seq: lines.len() as i64,
                    pending: Vec::new(),
                };
                Ok((SessionLog::of_rows(rows), session))
            }
        }
    }

    /// The lines of run `run_id`'s log as written (none for a run without one).
    pub async fn lines(&self, run_id: &str) -> std::io::Result<Vec<String>> {
        match self {
            SessionStore::Files(dir) => {
                let path = SessionLog::path(dir, run_id);
                match tokio::fs::read_to_string(&path).await {
                    Ok(text) => Ok(text.lines().map(str::to_string).collect()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                    Err(e) => Err(e),
                }
            }
            SessionStore::Database { db, .. } => lines_of(db, run_id).await,
        }
    }

    /// What run `run_id`'s log says.
    pub async fn read(&self, run_id: &str) -> std::io::Result<SessionState> {
        match self {
            SessionStore::Files(dir) => {
                let path = SessionLog::path(dir, run_id);
                tokio::task::spawn_blocking(move || session_log::read(&path)).await.map_err(std::io::Error::other)?
            }
            SessionStore::Database { db, .. } => {
                let lines = lines_of(db, run_id).await?;
                session_log::replay(lines.iter().map(String::as_str), false, &format!("run {run_id}"))
            }
        }
    }

    /// Removes run `run_id`'s log; one that is not there is no error.
    pub(crate) async fn remove(&self, run_id: &str) -> std::io::Result<()> {
        let remove_file = |dir: &std::path::Path| match std::fs::remove_file(SessionLog::path(dir, run_id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        match self {
            SessionStore::Files(dir) => remove_file(dir),
            SessionStore::Database { db, folder } => {
                sqlx::query("DELETE FROM agent_session_entry WHERE run_id = $1")
                    .bind(run_id.to_string())
                    .execute(&db.pool)
                    .await
                    .map_err(std::io::Error::other)?;
                remove_file(folder)
            }
        }
    }

    /// Runs whose log may have outlived them, to be checked (at most
    /// `limit`): every log's run in a folder; in the database, the runs
    /// whose record is gone.
    pub(crate) async fn runs_to_check(&self, limit: usize) -> std::io::Result<Vec<String>> {
        match self {
            SessionStore::Files(dir) => {
                let entries = match std::fs::read_dir(dir) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => return Err(e),
                };
                Ok(entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".jsonl")).map(str::to_string))
                    .take(limit)
                    .collect())
            }
            SessionStore::Database { db, .. } => {
                // Logs whose run is gone: the rest are never removed here.
                let sql = "SELECT DISTINCT run_id FROM agent_session_entry \
                           WHERE run_id NOT IN (SELECT id FROM agent_run) LIMIT $1";
                sqlx::query_scalar::<_, String>(sql)
                    .bind(limit as i64)
                    .fetch_all(&db.pool)
                    .await
                    .map_err(std::io::Error::other)
            }
        }
    }
}

async fn lines_of(db: &Db, run_id: &str) -> std::io::Result<Vec<String>> {
    sqlx::query_scalar::<_, String>("SELECT body FROM agent_session_entry WHERE run_id = $1 ORDER BY seq")
        .bind(run_id.to_string())
        .fetch_all(&db.pool)
        .await
        .map_err(std::io::Error::other)
}

/// Copies a log file an earlier version wrote for `run_id` into the rows
/// (a torn last line left out), and returns its lines.
async fn adopt_file(db: &Db, folder: &std::path::Path, run_id: &str) -> std::io::Result<Vec<String>> {
    let path = SessionLog::path(folder, run_id);
    let text = match tokio::fs::read_to_string(&path).await {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut lines: Vec<String> = text.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect();
    if !text.ends_with('\n') && lines.last().is_some_and(|l| serde_json::from_str::<serde_json::Value>(l).is_err()) {
        lines.pop();
    }
    insert(db, run_id, 0, &lines).await.map_err(std::io::Error::other)?;
    // The rows hold it now; a file left behind would only mislead.
    if let Err(e) = tokio::fs::remove_file(&path).await {
        tracing::warn!(path = %path.display(), error = %e, "a session log moved into the database could not be removed");
    }
    tracing::info!(run = %run_id, lines = lines.len(), path = %path.display(), "moved a session log file into the database");
    Ok(lines)
}
