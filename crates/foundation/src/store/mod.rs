//! The durable store: one sqlx `Any` pool over SQLite (WAL, a file in the
//! data directory, the default) or PostgreSQL (`--database-url
//! postgres://...`), the migrations for each, and write transactions that
//! take SQLite's write lock up front, or go through the group-commit
//! writer ([`batch`]). Owns connections and schema; the tables' meaning
//! belongs to the modules that use them (ledger, audit).

pub mod batch;
mod columns;

pub use columns::{IntFlag, JsonText};

use std::path::Path;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyPool, Transaction};

/// Which database is behind the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Why the store could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database URL {0:?} is not sqlite:// or postgres://")]
    UnsupportedUrl(String),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// A handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Db {
    pub pool: AnyPool,
    /// Where the claims that must outlive a power cut are written (see
    /// [`Db::begin_durable_write`]): on SQLite a small pool whose commits
    /// sync the write-ahead log; on PostgreSQL the same pool.
    durable: AnyPool,
    pub backend: Backend,
    /// The URL it was opened with (PostgreSQL listeners connect to it).
    pub url: std::sync::Arc<str>,
    /// Batches the hot paths' writes (see [`Db::write`]).
    writer: batch::Writer,
}

/// One schema for both backends: the migrations are written in the SQL the
/// two share (TEXT, BIGINT, `$n` parameters). A change that needs dialects
/// would bring back a folder per backend.
static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// The placeholders of a multi-row insert: `rows` groups of `columns`
/// numbered parameters, `($1, $2), ($3, $4)`, for both backends.
pub fn values_placeholders(rows: usize, columns: usize) -> String {
    let row = |r: usize| {
        let marks: Vec<String> = (1..=columns).map(|k| format!("${}", r * columns + k)).collect();
        format!("({})", marks.join(", "))
    };
    (0..rows).map(row).collect::<Vec<_>>().join(", ")
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// A random identifier (UUID v4, 32 hex digits).
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl Db {
    /// The default database: `capstan.db` in the data directory.
    pub fn default_url(data_dir: &Path) -> String {
        format!("sqlite://{}?mode=rwc", data_dir.join("capstan.db").display())
    }

    /// Connects without migrating.
    pub async fn connect(url: &str) -> Result<Db, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            return Err(StoreError::UnsupportedUrl(url.to_string()));
        };
        let options: AnyConnectOptions = url.parse()?;
        let (pool, durable, writer_pool) = match backend {
            // One writer at a time is SQLite's rule; a few readers beside it
            // are enough, and WAL lets them read while it writes. The group
            // commit writer has a connection of its own, whose
            // `synchronous` it sets whenever a batch needs another level.
            Backend::Sqlite => {
                let pool = sqlite_pool(4, "NORMAL").connect_with(options.clone()).await?;
                let writer = sqlite_pool(1, "NORMAL").connect_lazy_with(options.clone());
                (pool, sqlite_pool(2, "FULL").connect_lazy_with(options), writer)
            }
            // Every commit is durable. The writer keeps a connection of
            // its own, beside the pool's sixteen.
            Backend::Postgres => {
                let pool = AnyPoolOptions::new()
                    .acquire_timeout(Duration::from_secs(30))
                    .max_connections(16)
                    .connect_with(options.clone())
                    .await?;
                let writer = AnyPoolOptions::new()
                    .acquire_timeout(Duration::from_secs(30))
                    .max_connections(1)
                    .connect_lazy_with(options);
                (pool.clone(), pool, writer)
            }
        };
        let writer = batch::Writer::start(writer_pool, backend);
        Ok(Db { pool, durable, backend, url: url.into(), writer })
    }

    /// Begins a write transaction whose commit survives a power cut, not
    /// only a process crash: ledger claims, which must be on disk before
    /// the effect they claim can happen. Other writes commit with
    /// `synchronous = NORMAL` (durable against crashes; the last commits
    /// before a power cut may be lost), which keeps them fast; a lost
    /// result row is found `running` at start and settled by the replay
    /// policy. On PostgreSQL every commit is durable already.
    pub async fn begin_durable_write(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        begin_on_own_task(self.durable.clone(), self.backend).await
    }

    /// Runs `work` in the next group commit of ordinary writes (durable
    /// against a crash, as [`Db::begin_write`]'s) and answers once it is
    /// committed. `work` touches the database only through the transaction
    /// it is given, may run more than once before the commit that keeps it,
    /// and must not wait on another write (see [`batch`]). It is queued
    /// when `write` is called: what the caller writes after it commits
    /// after it, whenever the caller awaits the answer.
    pub fn write<T, E, F>(&self, work: F) -> impl Future<Output = Result<T, E>> + Send + use<T, E, F>
    where
        F: for<'t, 'c> Fn(&'t mut batch::Tx<'c>) -> futures_util::future::BoxFuture<'t, Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: batch::WriteError + Send + 'static,
    {
        self.writer.write(false, work)
    }

    /// How many group commits this handle's writer has made.
    pub fn group_commits(&self) -> u64 {
        self.writer.commits()
    }

    /// [`Db::write`] for what must survive a power cut (ledger claims):
    /// its batch commits with `synchronous = FULL` on SQLite, one sync for
    /// all of it.
    pub async fn write_durable<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: for<'t, 'c> Fn(&'t mut batch::Tx<'c>) -> futures_util::future::BoxFuture<'t, Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: batch::WriteError + Send + 'static,
    {
        self.writer.write(true, work).await
    }

    /// Connects and brings the schema up to date.
    pub async fn open(url: &str) -> Result<Db, StoreError> {
        let db = Db::connect(url).await?;
        db.migrate().await?;
        Ok(db)
    }

    /// Applies pending migrations; returns how many were applied.
    pub async fn migrate(&self) -> Result<usize, StoreError> {
        let migrator = &MIGRATIONS;
        let before = self.applied_migrations().await.unwrap_or(0);
        // Two processes starting on a fresh SQLite file (serve and worker,
        // say) can race to apply the same migration; the loser's attempt
        // fails, and a retry finds the work done. PostgreSQL migrations take
        // an advisory lock and never race.
        let mut attempt = 0;
        loop {
            match migrator.run(&self.pool).await {
                Ok(()) => break,
                Err(e) if self.backend == Backend::Sqlite && attempt < 5 => {
                    attempt += 1;
                    tracing::debug!(error = %e, attempt, "migration raced another process; retrying");
                    tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        let after = self.applied_migrations().await.unwrap_or(before);
        Ok(after.saturating_sub(before))
    }

    /// How many migrations this build carries: its schema's version.
    pub fn schema_version() -> usize {
        MIGRATIONS.migrations.len()
    }

    /// Applies the first `count` migrations only, leaving the schema as an
    /// earlier version of Capstan left it: what an upgrade test starts
    /// from before [`Db::migrate`] takes it the rest of the way.
    pub async fn migrate_first(&self, count: usize) -> Result<(), StoreError> {
        let migrations = MIGRATIONS.migrations[..count.min(Self::schema_version())].to_vec();
        let earlier = sqlx::migrate::Migrator { migrations: migrations.into(), ..sqlx::migrate::Migrator::DEFAULT };
        earlier.run(&self.pool).await?;
        Ok(())
    }

    async fn applied_migrations(&self) -> Result<usize, sqlx::Error> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success = TRUE")
            .fetch_one(&self.pool)
            .await?;
        Ok(n as usize)
    }

    /// Begins a transaction that will write. On SQLite it takes the write
    /// lock up front, so a read-then-write transaction cannot fail to
    /// upgrade when another connection committed in between.
    ///
    /// The transaction is begun on a task of its own. sqlx (0.8) has an
    /// await point after a custom `BEGIN` has run and before the
    /// `Transaction` that would roll it back exists; a caller cancelled
    /// there (a task whose lease was lost, a timeout, an HTTP client that
    /// went away) would return its connection to the pool inside an open
    /// transaction, holding SQLite's write lock for good. On its own task
    /// the begin always finishes, and a transaction nobody is left to take
    /// is dropped, which rolls it back.
    pub async fn begin_write(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        begin_on_own_task(self.pool.clone(), self.backend).await
    }
}

/// Whether `e` is a unique-constraint violation (a lost insert race).
pub fn is_unique_violation(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db.is_unique_violation(),
        _ => false,
    }
}

/// SQLite pool options: `connections` at most, WAL, and `synchronous` as
/// given. A connection is not pinged before it is handed out: it is a
/// thread of this process, not a socket that can go stale, and the ping
/// is a round trip to that thread on every read.
fn sqlite_pool(connections: u32, synchronous: &'static str) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .acquire_timeout(Duration::from_secs(30))
        .max_connections(connections)
        .test_before_acquire(false)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                use sqlx::Executor;
                conn.execute("PRAGMA journal_mode = WAL").await?;
                conn.execute(format!("PRAGMA synchronous = {synchronous}").as_str()).await?;
                conn.execute("PRAGMA busy_timeout = 10000").await?;
                conn.execute("PRAGMA foreign_keys = ON").await?;
                Ok(())
            })
        })
}

/// Begins a write transaction on `pool`, on a task of its own (see
/// [`Db::begin_write`] for why). On PostgreSQL it takes the lock of such
/// transactions ([`batch::lock_writes`]), so they take turns with each
/// other as they do on SQLite; the group commit's batches, the hot path,
/// do not take it.
async fn begin_on_own_task(pool: AnyPool, backend: Backend) -> Result<Transaction<'static, Any>, sqlx::Error> {
    tokio::spawn(async move {
        match backend {
            Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => {
                let mut tx = pool.begin().await?;
                batch::lock_writes(&mut tx).await?;
                Ok(tx)
            }
        }
    })
    .await
    .map_err(|e| sqlx::Error::Io(std::io::Error::other(format!("beginning a transaction failed: {e}"))))?
}

#[cfg(test)]
mod tests {
    #[test]
    fn multi_row_placeholders_number_on() {
        assert_eq!(super::values_placeholders(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(super::values_placeholders(1, 1), "($1)");
    }
}
