//! Titles the library wants, as a user says it: "I want this movie (or
//! these seasons) at this quality". Wanting records the catalogue's entity
//! and opens a slot per movie or season in one transaction; a title already
//! wanted, being fetched or in the library is a conflict. Changing moves the
//! wanted slots to another quality or profile; giving a title up marks its
//! wanted slots `unwanted` (kept, so what was asked stays visible) and
//! cancels the plans not yet handed to the client; it is refused only while
//! the client is still working on a download for it.

use serde_json::{Value, json};
use sqlx::Row;

use super::entities::upsert_entity_in;
use super::model::ReadRow;
use capstan_contract::ops::transitions::WantedTitle;

use super::{Domain, DomainError, NewEntity, Slot, SlotStatus, WantTitle, require};
use crate::store::{new_id, now_ms};

/// Why a plan ended when its title stopped being wanted.
const NO_LONGER_WANTED: &str = "the title is no longer wanted";

/// Longest quality or profile name.
const MAX_NAME: usize = 64;

fn check_names(quality: Option<&str>, profile: Option<&str>) -> Result<(), DomainError> {
    if let Some(q) = quality {
        require(!q.trim().is_empty() && q.chars().count() <= MAX_NAME, || {
            format!("quality must be 1 to {MAX_NAME} characters, like 1080p")
        })?;
    }
    if let Some(p) = profile {
        require(p.starts_with("quality.") && p.chars().count() <= MAX_NAME, || {
            format!("profile {p:?} must name a quality.* policy, like quality.movies")
        })?;
    }
    Ok(())
}

/// The season numbers an entity lists (`[{"number": 1, ...}]`).
fn listed_seasons(entity: &NewEntity) -> Vec<i64> {
    entity.seasons.iter().filter_map(|s| s.get("number").and_then(Value::as_i64)).collect()
}

/// How a wanted title is named to a person: `Dune (2021)`, `Shōgun
/// (2024) season 1`; the one wording of every message and summary.
pub(super) fn named(title: &str, year: Option<i64>, season: Option<i64>) -> String {
    let title = match year {
        Some(y) => format!("{title} ({y})"),
        None => title.to_string(),
    };
    match season {
        Some(s) => format!("{title} season {s}"),
        None => title,
    }
}

impl Domain {
    /// Wants a title: records the entity and opens its slots, all or none.
    pub(crate) async fn want_title(&self, w: &WantTitle) -> Result<WantedTitle, DomainError> {
        check_names(Some(&w.quality), w.profile.as_deref())?;
        let seasons: Vec<Option<i64>> = match (w.entity.kind.as_str(), &w.seasons) {
            ("movie", None) => vec![None],
            ("movie", Some(_)) => return Err(DomainError::Invalid("a movie has no seasons to pick".into())),
            ("tv", picked) => {
                let listed = listed_seasons(&w.entity);
                let picked = match picked {
                    Some(p) => p.clone(),
                    None => listed.iter().copied().filter(|n| *n >= 1).collect(),
                };
                require(!picked.is_empty(), || "pick at least one season".into())?;
                if let Some(missing) = picked.iter().find(|n| **n < 0 || (!listed.is_empty() && !listed.contains(n))) {
                    return Err(DomainError::Invalid(format!("season {missing} is not one of this series' seasons")));
                }
                let mut unique = picked;
                unique.sort_unstable();
                unique.dedup();
                unique.into_iter().map(Some).collect()
            }
            (other, _) => return Err(DomainError::Invalid(format!("kind {other:?} is not movie or tv"))),
        };
        let mut tx = self.db.begin_write().await?;
        let entity_id = upsert_entity_in(&mut tx, &w.entity).await?;
        let existing = sqlx::query("SELECT * FROM media_slot WHERE entity_id = $1 AND status <> 'unwanted'")
            .bind(&entity_id)
            .fetch_all(&mut *tx)
            .await?;
        let existing: Vec<Slot> = existing.iter().map(Slot::from_row).collect::<Result<_, _>>()?;
        let now = now_ms();
        let mut opened = Vec::new();
        for season in &seasons {
            if let Some(slot) = existing.iter().find(|s| s.season == *season) {
                let state = match slot.status {
                    SlotStatus::Satisfied => "is already in the library",
                    SlotStatus::Reserved => "is already being fetched",
                    _ => "is already wanted",
                };
                let name = named(w.entity.title.trim(), w.entity.year, *season);
                return Err(DomainError::Conflict(format!("{name} {state}")));
            }
            let id = new_id();
            sqlx::query(
                "INSERT INTO media_slot (id, entity_id, season, quality, profile, status, revision, created_at, updated_at, created_seq) \
                 VALUES ($1, $2, $3, $4, $5, 'wanted', 1, $6, $6, (SELECT COALESCE(MAX(created_seq), 0) + 1 FROM media_slot))",
            )
            .bind(&id)
            .bind(&entity_id)
            .bind(*season)
            .bind(w.quality.trim())
            .bind(&w.profile)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            opened.push(id);
        }
        // The picked seasons' episodes are wanted; the others stay as they were.
        let picked: Vec<i64> = seasons.iter().flatten().copied().collect();
        super::episodes::monitor_seasons_in(&mut tx, &entity_id, &picked, true).await?;
        tx.commit().await?;
        let entity = self.entity(&entity_id).await?;
        let slots: Vec<Slot> =
            self.slots_for_entity(&entity_id).await?.into_iter().filter(|s| opened.contains(&s.id)).collect();
        Ok(WantedTitle { entity, slots })
    }

    /// Moves a title's wanted and satisfied slots to another quality
    /// and/or profile (`Some(None)` clears the profile), and settles them
    /// by the profile they now name: a raised cutoff makes a satisfied slot
    /// wanted again.
    pub(crate) async fn change_title(
        &self,
        entity_id: &str,
        quality: Option<&str>,
        profile: Option<Option<&str>>,
    ) -> Result<WantedTitle, DomainError> {
        check_names(quality, profile.flatten())?;
        require(quality.is_some() || profile.is_some(), || "say what to change: quality or profile".into())?;
        let entity = self.entity(entity_id).await?;
        let mut tx = self.db.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE media_slot SET quality = COALESCE($2, quality), \
             profile = CASE WHEN $3 = 1 THEN $4 ELSE profile END, \
             revision = revision + 1, updated_at = $5 WHERE entity_id = $1 AND status IN ('wanted', 'satisfied')",
        )
        .bind(entity_id)
        .bind(quality.map(str::trim))
        .bind(i64::from(profile.is_some()))
        .bind(profile.flatten())
        .bind(now_ms())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(DomainError::NotFound(format!(
                "nothing of {} is wanted",
                named(&entity.title, entity.year, None)
            )));
        }
        tx.commit().await?;
        let changed: Vec<Slot> = self
            .slots_for_entity(entity_id)
            .await?
            .into_iter()
            .filter(|s| matches!(s.status, SlotStatus::Wanted | SlotStatus::Satisfied))
            .collect();
        self.settle_slots(&changed).await?;
        Ok(WantedTitle { entity, slots: self.slots_for_entity(entity_id).await? })
    }

    /// Stops wanting a title (or one season of it): its slots become
    /// `unwanted` and the plans not yet handed to the client are cancelled.
    /// Only a download the client is still working on is in the way (a
    /// conflict that says what to do); one that failed or is gone is not.
    pub async fn unwant_title(&self, entity_id: &str, season: Option<i64>) -> Result<WantedTitle, DomainError> {
        let entity = self.entity(entity_id).await?;
        let mut tx = self.db.begin_write().await?;
        let slots = sqlx::query("SELECT * FROM media_slot WHERE entity_id = $1 AND status IN ('wanted', 'reserved')")
            .bind(entity_id)
            .fetch_all(&mut *tx)
            .await?;
        let slots: Vec<Slot> = slots.iter().map(Slot::from_row).collect::<Result<_, _>>()?;
        let slots: Vec<&Slot> = slots.iter().filter(|s| season.is_none() || s.season == season).collect();
        if slots.is_empty() {
            return Err(DomainError::NotFound(format!(
                "nothing of {} is wanted",
                named(&entity.title, entity.year, season)
            )));
        }
        for slot in slots.iter().filter(|s| s.status == SlotStatus::Reserved) {
            let live = sqlx::query(
                "SELECT d.status, d.progress FROM download_task d JOIN acquisition_plan p ON p.id = d.plan_id \
                 WHERE p.slot_id = $1 AND p.status = 'submitted' AND d.status NOT IN ('failed', 'missing', 'removed')",
            )
            .bind(&slot.id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(live) = live {
                let status: String = live.try_get("status")?;
                let progress: f64 = live.try_get("progress")?;
                return Err(DomainError::Conflict(format!(
                    "{} is {status} in the download client ({:.0}%); remove the torrent there (it then shows as \
                     missing) or let it finish and be imported, then stop wanting it",
                    named(&entity.title, entity.year, slot.season),
                    progress * 100.0
                )));
            }
        }
        let now = now_ms();
        let mut cancelled = Vec::new();
        for slot in &slots {
            let open: Vec<String> = sqlx::query_scalar(
                "SELECT id FROM acquisition_plan WHERE slot_id = $1 AND status IN ('draft', 'reserved')",
            )
            .bind(&slot.id)
            .fetch_all(&mut *tx)
            .await?;
            for plan in open {
                sqlx::query(
                    "UPDATE acquisition_plan SET status = 'cancelled', reason = $2, revision = revision + 1, \
                     updated_at = $3 WHERE id = $1",
                )
                .bind(&plan)
                .bind(NO_LONGER_WANTED)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                cancelled.push((plan, slot.id.clone()));
            }
            sqlx::query(
                "UPDATE media_slot SET status = 'unwanted', revision = revision + 1, updated_at = $2 \
                 WHERE id = $1 AND status IN ('wanted', 'reserved')",
            )
            .bind(&slot.id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        // A season nobody wants has no episode anybody waits for.
        let given_up: Vec<i64> = slots.iter().filter_map(|s| s.season).collect();
        super::episodes::monitor_seasons_in(&mut tx, entity_id, &given_up, false).await?;
        let mut announce = false;
        for (plan, slot) in &cancelled {
            let payload = json!({ "planId": plan, "slotId": slot, "status": "cancelled" });
            self.emit(&mut tx, "plan.changed", plan, payload).await?;
            announce = true;
        }
        tx.commit().await?;
        if announce {
            self.events.announce();
        }
        for (plan, _) in &cancelled {
            let facts = json!({"planId": plan, "status": "cancelled", "reason": NO_LONGER_WANTED, "seenAt": now});
            self.clear_submit_decision(plan, facts, "system:unwant").await?;
        }
        Ok(WantedTitle { entity, slots: self.slots_for_entity(entity_id).await? })
    }
}
