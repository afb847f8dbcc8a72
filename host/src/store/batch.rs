//! Group commit: the hot paths' writes (audit appends with their events,
//! ledger claims and finishes, run events, task state) are handed to one
//! writer per pool as a piece of work over a transaction. The writer takes
//! whatever is queued, runs each piece in one transaction, commits once —
//! one sync for the whole batch — and only then answers each caller, so a
//! caller's promise is what it was with a transaction of its own (a claim
//! on the synced pool is on disk before its caller hears of it), and only
//! the number of transactions and syncs drops.
//!
//! A piece that fails fails alone: the batch is rolled back, that piece is
//! answered with its error (it changed nothing), and the others run again
//! in a new transaction. So a piece may run more than once before the
//! commit that keeps it: it must only touch the database through the
//! transaction it is given, and compute what it writes from what it reads
//! there. A piece must never wait on another write of its own pool, which
//! would wait on it.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use sqlx::{Any, AnyPool, Transaction};
use tokio::sync::{mpsc, oneshot};

use super::Backend;

/// The transaction a piece of work runs in.
pub type Tx = Transaction<'static, Any>;

/// Most pieces committed together.
const MAX_BATCH: usize = 256;

/// One queued piece of work, whatever it returns.
trait Job: Send {
    /// Runs the work in `tx`, keeping its answer; `false` when it failed.
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool>;
    /// Answers the caller: its own error, or — when its work succeeded —
    /// its answer if the batch committed, else why the batch did not.
    fn answer(self: Box<Self>, committed: Result<(), String>);
}

struct Piece<T, E, F> {
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

/// A queue into one pool's writer.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::UnboundedSender<Box<dyn Job>>,
}

impl Writer {
    /// Starts the writer of `pool`; it stops when the last handle goes.
    /// Must be called inside a tokio runtime.
    pub fn start(pool: AnyPool, backend: Backend) -> Writer {
        let (queue, jobs) = mpsc::unbounded_channel();
        tokio::spawn(write_batches(pool, backend, jobs));
        Writer { queue }
    }

    /// Runs `work` in the next batch and answers once that batch is
    /// committed (or `work`'s own error). `work` may run more than once
    /// (see the module's comment).
    pub async fn write<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: From<sqlx::Error> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let piece: Box<dyn Job> = Box::new(Piece { work, outcome: None, reply });
        self.queue.send(piece).map_err(|_| E::from(failure("the database writer has stopped".into())))?;
        answer.await.unwrap_or_else(|_| Err(E::from(failure("the database writer stopped before answering".into()))))
    }
}

async fn write_batches(pool: AnyPool, backend: Backend, mut queue: mpsc::UnboundedReceiver<Box<dyn Job>>) {
    while let Some(first) = queue.recv().await {
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        commit(&pool, backend, jobs).await;
    }
}

/// Runs `jobs` in one transaction and commits it; a job that fails is
/// answered with its error and the rest run again without it.
async fn commit(pool: &AnyPool, backend: Backend, mut jobs: Vec<Box<dyn Job>>) {
    while !jobs.is_empty() {
        let begun = match backend {
            Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => pool.begin().await,
        };
        let mut tx = match begun {
            Ok(tx) => tx,
            Err(e) => {
                let why = e.to_string();
                for job in jobs {
                    job.answer(Err(why.clone()));
                }
                return;
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
                for job in jobs {
                    job.answer(committed.clone());
                }
                return;
            }
        }
    }
}
