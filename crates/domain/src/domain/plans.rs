//! Acquisition plans: draft → reserved → submitted, or failed / cancelled.
//! A draft reserves nothing. Reserving takes the slot only if the slot is
//! still at the revision the plan was made against; submitting records the
//! download task the client now holds. Each step bumps the plan's revision,
//! so an approval given for one revision cannot be used for another. A plan
//! that would replace a file the slot holds (an upgrade) says so in its
//! payload, and may take a satisfied slot when the release is a PROPER or
//! REPACK of a file it holds.

use serde_json::json;
use sqlx::{Any, Transaction};

use super::model::ReadRow;
use super::{
    Author, Domain, DomainError, DownloadTask, IdentityStatus, NewPlan, Plan, PlanStatus, Slot, SlotStatus,
    payload_hash,
};
use crate::store::{new_id, now_ms};

async fn plan_in(tx: &mut Transaction<'_, Any>, id: &str) -> Result<Plan, DomainError> {
    sqlx::query("SELECT * FROM acquisition_plan WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?
        .map(|r| Plan::from_row(&r))
        .transpose()?
        .ok_or_else(|| DomainError::NotFound(format!("no acquisition plan {id}")))
}

async fn slot_in(tx: &mut Transaction<'_, Any>, id: &str) -> Result<Slot, DomainError> {
    sqlx::query("SELECT * FROM media_slot WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?
        .map(|r| Slot::from_row(&r))
        .transpose()?
        .ok_or_else(|| DomainError::NotFound(format!("no slot {id}")))
}

async fn set_plan_status(
    tx: &mut Transaction<'_, Any>,
    plan: &Plan,
    status: PlanStatus,
    reason: Option<&str>,
) -> Result<(), DomainError> {
    sqlx::query(
        "UPDATE acquisition_plan SET status = $1, reason = COALESCE($2, reason), revision = revision + 1, updated_at = $3 \
         WHERE id = $4 AND revision = $5",
    )
    .bind(status.as_str())
    .bind(reason)
    .bind(now_ms())
    .bind(&plan.id)
    .bind(plan.revision)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Moves `slot` to `status`. Back to wanted (what it was fetching is gone),
/// it is due a search again.
async fn set_slot_status(tx: &mut Transaction<'_, Any>, slot: &Slot, status: SlotStatus) -> Result<(), DomainError> {
    sqlx::query(
        "UPDATE media_slot SET status = $1, revision = revision + 1, updated_at = $2, \
         searched_at = CASE WHEN $1 = 'wanted' THEN NULL ELSE searched_at END WHERE id = $3",
    )
    .bind(status.as_str())
    .bind(now_ms())
    .bind(&slot.id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The payload of a `plan.changed` event.
fn changed(plan: &Plan) -> serde_json::Value {
    json!({ "planId": plan.id, "slotId": plan.slot_id, "status": plan.status, "revision": plan.revision })
}

impl Domain {
    /// Drafts a plan to fetch a release into a wanted slot. The release must
    /// be identified as the slot's entity and, for a season's slot, cover
    /// that season. Drafting the same thing twice
    /// returns the first draft.
    pub async fn draft_plan(&self, by: &Author, new: &NewPlan) -> Result<Plan, DomainError> {
        let slot = self.slot(&new.slot_id).await?;
        let release = self.release(&new.source_release_id).await?;
        if let Some(blocked) = self.blocked(&release.id).await? {
            return Err(DomainError::Conflict(format!(
                "release {} is blocklisted ({}); unblock it to fetch it",
                release.id, blocked.reason
            )));
        }
        let offered = capstan_quality::offer_of(&release.title, &release.parsed, release.size);
        let upgrade = self.upgrade_for(&slot, &offered, self.profile_of(&slot).await?.as_ref()).await?;
        // A satisfied slot takes only a fix of a file it holds.
        let takes = slot.status == SlotStatus::Wanted
            || (slot.status == SlotStatus::Satisfied && upgrade == Some(capstan_quality::upgrade::Upgrade::Proper));
        if !takes {
            return Err(DomainError::Conflict(format!("slot {} is {}, not wanted", slot.id, slot.status)));
        }
        match (release.identity_status, release.entity_id.as_deref()) {
            (IdentityStatus::Resolved, Some(entity)) if entity == slot.entity_id => {}
            (IdentityStatus::Resolved, Some(entity)) => {
                return Err(DomainError::Conflict(format!(
                    "release {} is identified as entity {entity}, not the slot's entity {}",
                    release.id, slot.entity_id
                )));
            }
            (status, _) => {
                return Err(DomainError::Conflict(format!(
                    "release {} has identity {status}; resolve it before planning",
                    release.id
                )));
            }
        }
        // A season's slot takes a release of that season or a pack that
        // holds it; one that says no season is left to the human.
        if let Some(season) = slot.season
            && capstan_quality::covers_season(&release.parsed, season) == Some(false)
        {
            return Err(DomainError::Conflict(format!(
                "release {} is not of season {season}, which slot {} wants",
                release.id, slot.id
            )));
        }
        let payload = json!({
            "slotId": slot.id,
            "slotRevision": slot.revision,
            "entityId": slot.entity_id,
            "season": slot.season,
            "quality": slot.quality,
            "sourceReleaseId": release.id,
            "title": release.title,
            "infohash": release.infohash,
            "downloadUrl": release.download_url,
            "magnetUrl": release.magnet_url,
            "indexer": release.indexer,
            "handOff": super::hand_off::describe(&release),
            "size": release.size,
            // What it would replace, so whoever approves it can see.
            "upgrade": upgrade,
        });
        let hash = payload_hash(&payload);
        let mut tx = self.db.begin_write().await?;
        if let Some(row) =
            sqlx::query("SELECT * FROM acquisition_plan WHERE slot_id = $1 AND payload_hash = $2 AND status = 'draft'")
                .bind(&slot.id)
                .bind(&hash)
                .fetch_optional(&mut *tx)
                .await?
        {
            return Ok(Plan::from_row(&row)?);
        }
        let id = new_id();
        let now = now_ms();
        sqlx::query(
            "INSERT INTO acquisition_plan (id, slot_id, source_release_id, status, payload, payload_hash, revision, \
             slot_revision, note, created_by, run_id, created_at, updated_at) \
             VALUES ($1, $2, $3, 'draft', $4, $5, 1, $6, $7, $8, $9, $10, $10)",
        )
        .bind(&id)
        .bind(&slot.id)
        .bind(&release.id)
        .bind(payload.to_string())
        .bind(&hash)
        .bind(slot.revision)
        .bind(&new.note)
        .bind(&by.principal)
        .bind(&by.run_id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let plan = plan_in(&mut tx, &id).await?;
        tx.commit().await?;
        Ok(plan)
    }

    /// draft → reserved, taking the slot; `Conflict` when the slot moved on
    /// since the plan was drafted. Reserving a plan that is already reserved
    /// or submitted returns it unchanged, so a retried submit can go on.
    pub async fn reserve_plan(&self, plan_id: &str) -> Result<Plan, DomainError> {
        let mut tx = self.db.begin_write().await?;
        let plan = plan_in(&mut tx, plan_id).await?;
        match plan.status {
            PlanStatus::Draft => {}
            PlanStatus::Reserved | PlanStatus::Submitted => return Ok(plan),
            other => return Err(DomainError::Conflict(format!("plan {plan_id} is {other}; it cannot be reserved"))),
        }
        let slot = slot_in(&mut tx, &plan.slot_id).await?;
        let fixes = plan.payload.get("upgrade").and_then(serde_json::Value::as_str) == Some("proper");
        let takes = slot.status == SlotStatus::Wanted || (fixes && slot.status == SlotStatus::Satisfied);
        if slot.revision != plan.slot_revision || !takes {
            return Err(DomainError::Conflict(format!(
                "slot {} changed since the plan was drafted (revision {} → {}, status {}); draft a new plan",
                slot.id, plan.slot_revision, slot.revision, slot.status
            )));
        }
        set_slot_status(&mut tx, &slot, SlotStatus::Reserved).await?;
        set_plan_status(&mut tx, &plan, PlanStatus::Reserved, None).await?;
        let plan = plan_in(&mut tx, plan_id).await?;
        self.emit(&mut tx, "plan.changed", plan_id, changed(&plan)).await?;
        tx.commit().await?;
        self.events.announce();
        Ok(plan)
    }

    /// reserved → submitted with the client's hash; records the download
    /// task. Repeating it returns the task already recorded.
    pub async fn mark_submitted(&self, plan_id: &str, client_hash: &str) -> Result<(Plan, DownloadTask), DomainError> {
        let client_hash = super::releases::normalize_infohash(client_hash)?;
        let mut tx = self.db.begin_write().await?;
        let plan = plan_in(&mut tx, plan_id).await?;
        let mut announce = false;
        match plan.status {
            PlanStatus::Reserved => {
                set_plan_status(&mut tx, &plan, PlanStatus::Submitted, None).await?;
                let submitted = plan_in(&mut tx, plan_id).await?;
                self.emit(&mut tx, "plan.changed", plan_id, changed(&submitted)).await?;
                announce = true;
                let now = now_ms();
                sqlx::query(
                    "INSERT INTO download_task (id, plan_id, client_hash, status, progress, progress_at, created_at, \
                     updated_at) VALUES ($1, $2, $3, 'queued', 0, $4, $4, $4)",
                )
                .bind(new_id())
                .bind(plan_id)
                .bind(&client_hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            PlanStatus::Submitted => {}
            other => return Err(DomainError::Conflict(format!("plan {plan_id} is {other}, not reserved"))),
        }
        let plan = plan_in(&mut tx, plan_id).await?;
        let task = sqlx::query("SELECT * FROM download_task WHERE plan_id = $1")
            .bind(plan_id)
            .fetch_one(&mut *tx)
            .await
            .map(|r| DownloadTask::from_row(&r))??;
        tx.commit().await?;
        if announce {
            self.events.announce();
        }
        Ok((plan, task))
    }

    /// Ends a plan that has not been submitted (`failed` or `cancelled`),
    /// giving its slot back when it held one; a decision about its failed
    /// submit is cleared.
    pub async fn end_plan(&self, plan_id: &str, status: PlanStatus, reason: &str) -> Result<Plan, DomainError> {
        if !matches!(status, PlanStatus::Failed | PlanStatus::Cancelled) {
            return Err(DomainError::Invalid(format!("a plan ends failed or cancelled, not {status}")));
        }
        let held = self.plan(plan_id).await?;
        let profile = self.profile_of(&self.slot(&held.slot_id).await?).await?;
        let mut tx = self.db.begin_write().await?;
        let plan = plan_in(&mut tx, plan_id).await?;
        match plan.status {
            PlanStatus::Draft => {}
            PlanStatus::Reserved => {
                let slot = slot_in(&mut tx, &plan.slot_id).await?;
                // Back to what its files make it; wanted, it is due a
                // search again.
                if slot.status == SlotStatus::Reserved
                    && super::held::let_go_in(&mut tx, &slot, profile.as_ref(), SlotStatus::Wanted).await?
                        == SlotStatus::Wanted
                {
                    sqlx::query("UPDATE media_slot SET searched_at = NULL WHERE id = $1")
                        .bind(&slot.id)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            other => {
                return Err(DomainError::Conflict(format!("plan {plan_id} is {other}; it cannot end as {status}")));
            }
        }
        set_plan_status(&mut tx, &plan, status, Some(reason)).await?;
        let plan = plan_in(&mut tx, plan_id).await?;
        self.emit(&mut tx, "plan.changed", plan_id, changed(&plan)).await?;
        tx.commit().await?;
        self.events.announce();
        // Nothing is left to try again for a plan that ended.
        let facts = json!({"planId": plan_id, "status": status, "reason": reason, "seenAt": now_ms()});
        self.clear_submit_decision(plan_id, facts, "system:plan").await?;
        Ok(plan)
    }

    pub async fn plan(&self, id: &str) -> Result<Plan, DomainError> {
        sqlx::query("SELECT * FROM acquisition_plan WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Plan::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no acquisition plan {id}")))
    }

    /// Plans, newest first, filtered by status and/or slot.
    pub async fn plans(
        &self,
        status: Option<PlanStatus>,
        slot_id: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Plan>, DomainError> {
        let rows = self
            .filtered(
                "acquisition_plan",
                &[("status", status.map(PlanStatus::as_str)), ("slot_id", slot_id)],
                "created_at DESC, id",
                limit,
            )
            .await?;
        Ok(rows.iter().map(Plan::from_row).collect::<Result<_, _>>()?)
    }

    /// Plans made by an agent run, oldest first.
    pub async fn plans_for_run(&self, run_id: &str) -> Result<Vec<Plan>, DomainError> {
        let rows = sqlx::query("SELECT * FROM acquisition_plan WHERE run_id = $1 ORDER BY created_at, id")
            .bind(run_id)
            .fetch_all(&self.db.pool)
            .await?;
        Ok(rows.iter().map(Plan::from_row).collect::<Result<_, _>>()?)
    }
}
