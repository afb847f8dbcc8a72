//! Audit rows that stand alone (a read call's `capability.invoke` row,
//! which commits with nothing else) from many callers, appended together:
//! one task takes whatever rows are waiting, appends them in one piece of
//! the next group commit — three statements however many rows
//! ([`Audit::append_all_in`]) — and answers each caller once they are
//! committed. Reads are the most frequent calls; a row each in a piece of
//! its own made the audit log the bulk of a read's cost. Should that piece
//! fail, each caller's rows are appended again alone, so one caller's
//! failure is never another's.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::{Audit, NewAuditEntry};
use crate::store::Db;
use crate::store::batch::gather;

/// Most callers whose rows are appended together.
const MAX_CALLERS: usize = 256;

struct Waiting {
    rows: Vec<NewAuditEntry>,
    reply: oneshot::Sender<Result<(), String>>,
}

/// A queue of standalone audit rows into the group commit.
#[derive(Clone)]
pub struct RowQueue {
    queue: mpsc::UnboundedSender<Waiting>,
}

impl RowQueue {
    /// Starts the queue's task, which ends when the last handle goes. Must
    /// be called inside a tokio runtime.
    pub fn start(db: Db) -> RowQueue {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(append_waiting(db, waiting));
        RowQueue { queue }
    }

    /// Appends `rows` in order, answering once they are committed.
    pub async fn append(&self, rows: Vec<NewAuditEntry>) -> Result<(), sqlx::Error> {
        let (reply, answer) = oneshot::channel();
        let failed = |why: &str| sqlx::Error::Io(std::io::Error::other(why.to_string()));
        self.queue.send(Waiting { rows, reply }).map_err(|_| failed("the audit queue has stopped"))?;
        match answer.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(failed(&why)),
            Err(_) => Err(failed("the audit queue stopped before answering")),
        }
    }
}

async fn append_waiting(db: Db, mut waiting: mpsc::UnboundedReceiver<Waiting>) {
    // One group at a time: rows gather while the last group commits, and
    // the bigger the group, the less each row costs.
    while let Some(callers) = gather(&mut waiting, MAX_CALLERS).await {
        let rows: Vec<NewAuditEntry> = callers.iter().flat_map(|c| c.rows.iter().cloned()).collect();
        let together = append(&db, rows).await;
        if together.is_ok() || callers.len() == 1 {
            for caller in callers {
                let _ = caller.reply.send(together.clone());
            }
            continue;
        }
        // Each caller's rows alone, all queued at once (so they may share
        // a commit again), each answered with its own outcome.
        let alone: Vec<_> = callers.into_iter().map(|c| (append(&db, c.rows), c.reply)).collect();
        for (appended, reply) in alone {
            let _ = reply.send(appended.await);
        }
    }
}

/// Queues `rows` in the next group commit when called; the answer is the
/// returned future's.
fn append(db: &Db, rows: Vec<NewAuditEntry>) -> impl Future<Output = Result<(), String>> + use<> {
    let rows = Arc::new(rows);
    let written = db.write(move |tx| {
        let rows = rows.clone();
        Box::pin(async move { Audit::append_all_in(tx, &rows).await.map(|_| ()) })
    });
    async move { written.await.map_err(|e: sqlx::Error| e.to_string()) }
}
