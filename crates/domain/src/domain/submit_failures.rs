//! A drafted plan the download client could not be handed. The invoke path
//! tells the store how every call acting on an acquisition plan ended
//! (`pipeline::plan_outcome`), whoever made it — the sweep, a person, an
//! agent, a decision's option — so a failure is never only a line in one
//! task's result:
//!
//! - the plan counts the failures in a row, keeps the last reason, and
//!   sets when the sweep may try again by itself (5 minutes, doubling, at
//!   most 6 hours);
//! - a `download_submit_failed` decision opens (root
//!   `submit_failed:<planId>`) with the reason and four options: try again
//!   now, pick another release, stop wanting it, or leave it (the sweep
//!   keeps trying on its backoff). A dismissed one is not opened again
//!   for the same reason;
//! - a submit that succeeds, or a plan that ends, clears both.
//!
//! A cause that may have cleared (a service passed its Test, a setting
//! changed) puts every backoff to now ([`Domain::retry_submits_now`]).

use serde_json::{Value, json};

use super::{Answer, Decision, DecisionStatus, Domain, DomainError, Plan};
use crate::store::now_ms;

/// The kind of decision a failed submit opens.
pub const SUBMIT_FAILED: &str = "download_submit_failed";

/// The first wait after a failure, and the longest.
const FIRST_WAIT_MS: i64 = 5 * 60_000;
const LONGEST_WAIT_MS: i64 = 6 * 60 * 60_000;

pub(super) fn root(plan_id: &str) -> String {
    format!("submit_failed:{plan_id}")
}

/// How long the sweep waits after the `failures`-th failure in a row.
pub(crate) fn backoff_ms(failures: i64) -> i64 {
    let doublings = failures.saturating_sub(1).clamp(0, 16) as u32;
    FIRST_WAIT_MS.saturating_mul(1 << doublings).min(LONGEST_WAIT_MS)
}

/// What a person can do about a submit that failed.
fn options(plan_id: &str) -> Value {
    json!([
        {"id": "retry", "label": "Try again now", "capabilityId": "download.submit", "input": {"planId": plan_id}},
        {"id": "another", "label": "Pick another release", "action": "another"},
        {"id": "unwant", "label": "Stop wanting it", "action": "unwant"},
        {"id": "wait", "label": "Leave it: keep trying now and then", "action": "dismiss"}
    ])
}

impl Domain {
    /// Records that a call acting on plan `plan_id` ran and failed with
    /// `reason`. Only a plan still drafted counts it (one that ended or
    /// went on has nothing to try again); answers the decision opened.
    pub async fn submit_failed(&self, plan_id: &str, reason: &str) -> Result<Option<Decision>, DomainError> {
        let now = now_ms();
        let mut tx = self.db.begin_write().await?;
        let before: Option<i64> =
            sqlx::query_scalar("SELECT submit_failures FROM acquisition_plan WHERE id = $1 AND status = 'draft'")
                .bind(plan_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(before) = before else { return Ok(None) };
        let changed = sqlx::query(
            "UPDATE acquisition_plan SET submit_failures = $1, \
             failing_since = CASE WHEN last_failure = $2 THEN COALESCE(failing_since, $3) ELSE $3 END, \
             last_failure = $2, retry_at = $4 WHERE id = $5 AND status = 'draft' AND submit_failures = $6",
        )
        .bind(before + 1)
        .bind(reason)
        .bind(now)
        .bind(now + backoff_ms(before + 1))
        .bind(plan_id)
        .bind(before)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        if changed == 0 {
            return Ok(None);
        }
        let plan = self.plan(plan_id).await?;
        let past = self.decisions_of_root(&root(plan_id)).await?;
        // Someone who said "leave it" is asked again only for a new reason.
        if let Some(last) = past.last()
            && last.status == DecisionStatus::Dismissed
            && last.evidence.get("reason").and_then(Value::as_str) == Some(reason)
        {
            return Ok(None);
        }
        let evidence = self.submit_evidence(&plan).await?;
        self.open_occurrence(&root(plan_id), SUBMIT_FAILED, plan_id, &options(plan_id), &evidence, now).await
    }

    /// What a failed submit's decision shows: the title, the release, the
    /// reason and how the sweep goes on.
    async fn submit_evidence(&self, plan: &Plan) -> Result<Value, DomainError> {
        let slot = self.slot(&plan.slot_id).await?;
        let entity = self.entity(&slot.entity_id).await?;
        let named = super::titles::named(&entity.title, entity.year, slot.season);
        let release = plan.payload.get("title").and_then(Value::as_str).unwrap_or("its release");
        let reason = plan.last_failure.as_deref().unwrap_or("no reason was given");
        Ok(json!({
            "problem": format!("{named}: {release} could not be handed to the download client: {reason}"),
            "planId": plan.id,
            "slotId": plan.slot_id,
            "entityId": entity.id,
            "title": entity.title,
            "year": entity.year,
            "season": slot.season,
            "release": plan.payload.get("title"),
            "indexer": plan.payload.get("indexer"),
            "reason": plan.last_failure,
            "failures": plan.submit_failures,
            "failingSince": plan.failing_since,
            "retryAt": plan.retry_at,
        }))
    }

    /// Records that a call acting on plan `plan_id` succeeded: the count
    /// starts again and an undecided decision about it is cleared.
    pub(crate) async fn submit_succeeded(&self, plan_id: &str) -> Result<(), DomainError> {
        let mut tx = self.db.begin_write().await?;
        sqlx::query(
            "UPDATE acquisition_plan SET submit_failures = 0, last_failure = NULL, failing_since = NULL, \
             retry_at = NULL WHERE id = $1 AND submit_failures > 0",
        )
        .bind(plan_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let facts = json!({"planId": plan_id, "submitted": true, "seenAt": now_ms()});
        self.clear_submit_decision(plan_id, facts, "system:download.submit").await
    }

    /// Clears the undecided decision about plan `plan_id`'s submit, if one
    /// is open; an answer someone gave meanwhile stands.
    pub(super) async fn clear_submit_decision(&self, plan_id: &str, facts: Value, by: &str) -> Result<(), DomainError> {
        if let Some(open) = self.undecided_of_root(&root(plan_id)).await? {
            match self.answer_decision(&open.id, &Answer::Cleared { facts }, by).await {
                Ok(_) | Err(DomainError::Conflict(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A cause may have cleared: every drafted plan whose submit failed may
    /// be tried again by the next sweep. Answers how many.
    pub async fn retry_submits_now(&self) -> Result<u64, DomainError> {
        let mut tx = self.db.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE acquisition_plan SET retry_at = NULL WHERE status = 'draft' AND submit_failures > 0 \
             AND retry_at IS NOT NULL",
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(changed)
    }

    /// The releases whose plan for `slot_id` failed: not picked for it again.
    pub async fn failed_releases(&self, slot_id: &str) -> Result<Vec<String>, DomainError> {
        Ok(sqlx::query_scalar(
            "SELECT DISTINCT source_release_id FROM acquisition_plan WHERE slot_id = $1 AND status = 'failed'",
        )
        .bind(slot_id)
        .fetch_all(&self.db.pool)
        .await?)
    }

    /// The releases already handed to the client for slot `slot_id`.
    pub async fn fetched_releases(&self, slot_id: &str) -> Result<Vec<String>, DomainError> {
        Ok(sqlx::query_scalar(
            "SELECT DISTINCT source_release_id FROM acquisition_plan WHERE slot_id = $1 AND status = 'submitted'",
        )
        .bind(slot_id)
        .fetch_all(&self.db.pool)
        .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_from_five_minutes_to_six_hours() {
        let minutes: Vec<i64> = (1..=9).map(|n| backoff_ms(n) / 60_000).collect();
        assert_eq!(minutes, [5, 10, 20, 40, 80, 160, 320, 360, 360]);
        assert_eq!(backoff_ms(0), FIRST_WAIT_MS);
        assert_eq!(backoff_ms(i64::MAX), LONGEST_WAIT_MS);
    }

    #[test]
    fn every_option_can_be_carried_out() {
        let checked = super::super::decision_options::checked(&options("p1")).unwrap();
        assert_eq!(checked.as_array().unwrap().len(), 4);
    }
}
