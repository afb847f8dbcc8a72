//! The invocation ledger (`capability_invocation`): every propose/execute
//! call is claimed here before its effect can happen, keyed by its
//! idempotency key, and finished with the claim token it was given. The
//! rules: no claim, no call; a recorded success (or accepted pending work)
//! is returned without calling again; the same tool-call id with a different
//! input is a conflict; a finish with a stale token is rejected; running
//! rows of dead owners become `unknown` on start, and nothing is replayed
//! merely because time passed; retention never removes `running` or
//! `unknown` rows.

mod record;
mod uncertain;

use std::time::Duration;

use sqlx::{Any, Transaction};

pub use record::{LedgerStatus, Record};

use crate::store::{Db, new_id, now_ms};

/// How long a process may go without a heartbeat before its running claims
/// are considered orphaned.
pub const OWNER_LEASE: Duration = Duration::from_secs(30);
// A dead process's holds on records run out before its claims are taken
// over, so whoever re-runs an interrupted organization can hold it.
const _: () = assert!(crate::runtime::HOLD_LEASE.as_secs() < OWNER_LEASE.as_secs());

/// The idempotency key of a call:
/// `<id>:v<version>:<scope>:<sha256 of the canonical input>`, where scope is
/// the run, the task, or the explicit user request the call belongs to.
pub fn idempotency_key(id: &str, version: u32, scope: &str, digest: &str) -> String {
    format!("{id}:v{version}:{scope}:{digest}")
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("the claim token is stale: another owner has taken over invocation {0}")]
    StaleToken(String),
    #[error("invocation {0} did not settle in time")]
    NotSettled(String),
    /// An automation grant's budget was spent (nothing was claimed).
    #[error("the grant's daily budget is spent")]
    BudgetSpent,
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

impl crate::store::batch::WriteError for LedgerError {
    fn is_conflict(&self) -> bool {
        matches!(self, LedgerError::Sql(e) if crate::store::batch::is_conflict(e))
    }
}

/// What is being claimed.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    pub key: String,
    pub capability_id: String,
    pub capability_version: u32,
    pub actor_kind: String,
    pub principal: String,
    pub run_id: Option<String>,
    pub task_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub input_digest: String,
}

/// The outcome of a claim.
#[derive(Debug, Clone)]
pub enum Claim {
    /// This caller owns the call: run it, then `finish` with the token.
    Claimed { id: String, token: String },
    /// Already succeeded, or accepted as pending: return this, do not run.
    Recorded(Record),
    /// Another live owner is running it now.
    InFlight(Record),
    /// An earlier attempt's outcome is unknown; the replay policy decides.
    Unknown(Record),
    /// The same tool-call id was used with a different input.
    Conflict(String),
}

/// The ledger of one process (`owner`).
#[derive(Clone)]
pub struct Ledger {
    db: Db,
    owner: String,
}

impl Ledger {
    pub fn new(db: Db, owner: String) -> Ledger {
        Ledger { db, owner }
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Records that this process is alive.
    pub async fn heartbeat(&self) -> Result<(), sqlx::Error> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO process_heartbeat (owner, started_at, heartbeat_at) VALUES ($1, $2, $3) \
             ON CONFLICT (owner) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
        )
        .bind(&self.owner)
        .bind(now)
        .bind(now)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// How many processes (servers, workers) have beaten within the lease.
    pub async fn live_processes(&self) -> Result<i64, sqlx::Error> {
        let cutoff = now_ms() - OWNER_LEASE.as_millis() as i64;
        sqlx::query_scalar("SELECT COUNT(*) FROM process_heartbeat WHERE heartbeat_at > $1")
            .bind(cutoff)
            .fetch_one(&self.db.pool)
            .await
    }

    async fn owner_alive(&self, tx: &mut Transaction<'_, Any>, owner: &str) -> Result<bool, sqlx::Error> {
        if owner == self.owner {
            return Ok(true);
        }
        let cutoff = now_ms() - OWNER_LEASE.as_millis() as i64;
        let alive: Option<i64> = sqlx::query_scalar("SELECT heartbeat_at FROM process_heartbeat WHERE owner = $1")
            .bind(owner)
            .fetch_optional(&mut **tx)
            .await?;
        Ok(alive.is_some_and(|at| at > cutoff))
    }

    /// Claims `req` inside `tx` (which must come from `Db::begin_durable_write`).
    pub(crate) async fn claim_in(
        &self,
        tx: &mut Transaction<'_, Any>,
        req: &ClaimRequest,
    ) -> Result<Claim, LedgerError> {
        if let (Some(run), Some(call)) = (&req.run_id, &req.tool_call_id) {
            let other: Option<String> = sqlx::query_scalar(
                "SELECT input_digest FROM capability_invocation WHERE run_id = $1 AND tool_call_id = $2",
            )
            .bind(run)
            .bind(call)
            .fetch_optional(&mut **tx)
            .await?;
            if other.is_some_and(|d| d != req.input_digest) {
                return Ok(Claim::Conflict(format!("tool call {call} was already made with a different input")));
            }
        }
        let existing = sqlx::query_as::<_, Record>("SELECT * FROM capability_invocation WHERE idempotency_key = $1")
            .bind(&req.key)
            .fetch_optional(&mut **tx)
            .await?;
        let now = now_ms();
        let token = new_id();
        let Some(row) = existing else {
            let id = new_id();
            sqlx::query(
                "INSERT INTO capability_invocation (id, idempotency_key, capability_id, capability_version, actor_kind, \
                 principal, run_id, task_id, tool_call_id, input_digest, status, claim_token, owner, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'running', $11, $12, $13, $13)",
            )
            .bind(&id)
            .bind(&req.key)
            .bind(&req.capability_id)
            .bind(req.capability_version as i64)
            .bind(&req.actor_kind)
            .bind(&req.principal)
            .bind(&req.run_id)
            .bind(&req.task_id)
            .bind(&req.tool_call_id)
            .bind(&req.input_digest)
            .bind(&token)
            .bind(&self.owner)
            .bind(now)
            .execute(&mut **tx)
            .await?;
            return Ok(Claim::Claimed { id, token });
        };
        let record = row;
        match record.status {
            LedgerStatus::Succeeded | LedgerStatus::Pending => Ok(Claim::Recorded(record)),
            LedgerStatus::Running if self.owner_alive(tx, &record.owner).await? => Ok(Claim::InFlight(record)),
            LedgerStatus::Running => {
                let record = self.mark_unknown_in(tx, record).await?;
                Ok(Claim::Unknown(record))
            }
            LedgerStatus::Unknown => Ok(Claim::Unknown(record)),
            LedgerStatus::Failed => {
                // Nothing happened last time; this is a new attempt.
                let id = record.id.clone();
                self.reclaim_in(tx, &record).await.map(|token| Claim::Claimed { id, token })
            }
        }
    }

    /// Claims in a transaction of its own.
    pub async fn claim(&self, req: &ClaimRequest) -> Result<Claim, LedgerError> {
        Ok(self.claim_charging(req, None, 0).await?.expect("a claim without a grant is never refused"))
    }

    /// Claims `req` and, when the claim is new and an automation grant
    /// authorises it, charges the grant one invocation and `bytes` in the
    /// same transaction. `None` when the grant's budget is spent (and
    /// nothing was claimed).
    pub async fn claim_charging(
        &self,
        req: &ClaimRequest,
        grant: Option<&crate::authz::AutomationGrant>,
        bytes: i64,
    ) -> Result<Option<Claim>, LedgerError> {
        for _ in 0..3 {
            let (ledger, req, grant) = (self.clone(), req.clone(), grant.cloned());
            // On disk before the effect can happen, even across a power cut:
            // the batch commits on the synced pool.
            let claimed = self
                .db
                .write_durable(move |tx| {
                    let (ledger, req, grant) = (ledger.clone(), req.clone(), grant.clone());
                    Box::pin(async move {
                        let claim = ledger.claim_in(tx, &req).await?;
                        if let (Claim::Claimed { .. }, Some(grant)) = (&claim, &grant)
                            && !crate::authz::Authz::charge_in(tx, grant, bytes).await?
                        {
                            // Undone with the rest of this piece.
                            return Err(LedgerError::BudgetSpent);
                        }
                        Ok(claim)
                    })
                })
                .await;
            return match claimed {
                Ok(claim) => Ok(Some(claim)),
                Err(LedgerError::BudgetSpent) => Ok(None),
                // Two first claims raced on PostgreSQL; the loser reads the winner's row.
                Err(LedgerError::Sql(e)) if crate::store::is_unique_violation(&e) => continue,
                Err(e) => Err(e),
            };
        }
        Err(LedgerError::NotSettled(req.key.clone()))
    }

    async fn reclaim_in(&self, tx: &mut Transaction<'_, Any>, record: &Record) -> Result<String, LedgerError> {
        let token = new_id();
        let n = sqlx::query(
            "UPDATE capability_invocation SET status = 'running', claim_token = $1, owner = $2, attempts = attempts + 1, \
             effect_started = 0, result = NULL, error = NULL, finished_at = NULL, updated_at = $3 \
             WHERE id = $4 AND claim_token = $5",
        )
        .bind(&token)
        .bind(&self.owner)
        .bind(now_ms())
        .bind(&record.id)
        .bind(&record.claim_token)
        .execute(&mut **tx)
        .await?
        .rows_affected();
        if n == 0 {
            return Err(LedgerError::StaleToken(record.id.clone()));
        }
        Ok(token)
    }

    /// Takes over an `unknown` record for a replay (the replay policy allowed
    /// it): a new token, status running again.
    pub async fn reclaim_unknown(&self, record: &Record) -> Result<String, LedgerError> {
        let mut tx = self.db.begin_durable_write().await?;
        let token = self.reclaim_in(&mut tx, record).await?;
        tx.commit().await?;
        Ok(token)
    }

    async fn mark_unknown_in(&self, tx: &mut Transaction<'_, Any>, mut record: Record) -> Result<Record, LedgerError> {
        let token = new_id();
        sqlx::query(
            "UPDATE capability_invocation SET status = 'unknown', claim_token = $1, updated_at = $2 \
             WHERE id = $3 AND claim_token = $4",
        )
        .bind(&token)
        .bind(now_ms())
        .bind(&record.id)
        .bind(&record.claim_token)
        .execute(&mut **tx)
        .await?;
        crate::authz::Authz::give_back_from_unknown_in(tx).await?;
        record.status = LedgerStatus::Unknown;
        record.claim_token = token;
        Ok(record)
    }

    /// Finishes a claimed call in the next group commit. A token that is
    /// no longer current (recovery took the row over) is rejected and
    /// changes nothing.
    pub async fn finish(
        &self,
        id: &str,
        token: &str,
        status: LedgerStatus,
        result: Option<&str>,
        error: Option<&str>,
        effect_started: bool,
    ) -> Result<(), LedgerError> {
        let finish = Finish {
            id: id.to_string(),
            token: token.to_string(),
            status,
            result: result.map(str::to_string),
            error: error.map(str::to_string),
            effect_started,
        };
        self.db
            .write(move |tx| {
                let finish = finish.clone();
                Box::pin(async move { finish_in(tx, &finish).await })
            })
            .await
    }

    /// Waits until another owner's call with `key` is no longer running.
    pub async fn wait_settled(&self, key: &str, limit: Duration) -> Result<Record, LedgerError> {
        let started = std::time::Instant::now();
        loop {
            let row = sqlx::query_as::<_, Record>("SELECT * FROM capability_invocation WHERE idempotency_key = $1")
                .bind(key)
                .fetch_one(&self.db.pool)
                .await?;
            let record = row;
            if record.status != LedgerStatus::Running || started.elapsed() > limit {
                return if record.status == LedgerStatus::Running {
                    Err(LedgerError::NotSettled(record.id))
                } else {
                    Ok(record)
                };
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits while the row under `key` is running for a live owner (a
    /// process that took a run over must not race the call it inherited);
    /// returns the row as it then stands, or `None` when there is none.
    pub async fn await_unowned(&self, key: &str, limit: Duration) -> Result<Option<Record>, LedgerError> {
        let started = std::time::Instant::now();
        loop {
            let mut tx = self.db.begin_write().await?;
            let row = sqlx::query_as::<_, Record>("SELECT * FROM capability_invocation WHERE idempotency_key = $1")
                .bind(key)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(row) = row else { return Ok(None) };
            let record = row;
            let busy = record.status == LedgerStatus::Running
                && record.owner != self.owner
                && self.owner_alive(&mut tx, &record.owner).await?;
            tx.commit().await?;
            if !busy {
                return Ok(Some(record));
            }
            if started.elapsed() > limit {
                return Err(LedgerError::NotSettled(record.id));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// On a cold start: running rows whose owner is dead become `unknown`
    /// with a new token, so a late finish from the old owner is rejected,
    /// and the approvals they took are given back.
    /// Returns how many rows changed.
    pub async fn recover_orphans(&self) -> Result<u64, sqlx::Error> {
        let cutoff = now_ms() - OWNER_LEASE.as_millis() as i64;
        let now = now_ms();
        let mut tx = self.db.begin_write().await?;
        let n = sqlx::query(
            "UPDATE capability_invocation SET status = 'unknown', claim_token = claim_token || ':recovered:' || $1, \
             updated_at = $2 WHERE status = 'running' AND owner <> $3 AND owner NOT IN \
             (SELECT owner FROM process_heartbeat WHERE heartbeat_at > $4)",
        )
        .bind(now.to_string())
        .bind(now)
        .bind(&self.owner)
        .bind(cutoff)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        crate::authz::Authz::give_back_from_unknown_in(&mut tx).await?;
        tx.commit().await?;
        Ok(n)
    }

    /// The latest observed state of an invocation, only for its principal.
    pub async fn get(&self, id: &str, principal: &str) -> Result<Option<Record>, sqlx::Error> {
        let row = sqlx::query_as::<_, Record>("SELECT * FROM capability_invocation WHERE id = $1 AND principal = $2")
            .bind(id)
            .bind(principal)
            .fetch_optional(&self.db.pool)
            .await?;
        Ok(row)
    }

    /// Removes the receipts made outside any run (a task's, a request's)
    /// whose outcome is known — succeeded, failed, pending — and that last
    /// changed more than `age` ago. Running and unknown rows are never
    /// removed by time; a run's receipts go with the run.
    pub async fn prune(&self, age: Duration) -> Result<u64, sqlx::Error> {
        let cutoff = now_ms() - age.as_millis() as i64;
        let n = sqlx::query(
            "DELETE FROM capability_invocation WHERE run_id IS NULL \
             AND status IN ('succeeded', 'failed', 'pending') AND updated_at < $1",
        )
        .bind(cutoff)
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        Ok(n)
    }
}

/// Removes, inside `tx`, the receipts of run `run_id` whose outcome is
/// known (succeeded, failed, pending); returns how many remain, which are
/// `running` or `unknown` and never removed.
pub async fn remove_run_receipts_in(tx: &mut Transaction<'_, Any>, run_id: &str) -> Result<i64, sqlx::Error> {
    sqlx::query("DELETE FROM capability_invocation WHERE run_id = $1 AND status IN ('succeeded', 'failed', 'pending')")
        .bind(run_id)
        .execute(&mut **tx)
        .await?;
    sqlx::query_scalar("SELECT COUNT(*) FROM capability_invocation WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(&mut **tx)
        .await
}

/// The rows of an agent run's write calls, oldest first.
pub async fn for_run(db: &Db, run_id: &str) -> Result<Vec<Record>, sqlx::Error> {
    let rows =
        sqlx::query_as::<_, Record>("SELECT * FROM capability_invocation WHERE run_id = $1 ORDER BY created_at, id")
            .bind(run_id)
            .fetch_all(&db.pool)
            .await?;
    Ok(rows)
}

/// The rows of capability `id`, oldest first (for tests and operators).
pub async fn by_capability(db: &Db, id: &str) -> Result<Vec<Record>, sqlx::Error> {
    let rows = sqlx::query_as::<_, Record>(
        "SELECT * FROM capability_invocation WHERE capability_id = $1 ORDER BY created_at, id",
    )
    .bind(id)
    .fetch_all(&db.pool)
    .await?;
    Ok(rows)
}

/// Reads a row by id regardless of principal (for tests and operators).
pub async fn by_id(db: &Db, id: &str) -> Result<Option<Record>, sqlx::Error> {
    let row = sqlx::query_as::<_, Record>("SELECT * FROM capability_invocation WHERE id = $1")
        .bind(id)
        .fetch_optional(&db.pool)
        .await?;
    Ok(row)
}

/// How a claimed call ended, to be written with its token.
#[derive(Debug, Clone)]
pub struct Finish {
    pub id: String,
    pub token: String,
    pub status: LedgerStatus,
    pub result: Option<String>,
    pub error: Option<String>,
    pub effect_started: bool,
}

/// Finishes a claimed call inside `tx`; a stale token changes nothing.
pub async fn finish_in(tx: &mut Transaction<'_, Any>, finish: &Finish) -> Result<(), LedgerError> {
    let now = now_ms();
    let n = sqlx::query(
        "UPDATE capability_invocation SET status = $1, result = $2, error = $3, effect_started = $4, \
         finished_at = $5, updated_at = $5 WHERE id = $6 AND claim_token = $7 AND status = 'running'",
    )
    .bind(finish.status.as_str())
    .bind(finish.result.as_deref())
    .bind(finish.error.as_deref())
    .bind(finish.effect_started as i64)
    .bind(now)
    .bind(&finish.id)
    .bind(&finish.token)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if n == 0 {
        return Err(LedgerError::StaleToken(finish.id.clone()));
    }
    Ok(())
}
