//! Approvals: a human's yes to one plan as it stands, for one capability. An
//! approval binds the plan type, plan id, the plan's payload hash and
//! revision, the capability that may act on it, and an expiry.
//! It is requested by anyone, decided only by a console administrator who
//! did not create the plan (directly or through a key they own), authorises
//! one automated call on that plan while the plan is unchanged, and is
//! consumed by the first success: the call takes it before it runs and
//! gives it back when it does not succeed. A plan whose hash or revision
//! moved on makes its approvals stale: they authorise nothing. An
//! administrator may revoke one nobody has used yet (pending, or approved
//! and not consumed); revoked, it authorises nothing.

use serde::Serialize;
use sqlx::{Any, FromRow, Transaction};

pub use capstan_contract::status::ApprovalStatus;

use super::{Authz, AuthzError};
use crate::store::{new_id, now_ms};

/// The plan types approvals can bind, and the capability tag that marks a
/// capability acting on one (`plan:acquisition` → input `planId`).
/// A `replacement` is an organization that replaces files the library
/// holds (an upgrade): its own type, so approving an import never
/// approves replacing a file.
pub const PLAN_TYPES: &[&str] = &["acquisition", "organization", "replacement"];

/// The built-in capability that carries out a plan of `plan_type`: what an
/// approval authorises when its request names no capability.
pub(crate) fn acting_capability(plan_type: &str) -> Option<&'static str> {
    match plan_type {
        "acquisition" => Some("download.submit"),
        "organization" => Some("organize.execute"),
        "replacement" => Some("organize.replace"),
        _ => None,
    }
}

/// How long a requested approval stays decidable and usable.
pub const APPROVAL_TTL_MS: i64 = 24 * 60 * 60 * 1000;

/// A plan as an approval sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanState {
    pub payload_hash: String,
    pub revision: i64,
    /// The principal that created the plan.
    pub created_by: String,
    /// Whether the plan can still be acted on (not submitted, ended or run).
    pub open: bool,
}

/// Where plans live; the domain store implements it.
pub trait PlanSource: Sync {
    fn plan_state(
        &self,
        plan_type: &str,
        plan_id: &str,
    ) -> impl std::future::Future<Output = Result<Option<PlanState>, sqlx::Error>> + Send;
}

/// A stored approval. `stale` is computed when read.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub id: String,
    pub plan_type: String,
    pub plan_id: String,
    /// The one capability this approval lets act on the plan.
    pub capability_id: String,
    pub payload_hash: String,
    pub revision: i64,
    /// `pending`, `approved`, `rejected`, `consumed`, `expired` (pending
    /// past its expiry when the plan was asked about again) or `revoked`.
    #[sqlx(try_from = "String")]
    pub status: ApprovalStatus,
    pub requested_by: String,
    pub plan_creator: String,
    pub decided_by: Option<String>,
    pub expires_at: i64,
    pub consumed_by: Option<String>,
    /// Computed when read: the plan moved on since the approval was asked.
    #[sqlx(skip)]
    pub stale: bool,
}

/// Why an approval that is neither pending nor approved cannot be revoked.
fn not_revocable(approval: &Approval) -> String {
    match (approval.status, &approval.consumed_by) {
        (ApprovalStatus::Consumed, Some(by)) => format!(
            "approval {} was used by invocation {by}; only an unused one can be revoked (a call that does not \
             succeed gives it back)",
            approval.id
        ),
        (status, _) => format!("approval {} is {status}; only an unused one can be revoked", approval.id),
    }
}

fn matches(approval: &Approval, plan: &PlanState) -> bool {
    plan.open && approval.payload_hash == plan.payload_hash && approval.revision == plan.revision
}

impl Authz {
    async fn approval_row(&self, id: &str) -> Result<Approval, AuthzError> {
        sqlx::query("SELECT * FROM approval WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Approval::from_row(&r))
            .transpose()?
            .ok_or_else(|| AuthzError::NotFound("approval", id.to_string()))
    }

    /// An approval, marked stale when its plan has moved on.
    pub async fn approval(&self, plans: &impl PlanSource, id: &str) -> Result<Approval, AuthzError> {
        let mut approval = self.approval_row(id).await?;
        let plan = plans.plan_state(&approval.plan_type, &approval.plan_id).await?;
        approval.stale = approval.status.is_open() && !plan.as_ref().is_some_and(|p| matches(&approval, p));
        Ok(approval)
    }

    /// Asks for a human's approval of a plan as it stands now, for
    /// `capability` to act on it (by default the built-in that carries out
    /// that plan type; the caller checks a named one acts on such plans). An
    /// open request for the same plan state and capability is returned
    /// instead of a second one.
    pub async fn request_approval(
        &self,
        plans: &impl PlanSource,
        plan_type: &str,
        plan_id: &str,
        capability: Option<&str>,
        by: &str,
    ) -> Result<Approval, AuthzError> {
        if !PLAN_TYPES.contains(&plan_type) {
            return Err(AuthzError::Invalid(format!(
                "plan type {plan_type:?} is not one of {}",
                PLAN_TYPES.join(", ")
            )));
        }
        let capability = capability.or(acting_capability(plan_type)).unwrap_or_default();
        let plan = plans
            .plan_state(plan_type, plan_id)
            .await?
            .ok_or_else(|| AuthzError::NotFound("plan", format!("{plan_type}/{plan_id}")))?;
        if !plan.open {
            return Err(AuthzError::Conflict(format!("{plan_type} plan {plan_id} can no longer be approved")));
        }
        let now = now_ms();
        if let Some(row) = sqlx::query(
            "SELECT * FROM approval WHERE plan_type = $1 AND plan_id = $2 AND payload_hash = $3 AND revision = $4 \
             AND status IN ('pending', 'approved') AND expires_at > $5 AND capability_id = $6",
        )
        .bind(plan_type)
        .bind(plan_id)
        .bind(&plan.payload_hash)
        .bind(plan.revision)
        .bind(now)
        .bind(capability)
        .fetch_optional(&self.db.pool)
        .await?
        {
            return Ok(Approval::from_row(&row)?);
        }
        // A request nobody decided in time ends `expired`, so the plan can be
        // asked about again.
        sqlx::query(
            "UPDATE approval SET status = 'expired', updated_at = $1 \
             WHERE status = 'pending' AND expires_at <= $1 AND plan_type = $2 AND plan_id = $3",
        )
        .bind(now)
        .bind(plan_type)
        .bind(plan_id)
        .execute(&self.db.pool)
        .await?;
        let id = new_id();
        let inserted = sqlx::query(
            "INSERT INTO approval (id, plan_type, plan_id, payload_hash, revision, status, requested_by, plan_creator, \
             expires_at, created_at, updated_at, capability_id) VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $9, $10)",
        )
        .bind(&id)
        .bind(plan_type)
        .bind(plan_id)
        .bind(&plan.payload_hash)
        .bind(plan.revision)
        .bind(by)
        .bind(&plan.created_by)
        .bind(now + APPROVAL_TTL_MS)
        .bind(now)
        .bind(capability)
        .execute(&self.db.pool)
        .await;
        match inserted {
            Ok(_) => self.approval(plans, &id).await,
            // Another request for the same plan state won the race: that one.
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                let row = sqlx::query(
                    "SELECT * FROM approval WHERE plan_type = $1 AND plan_id = $2 AND payload_hash = $3 \
                     AND revision = $4 AND capability_id = $5 AND status = 'pending' AND expires_at > $6",
                )
                .bind(plan_type)
                .bind(plan_id)
                .bind(&plan.payload_hash)
                .bind(plan.revision)
                .bind(capability)
                .bind(now)
                .fetch_one(&self.db.pool)
                .await?;
                Ok(Approval::from_row(&row)?)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A console administrator approves or rejects. `payload_hash` is what
    /// the administrator saw; it must still be the plan's. Nobody decides a
    /// plan they created, directly or through an API key they own.
    pub async fn decide_approval(
        &self,
        plans: &impl PlanSource,
        id: &str,
        status: ApprovalStatus,
        payload_hash: &str,
        admin: &str,
    ) -> Result<Approval, AuthzError> {
        if !matches!(status, ApprovalStatus::Approved | ApprovalStatus::Rejected) {
            return Err(AuthzError::Invalid(format!("status {status} is not approved or rejected")));
        }
        let approval = self.approval(plans, id).await?;
        if approval.status != ApprovalStatus::Pending {
            return Err(AuthzError::Conflict(format!("approval {id} is already {}", approval.status)));
        }
        if approval.expires_at <= now_ms() {
            return Err(AuthzError::Conflict(format!("approval {id} has expired")));
        }
        if approval.stale || payload_hash != approval.payload_hash {
            return Err(AuthzError::Conflict(format!(
                "the plan changed since approval {id} was requested (its payload hash is no longer {payload_hash}); request a new approval"
            )));
        }
        let creator = &approval.plan_creator;
        let own_key = match crate::principal::key_of(creator) {
            Some(key) => sqlx::query_scalar::<_, String>("SELECT created_by FROM api_key WHERE id = $1")
                .bind(key)
                .fetch_optional(&self.db.pool)
                .await?
                .is_some_and(|owner| owner == admin),
            None => false,
        };
        if creator == admin || own_key {
            return Err(AuthzError::Forbidden(format!("{admin} created this plan and cannot approve it")));
        }
        // What was checked above is checked again in the update itself.
        let changed = sqlx::query(
            "UPDATE approval SET status = $1, decided_by = $2, updated_at = $3 \
             WHERE id = $4 AND status = 'pending' AND expires_at > $3 AND payload_hash = $5",
        )
        .bind(status.as_str())
        .bind(admin)
        .bind(now_ms())
        .bind(id)
        .bind(payload_hash)
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(AuthzError::Conflict(format!("approval {id} was decided by someone else meanwhile")));
        }
        self.approval(plans, id).await
    }

    /// The approval that authorises `capability` acting on a plan now:
    /// approved for that capability, not consumed, unexpired, and bound to
    /// the plan as it stands.
    pub async fn covering_approval(
        &self,
        plans: &impl PlanSource,
        plan_type: &str,
        plan_id: &str,
        capability: &str,
    ) -> Result<Option<Approval>, sqlx::Error> {
        let Some(plan) = plans.plan_state(plan_type, plan_id).await? else { return Ok(None) };
        let rows = sqlx::query(
            "SELECT * FROM approval WHERE plan_type = $1 AND plan_id = $2 AND status = 'approved' AND expires_at > $3 \
             AND capability_id = $4 ORDER BY created_at",
        )
        .bind(plan_type)
        .bind(plan_id)
        .bind(now_ms())
        .bind(capability)
        .fetch_all(&self.db.pool)
        .await?;
        for row in rows {
            let approval = Approval::from_row(&row)?;
            if matches(&approval, &plan) {
                return Ok(Some(approval));
            }
        }
        Ok(None)
    }

    /// The newest approval asked for a plan, whatever its status (stale is
    /// not computed): where a human's say on it stands.
    pub async fn newest_approval(&self, plan_type: &str, plan_id: &str) -> Result<Option<Approval>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT * FROM approval WHERE plan_type = $1 AND plan_id = $2 ORDER BY created_at DESC LIMIT 1",
        )
        .bind(plan_type)
        .bind(plan_id)
        .fetch_optional(&self.db.pool)
        .await?;
        row.as_ref().map(Approval::from_row).transpose()
    }

    /// Takes an approved, unexpired approval for the call it authorises —
    /// before that call runs, or for a success answered without running
    /// anything (an earlier identical write found done): it becomes
    /// `consumed` by ledger row `invocation_id`. One conditional update, so of a revoke and a call
    /// (or two calls) racing for it exactly one wins; `false` when it is no
    /// longer there to take.
    pub async fn take_approval(&self, id: &str, invocation_id: &str) -> Result<bool, sqlx::Error> {
        let changed = sqlx::query(
            "UPDATE approval SET status = 'consumed', consumed_by = $1, updated_at = $2 \
             WHERE id = $3 AND status = 'approved' AND expires_at > $2",
        )
        .bind(invocation_id)
        .bind(now_ms())
        .bind(id)
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Gives back an approval that ledger row `invocation_id` took when that
    /// call did not succeed: an approval is consumed by a success only.
    pub async fn give_back_approval(&self, id: &str, invocation_id: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE approval SET status = 'approved', consumed_by = NULL, updated_at = $1 \
             WHERE id = $2 AND status = 'consumed' AND consumed_by = $3",
        )
        .bind(now_ms())
        .bind(id)
        .bind(invocation_id)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Gives back, inside `tx`, the approvals held by calls whose outcome
    /// is `unknown`: a call whose process died after it took its approval
    /// did not succeed as far as anyone knows, so — as for any call that
    /// does not succeed — the approval is the human's to use (its replay,
    /// which is checked before it writes again) or to revoke.
    pub(crate) async fn give_back_from_unknown_in(tx: &mut Transaction<'_, Any>) -> Result<u64, sqlx::Error> {
        let n = sqlx::query(
            "UPDATE approval SET status = 'approved', consumed_by = NULL, updated_at = $1 \
             WHERE status = 'consumed' AND consumed_by IN \
             (SELECT id FROM capability_invocation WHERE status = 'unknown')",
        )
        .bind(now_ms())
        .execute(&mut **tx)
        .await?;
        Ok(n.rows_affected())
    }

    /// An administrator revokes an approval nobody has used: a pending
    /// request or an approval not yet consumed, unexpired and bound to the
    /// plan as it stands. Revoked, it authorises nothing. A consumed,
    /// rejected, expired, revoked or stale one is a conflict and stays as
    /// it was. The update is conditional on the status, so a call taking the
    /// approval at the same moment ([`Authz::take_approval`]) and the
    /// revoke cannot both win.
    pub async fn revoke_approval(&self, plans: &impl PlanSource, id: &str) -> Result<Approval, AuthzError> {
        let approval = self.approval(plans, id).await?;
        let now = now_ms();
        if !approval.status.is_open() {
            return Err(AuthzError::Conflict(not_revocable(&approval)));
        }
        if approval.expires_at <= now {
            return Err(AuthzError::Conflict(format!("approval {id} has expired; it authorises nothing")));
        }
        if approval.stale {
            return Err(AuthzError::Conflict(format!(
                "the plan changed since approval {id} was requested; it authorises nothing already"
            )));
        }
        let changed = sqlx::query(
            "UPDATE approval SET status = 'revoked', updated_at = $1 \
             WHERE id = $2 AND status IN ('pending', 'approved') AND expires_at > $1",
        )
        .bind(now)
        .bind(id)
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(AuthzError::Conflict(not_revocable(&self.approval_row(id).await?)));
        }
        self.approval(plans, id).await
    }

    /// Approvals, newest first, optionally in one status.
    pub async fn approvals(&self, status: Option<ApprovalStatus>) -> Result<Vec<Approval>, sqlx::Error> {
        let rows = match status {
            Some(s) => {
                sqlx::query("SELECT * FROM approval WHERE status = $1 ORDER BY created_at DESC LIMIT 500")
                    .bind(s.as_str())
                    .fetch_all(&self.db.pool)
                    .await?
            }
            None => {
                sqlx::query("SELECT * FROM approval ORDER BY created_at DESC LIMIT 500")
                    .fetch_all(&self.db.pool)
                    .await?
            }
        };
        rows.iter().map(Approval::from_row).collect()
    }
}
