//! Group commit: the hot paths' writes (audit appends with their events,
//! ledger claims and finishes, run events, task state) are handed to the database's one
//! writer as a piece of work over a transaction. The writer takes whatever
//! is queued, runs each piece in one transaction, commits once — one sync
//! for the whole batch — and only then answers each caller, so a caller's
//! promise is what it was with a transaction of its own, and only the
//! number of transactions and syncs drops. A piece may ask to be durable
//! across a power cut (a ledger claim): on SQLite its batch then commits
//! with `synchronous = FULL`, set on the writer's own connection before the
//! batch begins (SQLite does not let a transaction change it); other
//! batches commit with `NORMAL`, durable across a crash. One writer, so
//! the hot paths never wait on each other for SQLite's write lock.
//!
//! On PostgreSQL a batch holds an advisory lock until it commits, as do the
//! write transactions `Db::begin_write` opens, so the batches of several
//! processes on one database run one at a time (each still taking whatever
//! its process queued meanwhile), as SQLite's write lock has them do, and
//! cannot deadlock on the rows they share. (Single statements run on the
//! pool outside a transaction do not take it.)
//!
//! A piece that fails fails alone: the batch is rolled back, that piece is
//! answered with its error (it changed nothing), and the others run again
//! in a new transaction. So a piece may run more than once before the
//! commit that keeps it: it must only touch the database through the
//! transaction it is given, and compute what it writes from what it reads
//! there. A piece must never wait on another write of its own pool, which
//! would wait on it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool, Connection, Executor, Transaction};
use tokio::sync::{mpsc, oneshot};

use super::Backend;

/// The transaction a piece of work runs in, on the writer's connection.
pub type Tx<'c> = Transaction<'c, Any>;

/// Most pieces committed together.
const MAX_BATCH: usize = 256;

/// How a piece's work went in its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ran {
    Done,
    /// It failed on its own account: it is answered with its error.
    Failed,
    /// The database undid the batch because of another writer (a deadlock
    /// or a serialization failure): nothing this piece did was wrong, and
    /// the whole batch runs again.
    Conflict,
}

/// The error of a write handed to the group commit: made from the
/// database's, and able to say whether the database undid it because of
/// another transaction — a deadlock or a serialization failure — which
/// the writer answers by running the batch again, so writers of several
/// nodes never fail each other's writes.
pub trait WriteError: From<sqlx::Error> {
    /// Whether this is the database undoing the work because of another
    /// transaction.
    fn is_conflict(&self) -> bool;
}

impl WriteError for sqlx::Error {
    fn is_conflict(&self) -> bool {
        is_conflict(self)
    }
}

/// Whether `e` is PostgreSQL undoing a transaction because of another one:
/// `40P01` (deadlock detected) or `40001` (serialization failure).
pub fn is_conflict(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("40P01") | Some("40001")),
        _ => false,
    }
}

/// How often a batch undone by another writer is run again before its
/// pieces are told why.
const CONFLICT_RETRIES: usize = 8;

/// One queued piece of work, whatever it returns.
trait Job: Send {
    /// Whether its batch must commit durable across a power cut.
    fn durable(&self) -> bool;
    /// Runs the work in `tx`, keeping its answer.
    fn run<'t, 'c>(&'t mut self, tx: &'t mut Tx<'c>) -> BoxFuture<'t, Ran>;
    /// Answers the caller: its own error, or — when its work succeeded —
    /// its answer if the batch committed, else why the batch did not.
    fn answer(self: Box<Self>, committed: Result<(), String>);
}

struct Piece<T, E, F> {
    durable: bool,
    work: F,
    outcome: Option<Result<T, E>>,
    reply: oneshot::Sender<Result<T, E>>,
}

fn failure(message: String) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(message))
}

impl<T, E, F> Job for Piece<T, E, F>
where
    F: for<'t, 'c> Fn(&'t mut Tx<'c>) -> BoxFuture<'t, Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: WriteError + Send + 'static,
{
    fn durable(&self) -> bool {
        self.durable
    }

    fn run<'t, 'c>(&'t mut self, tx: &'t mut Tx<'c>) -> BoxFuture<'t, Ran> {
        Box::pin(async move {
            let outcome = AssertUnwindSafe((self.work)(tx))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err(E::from(failure("a batched write panicked".into()))));
            let ran = match &outcome {
                Ok(_) => Ran::Done,
                Err(e) if e.is_conflict() => Ran::Conflict,
                Err(_) => Ran::Failed,
            };
            self.outcome = Some(outcome);
            ran
        })
    }

    fn answer(self: Box<Self>, committed: Result<(), String>) {
        let answer = match (self.outcome, committed) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (_, Err(why)) => Err(E::from(failure(format!("the write was not committed: {why}")))),
            (None, Ok(())) => Err(E::from(failure("the write did not run".into()))),
        };
        // A caller that went away no longer wants the answer; what it
        // asked for is done (or not) all the same.
        let _ = self.reply.send(answer);
    }
}

/// A queue into the database's writer.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::UnboundedSender<Box<dyn Job>>,
    /// Transactions this writer committed.
    commits: Arc<AtomicU64>,
}

impl Writer {
    /// Starts the writer over `pool`, which nobody else uses (on SQLite
    /// one connection, made lazily); it stops when the last handle goes.
    /// Must be called inside a tokio runtime.
    ///
    /// On SQLite the writer runs on a thread of its own, kept to one CPU,
    /// with a runtime of its own: sqlx runs a SQLite connection on a
    /// thread it starts from the thread that connects, which then shares
    /// that CPU, so each of a batch's statements is handed to a thread on
    /// the same CPU and back. Between two CPUs each handoff wakes the
    /// other one — on a virtual machine a statement's round trip took
    /// about 60 µs that way against 2 µs on one CPU (the durable benchmark
    /// prints both) — and a batch is several statements.
    pub fn start(pool: AnyPool, backend: Backend) -> Writer {
        let (queue, jobs) = mpsc::unbounded_channel();
        let commits = Arc::new(AtomicU64::new(0));
        let batches = write_batches(pool, backend, jobs, commits.clone());
        match backend {
            Backend::Sqlite => {
                let thread = std::thread::Builder::new().name("capstan-writer".into()).spawn(move || {
                    keep_to_one_cpu();
                    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                        Ok(runtime) => runtime.block_on(batches),
                        Err(e) => tracing::error!("the database writer could not start its runtime: {e}"),
                    }
                });
                if let Err(e) = thread {
                    // Every write is then answered that the writer stopped.
                    tracing::error!("the database writer's thread could not start: {e}");
                }
            }
            Backend::Postgres => {
                tokio::spawn(batches);
            }
        }
        Writer { queue, commits }
    }

    /// How many transactions this writer has committed.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Runs `work` in the next batch and answers once that batch is
    /// committed (or `work`'s own error); `durable` asks for a commit that
    /// survives a power cut. `work` may run more than once (see the
    /// module's comment). The work is queued when `write` is called, not
    /// when its answer is first awaited: a caller may go on and await the
    /// answer later, and what it queues after is committed after it.
    pub fn write<T, E, F>(&self, durable: bool, work: F) -> impl Future<Output = Result<T, E>> + Send + use<T, E, F>
    where
        F: for<'t, 'c> Fn(&'t mut Tx<'c>) -> BoxFuture<'t, Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: WriteError + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let piece: Box<dyn Job> = Box::new(Piece { durable, work, outcome: None, reply });
        let queued = self.queue.send(piece).is_ok();
        async move {
            if !queued {
                return Err(E::from(failure("the database writer has stopped".into())));
            }
            answer
                .await
                .unwrap_or_else(|_| Err(E::from(failure("the database writer stopped before answering".into()))))
        }
    }
}

/// Keeps the calling thread (and the threads it starts) on the last CPU
/// it may use, when it may use more than one: what the SQLite writer's
/// thread does (public for the durable benchmark's anchor). Best effort: a
/// thread left free to move only costs the handoffs' wakes.
pub fn keep_to_one_cpu() {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
        let Ok(allowed) = sched_getaffinity(None) else { return };
        if allowed.count() < 2 {
            return;
        }
        if let Some(cpu) = (0..CpuSet::MAX_CPU).rev().find(|&cpu| allowed.is_set(cpu)) {
            let mut one = CpuSet::new();
            one.set(cpu);
            let _ = sched_setaffinity(None, &one);
        }
    }
}

/// Waits for the next item on `queue`, then takes whatever else is already
/// waiting, `most` in all; `None` once every sender is gone. What a batch
/// is made of, here and where writes are gathered before they reach the
/// writer (`audit::RowQueue`).
pub async fn gather<T>(queue: &mut mpsc::UnboundedReceiver<T>, most: usize) -> Option<Vec<T>> {
    let mut items = vec![queue.recv().await?];
    while items.len() < most {
        match queue.try_recv() {
            Ok(item) => items.push(item),
            Err(_) => break,
        }
    }
    Some(items)
}

async fn write_batches(
    pool: AnyPool,
    backend: Backend,
    mut queue: mpsc::UnboundedReceiver<Box<dyn Job>>,
    commits: Arc<AtomicU64>,
) {
    let mut held = Held { pool, backend, conn: None, durable: None, suspect: false, used: Instant::now() };
    while let Some(jobs) = gather(&mut queue, MAX_BATCH).await {
        if commit(&mut held, jobs).await {
            commits.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs `jobs` in one transaction and commits it; a job that fails is
/// answered with its error and the rest run again without it. Whether a
/// transaction was committed.
async fn commit(held: &mut Held, mut jobs: Vec<Box<dyn Job>>) -> bool {
    let mut conflicts = 0;
    while !jobs.is_empty() {
        let durable = jobs.iter().any(|j| j.durable());
        // A failed begin leaves the connection suspect: the next batch
        // checks it first, and replaces it if the database dropped it.
        let mut tx = match held.begin(durable).await {
            Ok(tx) => tx,
            Err(e) => {
                let why = e.to_string();
                for job in jobs {
                    job.answer(Err(why.clone()));
                }
                return false;
            }
        };
        let mut failed = None;
        for (i, job) in jobs.iter_mut().enumerate() {
            match job.run(&mut tx).await {
                Ran::Done => {}
                Ran::Conflict if conflicts < CONFLICT_RETRIES => {
                    failed = Some(None);
                    break;
                }
                Ran::Failed | Ran::Conflict => {
                    failed = Some(Some(i));
                    break;
                }
            }
        }
        match failed {
            Some(None) => {
                // Another writer's transaction made the database undo this
                // one: the same pieces again, after a pause that grows.
                let _ = tx.rollback().await;
                conflicts += 1;
                tokio::time::sleep(Duration::from_millis(5 << conflicts.min(6))).await;
            }
            Some(Some(i)) => {
                // Nothing of this batch stays; the failed piece is told
                // why, the others go again.
                let _ = tx.rollback().await;
                jobs.remove(i).answer(Ok(()));
            }
            None => {
                let committed = tx.commit().await.map_err(|e| e.to_string());
                let ok = committed.is_ok();
                held.suspect = !ok;
                for job in jobs {
                    job.answer(committed.clone());
                }
                return ok;
            }
        }
    }
    false
}

/// A SQLite connection held unused this long is checked before a batch
/// begins on it.
const IDLE_CHECK: Duration = Duration::from_secs(10);

/// How long a check of the held connection may take before it is given up
/// for dead.
const PING_LIMIT: Duration = Duration::from_secs(5);

/// The writer's connection, kept from one batch to the next. Handed back
/// to the pool and taken again, it would be pinged each way: two more
/// round trips to SQLite's worker thread per batch. A PostgreSQL
/// connection is a socket the server may close at any time (a restart, an
/// idle timeout): it is pinged before every batch, as the pool would, and
/// replaced when it does not answer, so a batch never begins on a
/// connection already known dead.
struct Held {
    pool: AnyPool,
    backend: Backend,
    conn: Option<PoolConnection<Any>>,
    /// Whether `conn` has `synchronous = FULL` (SQLite); `None` when not
    /// known.
    durable: Option<bool>,
    /// Whether the last batch on `conn` did not end well, which may have
    /// left it broken: it is pinged before the next.
    suspect: bool,
    /// When `conn` was last given a batch.
    used: Instant,
}

impl Held {
    /// Begins a batch. On SQLite the connection's `synchronous` is set
    /// first whenever it is not known to be what the batch needs: a
    /// durable batch must never commit with less.
    async fn begin(&mut self, durable: bool) -> Result<Tx<'_>, sqlx::Error> {
        let stale = self.suspect || self.backend == Backend::Postgres || self.used.elapsed() > IDLE_CHECK;
        // A connection whose socket went half-open would not answer at
        // all; the writer, and every write behind it, must not wait on it.
        if let (true, Some(conn)) = (stale, self.conn.as_mut())
            && !matches!(tokio::time::timeout(PING_LIMIT, conn.ping()).await, Ok(Ok(())))
        {
            self.discard();
        }
        if self.conn.is_none() {
            self.conn = Some(self.pool.acquire().await?);
        }
        self.used = Instant::now();
        // Until this batch commits.
        self.suspect = true;
        let conn = self.conn.as_mut().expect("a connection was just taken");
        match self.backend {
            Backend::Sqlite => {
                if self.durable != Some(durable) {
                    self.durable = None;
                    let level = if durable { "PRAGMA synchronous = FULL" } else { "PRAGMA synchronous = NORMAL" };
                    conn.execute(level).await?;
                    self.durable = Some(durable);
                }
                Transaction::begin(&mut **conn, Some("BEGIN IMMEDIATE".into())).await
            }
            // No lock across processes: the rows batches share are taken
            // in one order or not at all (the audit and event heads are
            // the sequencers'), and a batch the database undoes because of
            // another writer runs again.
            Backend::Postgres => conn.begin().await,
        }
    }

    /// Lets the connection go (closed, not handed back): the next batch
    /// takes a new one at once — detached, it no longer holds the pool's
    /// one place while it closes.
    fn discard(&mut self) {
        if let Some(conn) = self.conn.take() {
            let conn = conn.detach();
            tokio::spawn(async move {
                let _ = conn.close().await;
            });
        }
        self.durable = None;
        self.suspect = false;
    }
}

/// The PostgreSQL advisory lock the transactions `Db::begin_write` opens
/// hold until they end: one at a time across every process on the
/// database. Not the group commit's: see [`Held::begin`].
const WRITE_LOCK: i64 = 0x6361_7073_7461_6e01;

/// Takes [`WRITE_LOCK`] in `tx` (PostgreSQL). The less frequent writes
/// (settings, setup, the domain's changes, a run's state) read what they
/// change and count on it not changing under them, as SQLite's one writer
/// has it; taken in turn they do.
pub(super) async fn lock_writes(tx: &mut Tx<'_>) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(WRITE_LOCK).execute(&mut **tx).await.map(|_| ())
}
