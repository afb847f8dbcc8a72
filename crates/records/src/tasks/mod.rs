//! Durable tasks: work that must survive restarts (`task` table) with a
//! kind, a subject, a JSON payload, attempts with exponential backoff, a
//! dedupe key (one active task per key), and a lease that a worker renews
//! while it works. A worker whose lease lapses is replaced by another; the
//! lease token fences the old one out, so a task completes once. Every
//! change of a task's state goes through the database's group commit
//! (`store::batch`), batched with whatever else is being written.

mod outcome;
mod queue;
pub mod worker;

use std::time::Duration;

use sqlx::{Any, Row, Transaction};

use outcome::{Bind, text};
pub use queue::QueueState;
pub use worker::{HandlerError, HandlerFuture, TaskHandler, Worker, WorkerConfig};

use crate::store::{Backend, Db, new_id, now_ms};

/// Task statuses and the task record: the contract's, which guests read
/// through `task.get` and friends.
pub use capstan_contract::records::Task;
pub use capstan_contract::status::TaskStatus;

fn json_col(r: &sqlx::any::AnyRow, col: &str) -> Result<Option<serde_json::Value>, sqlx::Error> {
    let text: Option<String> = r.try_get(col)?;
    text.map(|t| serde_json::from_str(&t).map_err(|e| sqlx::Error::Decode(Box::new(e)))).transpose()
}

/// A task read from its row.
fn task_from_row(r: &sqlx::any::AnyRow) -> Result<Task, sqlx::Error> {
    let status: String = r.try_get("status")?;
    Ok(Task {
        id: r.try_get("id")?,
        kind: r.try_get("kind")?,
        subject: r.try_get("subject")?,
        payload: json_col(r, "payload")?.unwrap_or(serde_json::Value::Null),
        status: TaskStatus::parse(&status).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        attempts: r.try_get("attempts")?,
        max_attempts: r.try_get("max_attempts")?,
        run_after: r.try_get("run_after")?,
        dedupe_key: r.try_get("dedupe_key")?,
        lease_owner: r.try_get("lease_owner")?,
        lease_token: r.try_get("lease_token")?,
        lease_expires_at: r.try_get("lease_expires_at")?,
        result: json_col(r, "result")?,
        last_error: r.try_get("last_error")?,
        created_by: r.try_get("created_by")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// A task to enqueue.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub kind: String,
    pub subject: Option<String>,
    pub payload: serde_json::Value,
    pub dedupe_key: Option<String>,
    pub max_attempts: i64,
    pub created_by: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("no task with id {0}")]
    NotFound(String),
    #[error("task {0} is {1} and cannot be {2}")]
    WrongState(String, &'static str, &'static str),
    #[error("the lease on task {0} was lost to another worker")]
    LeaseLost(String),
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

impl crate::store::batch::WriteError for TaskError {
    fn is_conflict(&self) -> bool {
        matches!(self, TaskError::Sql(e) if crate::store::batch::is_conflict(e))
    }
}

/// Backoff before attempt `attempts + 1`: 1 s doubling, at most 5 minutes.
pub fn backoff(attempts: i64) -> Duration {
    let exp = attempts.clamp(0, 9) as u32;
    Duration::from_secs(1u64 << exp).min(Duration::from_secs(300))
}

/// The task store.
#[derive(Clone)]
pub struct Tasks {
    db: Db,
}

/// Turns off, until [`PLAN_AS_BEFORE`], the plans that read every queued
/// task and sort them (PostgreSQL); answers the settings as they were.
const PICK_FROM_THE_INDEX: &str = "SELECT current_setting('enable_bitmapscan'), current_setting('enable_sort'), \
     set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true)";

/// Puts back the settings [`PICK_FROM_THE_INDEX`] answered.
const PLAN_AS_BEFORE: &str = "SELECT set_config('enable_bitmapscan', $1, true), set_config('enable_sort', $2, true)";

impl Tasks {
    pub fn new(db: Db) -> Tasks {
        Tasks { db }
    }

    /// The pool, for operators' and tests' direct queries.
    pub fn pool(&self) -> sqlx::AnyPool {
        self.db.pool.clone()
    }

    /// Enqueues a task; with a dedupe key that an active task already holds,
    /// returns that task instead (and `false`).
    pub async fn enqueue(&self, new: &NewTask) -> Result<(Task, bool), TaskError> {
        let new = new.clone();
        let (id, created) = self
            .db
            .write(move |tx| {
                let new = new.clone();
                Box::pin(async move { Tasks::enqueue_in(tx, &new).await })
            })
            .await?;
        Ok((self.get(&id).await?.ok_or_else(|| TaskError::NotFound(id))?, created))
    }

    /// Enqueues a task within `tx`, so it is queued exactly when the change
    /// that calls for it commits: the id of the task, and whether it is new
    /// (`false`: an active task already held the dedupe key).
    pub async fn enqueue_in(tx: &mut Transaction<'_, Any>, new: &NewTask) -> Result<(String, bool), TaskError> {
        // The key's active task, if any, is read after the insert did
        // nothing: another writer may queue the same key at the same moment
        // (writes of several nodes do not take turns), and the insert then
        // waits for it rather than failing. Should that task end between the
        // two statements, the insert is tried again.
        for _ in 0..3 {
            let id = new_id();
            let now = now_ms();
            let inserted = sqlx::query(
                "INSERT INTO task (id, kind, subject, payload, status, attempts, max_attempts, run_after, \
                 dedupe_key, created_by, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, 'queued', 0, $5, $6, $7, $8, $6, $6) \
                 ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING",
            )
            .bind(&id)
            .bind(&new.kind)
            .bind(&new.subject)
            .bind(new.payload.to_string())
            .bind(new.max_attempts.max(1))
            .bind(now)
            .bind(&new.dedupe_key)
            .bind(&new.created_by)
            .execute(&mut **tx)
            .await?
            .rows_affected();
            let Some(key) = new.dedupe_key.as_ref().filter(|_| inserted == 0) else { return Ok((id, true)) };
            let existing: Option<String> =
                sqlx::query_scalar("SELECT id FROM task WHERE dedupe_key = $1 AND status IN ('queued', 'running')")
                    .bind(key)
                    .fetch_optional(&mut **tx)
                    .await?;
            if let Some(existing) = existing {
                return Ok((existing, false));
            }
        }
        Err(TaskError::Sql(sqlx::Error::Protocol(format!(
            "the task under dedupe key {:?} kept changing while it was queued",
            new.dedupe_key.as_deref().unwrap_or_default()
        ))))
    }

    /// Whether a task of `kind` was queued within the last `within`: a
    /// schedule that several nodes keep skips its turn when another node's
    /// came first, so the cluster runs it about once per interval.
    pub async fn queued_within(&self, kind: &str, within: Duration) -> Result<bool, sqlx::Error> {
        let since = now_ms() - within.as_millis() as i64;
        let one: Option<i64> = sqlx::query_scalar("SELECT 1 FROM task WHERE kind = $1 AND created_at >= $2 LIMIT 1")
            .bind(kind)
            .bind(since)
            .fetch_optional(&self.db.pool)
            .await?;
        Ok(one.is_some())
    }

    pub async fn get(&self, id: &str) -> Result<Option<Task>, sqlx::Error> {
        let row = sqlx::query("SELECT * FROM task WHERE id = $1").bind(id).fetch_optional(&self.db.pool).await?;
        row.map(|r| task_from_row(&r)).transpose()
    }

    /// Tasks, newest first, optionally only those about `subject`.
    pub async fn list(&self, subject: Option<&str>, limit: i64) -> Result<Vec<Task>, sqlx::Error> {
        let rows = match subject {
            Some(s) => {
                sqlx::query("SELECT * FROM task WHERE subject = $1 ORDER BY created_at DESC, id LIMIT $2")
                    .bind(s)
                    .bind(limit)
                    .fetch_all(&self.db.pool)
                    .await?
            }
            None => {
                sqlx::query("SELECT * FROM task ORDER BY created_at DESC, id LIMIT $1")
                    .bind(limit)
                    .fetch_all(&self.db.pool)
                    .await?
            }
        };
        rows.iter().map(task_from_row).collect()
    }

    /// As [`Tasks::list`], leaving out the tasks of the kinds in `fold`
    /// unless they failed (a failure stays in sight); also says how many
    /// were left out.
    pub async fn list_folding(
        &self,
        subject: Option<&str>,
        limit: i64,
        fold: &[&str],
    ) -> Result<(Vec<Task>, i64), sqlx::Error> {
        if fold.is_empty() {
            return Ok((self.list(subject, limit).await?, 0));
        }
        // $1 the subject (NULL for any), then the folded kinds, then the limit.
        let kinds: Vec<String> = (0..fold.len()).map(|i| format!("${}", i + 2)).collect();
        let folded = format!("(kind IN ({}) AND status NOT IN ('failed', 'dead'))", kinds.join(", "));
        let about = "($1 IS NULL OR subject = $1)";
        let limit_at = fold.len() + 2;
        let list_sql =
            format!("SELECT * FROM task WHERE {about} AND NOT {folded} ORDER BY created_at DESC, id LIMIT ${limit_at}");
        let count_sql = format!("SELECT COUNT(*) FROM task WHERE {about} AND {folded}");
        let mut list = sqlx::query(&list_sql).bind(subject);
        let mut count = sqlx::query_scalar::<_, i64>(&count_sql).bind(subject);
        for kind in fold {
            list = list.bind(*kind);
            count = count.bind(*kind);
        }
        let rows = list.bind(limit).fetch_all(&self.db.pool).await?;
        let hidden = count.fetch_one(&self.db.pool).await?;
        Ok((rows.iter().map(task_from_row).collect::<Result<_, _>>()?, hidden))
    }

    /// Takes the next ready task (queued and due, or running with a lapsed
    /// lease) for `owner`, with a fresh lease token.
    pub async fn claim(&self, owner: &str, lease: Duration) -> Result<Option<Task>, sqlx::Error> {
        self.claim_among(owner, lease, None).await
    }

    /// Claims the next ready task whose kind is one of `kinds` (any kind
    /// when `None`): a worker takes only work it has a handler for, and
    /// leaves the rest for one that has.
    pub(crate) async fn claim_among(
        &self,
        owner: &str,
        lease: Duration,
        kinds: Option<&[&str]>,
    ) -> Result<Option<Task>, sqlx::Error> {
        let now = now_ms();
        let token = new_id();
        let expires = now + lease.as_millis() as i64;
        let of_kind = match kinds {
            None => String::new(),
            Some([]) => return Ok(None),
            Some(kinds) => {
                let marks: Vec<String> = (0..kinds.len()).map(|i| format!("${}", i + 2)).collect();
                format!(" AND kind IN ({})", marks.join(", "))
            }
        };
        // The claimed row comes back with the update: no second read.
        let update = "UPDATE task SET status = 'running', attempts = attempts + 1, lease_owner = $2, \
                      lease_token = $3, lease_expires_at = $4, updated_at = $1 WHERE id = $5 RETURNING *";
        // A task whose worker's lease lapsed goes first (it was started
        // before anything still queued), then the queued ones in order. Two
        // queries, each read in order off the `task_claim_order` index: one
        // query with both conditions would sort every ready task per claim.
        // PostgreSQL lets concurrent workers skip each other's locked rows
        // (a batch's own earlier claims it sees as running already);
        // SQLite's one writer already serialises claims.
        let lock = match self.db.backend {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let picks = [
            format!(
                "SELECT id FROM task WHERE status = 'running' AND lease_expires_at < $1{of_kind} \
                 ORDER BY run_after, id LIMIT 1{lock}"
            ),
            format!(
                "SELECT id FROM task WHERE status = 'queued' AND run_after <= $1{of_kind} \
                 ORDER BY run_after, id LIMIT 1{lock}"
            ),
        ];
        let kinds: Vec<String> = kinds.unwrap_or_default().iter().map(|k| k.to_string()).collect();
        let owner = owner.to_string();
        let postgres = self.db.backend == Backend::Postgres;
        self.db
            .write(move |tx| {
                let (picks, kinds, owner, token) = (picks.clone(), kinds.clone(), owner.clone(), token.clone());
                Box::pin(async move {
                    // PostgreSQL plans the pick from the table's statistics,
                    // which lag a burst of queued tasks: believing a few
                    // rows are queued, it reads every queued row and sorts
                    // them for each claim (10 ms at 20,000 queued, against
                    // 0.1 ms read off the index in order). The pick is read
                    // off the index whatever the statistics say; the
                    // settings go back for the rest of the batch.
                    let before: Option<(String, String, String, String)> = match postgres {
                        true => Some(sqlx::query_as(PICK_FROM_THE_INDEX).fetch_one(&mut **tx).await?),
                        false => None,
                    };
                    let mut found = None;
                    for pick in &picks {
                        let mut query = sqlx::query_scalar::<_, String>(pick).bind(now);
                        for kind in &kinds {
                            query = query.bind(kind);
                        }
                        found = query.fetch_optional(&mut **tx).await?;
                        if found.is_some() {
                            break;
                        }
                    }
                    if let Some((bitmap, sort, _, _)) = before {
                        sqlx::query(PLAN_AS_BEFORE).bind(bitmap).bind(sort).execute(&mut **tx).await?;
                    }
                    let Some(id) = found else {
                        return Ok::<_, sqlx::Error>(None);
                    };
                    let row = sqlx::query(update)
                        .bind(now)
                        .bind(&owner)
                        .bind(&token)
                        .bind(expires)
                        .bind(&id)
                        .fetch_one(&mut **tx)
                        .await?;
                    task_from_row(&row).map(Some)
                })
            })
            .await
    }

    /// Extends the lease; fails when another worker took the task over.
    pub async fn renew(&self, task: &Task, lease: Duration) -> Result<(), TaskError> {
        let n = self
            .update(
                "UPDATE task SET lease_expires_at = $1 WHERE id = $2 AND lease_token = $3 AND status = 'running'",
                vec![
                    Bind::Int(now_ms() + lease.as_millis() as i64),
                    text(&task.id),
                    Bind::Text(task.lease_token.clone()),
                ],
                None,
            )
            .await?;
        if n == 0 { Err(TaskError::LeaseLost(task.id.clone())) } else { Ok(()) }
    }

    /// Cancels a queued or running task. A running handler finds out when it
    /// next renews its lease.
    pub async fn cancel(&self, id: &str) -> Result<Task, TaskError> {
        let n = self
            .update(
                "UPDATE task SET status = 'cancelled', lease_token = NULL, updated_at = $1 \
                 WHERE id = $2 AND status IN ('queued', 'running')",
                vec![Bind::Int(now_ms()), text(id)],
                None,
            )
            .await?;
        let task = self.get(id).await?.ok_or_else(|| TaskError::NotFound(id.to_string()))?;
        if n == 0 {
            return Err(TaskError::WrongState(id.to_string(), task.status.as_str(), "cancelled"));
        }
        Ok(task)
    }

    /// Queues a dead, failed or cancelled task again with fresh attempts.
    pub async fn retry(&self, id: &str) -> Result<Task, TaskError> {
        let n = self
            .update(
                "UPDATE task SET status = 'queued', attempts = 0, run_after = $1, last_error = NULL, updated_at = $1 \
                 WHERE id = $2 AND status IN ('dead', 'failed', 'cancelled')",
                vec![Bind::Int(now_ms()), text(id)],
                None,
            )
            .await;
        let task = self.get(id).await?.ok_or_else(|| TaskError::NotFound(id.to_string()))?;
        match n {
            Ok(1) => Ok(task),
            Ok(_) => Err(TaskError::WrongState(id.to_string(), task.status.as_str(), "retried")),
            // Another active task holds the same dedupe key.
            Err(e) if crate::store::is_unique_violation(&e) => {
                Err(TaskError::WrongState(id.to_string(), "duplicated by an active task", "retried"))
            }
            Err(e) => Err(e.into()),
        }
    }
}
