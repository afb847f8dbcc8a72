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

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use sqlx::{Any, AnyPool, Executor, Transaction};
use tokio::sync::{mpsc, oneshot};

use super::Backend;

/// The transaction a piece of work runs in.
pub type Tx = Transaction<'static, Any>;

/// Most pieces committed together.
const MAX_BATCH: usize = 256;

/// One queued piece of work, whatever it returns.
trait Job: Send {
    /// Whether its batch must commit durable across a power cut.
    fn durable(&self) -> bool;
    /// Runs the work in `tx`, keeping its answer; `false` when it failed.
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool>;
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
    F: for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: From<sqlx::Error> + Send + 'static,
{
    fn durable(&self) -> bool {
        self.durable
    }

    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool> {
        Box::pin(async move {
            let outcome = AssertUnwindSafe((self.work)(tx))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err(E::from(failure("a batched write panicked".into()))));
            let ok = outcome.is_ok();
            self.outcome = Some(outcome);
            ok
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
    /// one connection); it stops when the last handle goes. Must be called
    /// inside a tokio runtime.
    pub fn start(pool: AnyPool, backend: Backend) -> Writer {
        let (queue, jobs) = mpsc::unbounded_channel();
        let commits = Arc::new(AtomicU64::new(0));
        tokio::spawn(write_batches(pool, backend, jobs, commits.clone()));
        Writer { queue, commits }
    }

    /// How many transactions this writer has committed.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Runs `work` in the next batch and answers once that batch is
    /// committed (or `work`'s own error); `durable` asks for a commit that
    /// survives a power cut. `work` may run more than once (see the
    /// module's comment).
    pub async fn write<T, E, F>(&self, durable: bool, work: F) -> Result<T, E>
    where
        F: for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: From<sqlx::Error> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let piece: Box<dyn Job> = Box::new(Piece { durable, work, outcome: None, reply });
        self.queue.send(piece).map_err(|_| E::from(failure("the database writer has stopped".into())))?;
        answer.await.unwrap_or_else(|_| Err(E::from(failure("the database writer stopped before answering".into()))))
    }
}

async fn write_batches(
    pool: AnyPool,
    backend: Backend,
    mut queue: mpsc::UnboundedReceiver<Box<dyn Job>>,
    commits: Arc<AtomicU64>,
) {
    while let Some(first) = queue.recv().await {
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        if commit(&pool, backend, jobs).await {
            commits.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs `jobs` in one transaction and commits it; a job that fails is
/// answered with its error and the rest run again without it. Whether a
/// transaction was committed.
async fn commit(pool: &AnyPool, backend: Backend, mut jobs: Vec<Box<dyn Job>>) -> bool {
    while !jobs.is_empty() {
        let durable = jobs.iter().any(|j| j.durable());
        let begun = begin(pool, backend, durable).await;
        let mut tx = match begun {
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
            if !job.run(&mut tx).await {
                failed = Some(i);
                break;
            }
        }
        match failed {
            Some(i) => {
                // Nothing of this batch stays; the failed piece is told
                // why, the others go again.
                let _ = tx.rollback().await;
                jobs.remove(i).answer(Ok(()));
            }
            None => {
                let committed = tx.commit().await.map_err(|e| e.to_string());
                let ok = committed.is_ok();
                for job in jobs {
                    job.answer(committed.clone());
                }
                return ok;
            }
        }
    }
    false
}

/// Begins a batch on the writer's connection. On SQLite the connection's
/// `synchronous` is set first, every time: a connection the pool opened
/// again would start from its default, and a durable batch must never
/// commit with less.
async fn begin(pool: &AnyPool, backend: Backend, durable: bool) -> Result<Tx, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    match backend {
        Backend::Sqlite => {
            let level = if durable { "PRAGMA synchronous = FULL" } else { "PRAGMA synchronous = NORMAL" };
            conn.execute(level).await?;
            Transaction::begin(conn, Some("BEGIN IMMEDIATE".into())).await
        }
        Backend::Postgres => {
            let mut tx = Transaction::begin(conn, None).await?;
            lock_writes(&mut tx).await?;
            Ok(tx)
        }
    }
}

/// The PostgreSQL advisory lock a write transaction holds until it ends:
/// one batch (or other write transaction) at a time across every process
/// on the database.
const WRITE_LOCK: i64 = 0x6361_7073_7461_6e01;

/// Takes [`WRITE_LOCK`] in `tx` (PostgreSQL). Batches of different
/// processes, and the transactions `Db::begin_write` opens, lock the same
/// hot rows (the audit and event heads, a grant's budget, a run's row) in
/// whatever order their statements come, which deadlocks two of them and
/// fails a write that did nothing wrong. Taken in turn, as SQLite's write
/// lock takes them, they cannot.
pub(super) async fn lock_writes(tx: &mut Tx) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(WRITE_LOCK).execute(&mut **tx).await.map(|_| ())
}
