//! What the library holds for a slot and whether that is good enough: a
//! movie's file, a season's episode files, each with the release it came
//! from, judged by the slot's published quality profile
//! ([`capstan_quality::upgrade`]). The one reading of "still wanted" used
//! when an import finishes a slot, when a plan lets its slot go, when
//! episodes are (un)monitored, and when a profile or a title's profile
//! changes: a slot is wanted while something monitored and aired has no
//! file, or a file it holds is below the profile's cutoff.

use serde_json::Value;
use sqlx::{Any, Row, Transaction, any::AnyRow};

use capstan_quality::upgrade::Upgrade;
use capstan_quality::{Offer, QualityProfile, offer_of};

use super::episodes::{state_of, today};
use super::{Domain, DomainError, EpisodeState, Slot, SlotStatus};
use crate::store::now_ms;
use capstan_contract::ops::queries::UpgradeWanted;

/// The offer a held file's release makes, from a row that joined it
/// (`title`, `parsed`, `size`); `None` when no release is recorded.
fn held_offer(r: &AnyRow) -> Result<Option<Offer>, sqlx::Error> {
    let Some(title) = r.try_get::<Option<String>, _>("release_title")? else { return Ok(None) };
    let parsed: Option<String> = r.try_get("release_parsed")?;
    let parsed: Value = parsed.and_then(|p| serde_json::from_str(&p).ok()).unwrap_or(Value::Null);
    let size: Option<i64> = r.try_get("release_size")?;
    Ok(Some(offer_of(&title, &parsed, size)))
}

/// Whether a held file is below the cutoff; a file whose release is not
/// recorded, or a slot without a usable profile, is good enough.
fn below_cutoff(profile: Option<&QualityProfile>, held: Option<&Offer>) -> bool {
    matches!((profile, held), (Some(p), Some(held)) if !p.meets_cutoff(held))
}

/// Whether `slot` still wants something; `None` when nothing says: a
/// movie without a recorded file, a season without recorded episodes.
pub(super) async fn wants_in(
    tx: &mut Transaction<'_, Any>,
    slot: &Slot,
    profile: Option<&QualityProfile>,
) -> Result<Option<bool>, DomainError> {
    let Some(season) = slot.season else {
        let row = sqlx::query(
            "SELECT s.file AS file, r.title AS release_title, r.parsed AS release_parsed, r.size AS release_size \
             FROM media_slot s LEFT JOIN source_release r ON r.id = s.file_release_id WHERE s.id = $1",
        )
        .bind(&slot.id)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(row) = row else { return Ok(None) };
        if row.try_get::<Option<String>, _>("file")?.is_none() {
            return Ok(None);
        }
        return Ok(Some(below_cutoff(profile, held_offer(&row)?.as_ref())));
    };
    let rows = sqlx::query(
        "SELECT e.monitored AS monitored, e.file AS file, e.air_date AS air_date, r.title AS release_title, \
         r.parsed AS release_parsed, r.size AS release_size \
         FROM media_episode e LEFT JOIN source_release r ON r.id = e.file_release_id \
         WHERE e.entity_id = $1 AND e.season = $2",
    )
    .bind(&slot.entity_id)
    .bind(season)
    .fetch_all(&mut **tx)
    .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    // The one reading of "missing": `state_of`, as the episodes are shown.
    let today = today();
    let mut wants = false;
    for r in &rows {
        let (monitored, file, air_date): (i64, Option<String>, Option<String>) =
            (r.try_get("monitored")?, r.try_get("file")?, r.try_get("air_date")?);
        wants |= match state_of(monitored != 0, file.as_deref(), air_date.as_deref(), &today) {
            EpisodeState::Missing => true,
            EpisodeState::Have => below_cutoff(profile, held_offer(r)?.as_ref()),
            EpisodeState::NotAired | EpisodeState::Unmonitored => false,
        };
    }
    Ok(Some(wants))
}

/// Sets `slot` to `status` when it is wanted or satisfied, or (`releasing`:
/// its plan ended or its import finished) held by a plan.
async fn set_status_in(
    tx: &mut Transaction<'_, Any>,
    slot: &Slot,
    releasing: bool,
    status: SlotStatus,
) -> Result<(), DomainError> {
    let from = if releasing { "('wanted', 'satisfied', 'reserved')" } else { "('wanted', 'satisfied')" };
    sqlx::query(&format!(
        "UPDATE media_slot SET status = $2, revision = revision + 1, updated_at = $3 \
         WHERE id = $1 AND status <> $2 AND status IN {from}"
    ))
    .bind(&slot.id)
    .bind(status.as_str())
    .bind(now_ms())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Moves a wanted or satisfied `slot` to whichever it now is; a slot a
/// plan holds, or one nothing can be said of, is left alone.
pub(super) async fn settle_in(
    tx: &mut Transaction<'_, Any>,
    slot: &Slot,
    profile: Option<&QualityProfile>,
) -> Result<(), DomainError> {
    let Some(wants) = wants_in(tx, slot, profile).await? else { return Ok(()) };
    let to = if wants { SlotStatus::Wanted } else { SlotStatus::Satisfied };
    set_status_in(tx, slot, false, to).await
}

/// Lets go of `slot` (its plan ended, or its import finished): wanted or
/// satisfied by what it holds, `otherwise` when nothing says.
pub(super) async fn let_go_in(
    tx: &mut Transaction<'_, Any>,
    slot: &Slot,
    profile: Option<&QualityProfile>,
    otherwise: SlotStatus,
) -> Result<SlotStatus, DomainError> {
    let to = match wants_in(tx, slot, profile).await? {
        Some(true) => SlotStatus::Wanted,
        Some(false) => SlotStatus::Satisfied,
        None => otherwise,
    };
    set_status_in(tx, slot, true, to).await?;
    Ok(to)
}

impl Domain {
    /// The offers of the releases `slot`'s files came from, where recorded:
    /// a movie's file, or each monitored episode file of a season.
    async fn held_offers(&self, slot: &Slot) -> Result<Vec<Offer>, DomainError> {
        let rows = match slot.season {
            None => {
                sqlx::query(
                    "SELECT r.title AS release_title, r.parsed AS release_parsed, r.size AS release_size \
                     FROM media_slot s JOIN source_release r ON r.id = s.file_release_id \
                     WHERE s.id = $1 AND s.file IS NOT NULL",
                )
                .bind(&slot.id)
                .fetch_all(&self.db.pool)
                .await?
            }
            Some(season) => {
                sqlx::query(
                    "SELECT r.title AS release_title, r.parsed AS release_parsed, r.size AS release_size \
                     FROM media_episode e JOIN source_release r ON r.id = e.file_release_id \
                     WHERE e.entity_id = $1 AND e.season = $2 AND e.file IS NOT NULL AND e.monitored = 1",
                )
                .bind(&slot.entity_id)
                .bind(season)
                .fetch_all(&self.db.pool)
                .await?
            }
        };
        Ok(rows.iter().map(held_offer).collect::<Result<Vec<_>, _>>()?.into_iter().flatten().collect())
    }

    /// The files `slot` holds below its profile's cutoff, if any.
    pub(crate) async fn upgrade_wanted(&self, slot: &Slot) -> Result<Option<UpgradeWanted>, DomainError> {
        let Some(profile) = self.profile_of(slot).await? else { return Ok(None) };
        let Some(cutoff) = profile.cutoff.clone() else { return Ok(None) };
        let below: Vec<Offer> =
            self.held_offers(slot).await?.into_iter().filter(|held| !profile.meets_cutoff(held)).collect();
        let rank = |o: &Offer| profile.preferred_resolutions.iter().position(|r| Some(r) == o.resolution.as_ref());
        let have = below.iter().min_by_key(|o| rank(o).unwrap_or(usize::MAX)).and_then(|o| o.resolution.clone());
        Ok((!below.is_empty()).then_some(UpgradeWanted { cutoff, below: below.len() as i64, have }))
    }

    /// The usable published quality profile a slot names, if any. One
    /// that is unpublished or unusable counts as none: nothing is judged
    /// below a cutoff nobody can read.
    pub(crate) async fn profile_of(&self, slot: &Slot) -> Result<Option<QualityProfile>, DomainError> {
        let Some(name) = slot.profile.as_deref() else { return Ok(None) };
        let policy = match self.authz.published_policy(name).await {
            Ok(policy) => policy,
            Err(crate::authz::AuthzError::Sql(e)) => return Err(e.into()),
            Err(_) => return Ok(None),
        };
        Ok(serde_json::from_value::<QualityProfile>(policy.body).ok().filter(|p| p.problems().is_empty()))
    }

    /// Settles every wanted or satisfied slot that names profile `name`,
    /// after it was published: a raised cutoff makes a slot wanted again, a
    /// lowered one satisfies it.
    pub(crate) async fn settle_profile(&self, name: &str) -> Result<(), DomainError> {
        let rows = sqlx::query("SELECT * FROM media_slot WHERE profile = $1 AND status IN ('wanted', 'satisfied')")
            .bind(name)
            .fetch_all(&self.db.pool)
            .await?;
        let slots: Vec<Slot> = rows.iter().map(super::model::ReadRow::from_row).collect::<Result<_, _>>()?;
        self.settle_slots(&slots).await
    }

    /// Settles `slots`, each by its own profile.
    pub(super) async fn settle_slots(&self, slots: &[Slot]) -> Result<(), DomainError> {
        for slot in slots {
            let profile = self.profile_of(slot).await?;
            let mut tx = self.db.begin_write().await?;
            settle_in(&mut tx, slot, profile.as_ref()).await?;
            tx.commit().await?;
        }
        Ok(())
    }

    /// Whether `release` would replace something `slot` holds, and why: for
    /// a movie its file, for a season an episode file of that season (a
    /// plan is checked against the season; the sweep picks by episode).
    pub(crate) async fn upgrade_for(
        &self,
        slot: &Slot,
        release: &Offer,
        profile: Option<&QualityProfile>,
    ) -> Result<Option<Upgrade>, DomainError> {
        let Some(profile) = profile else { return Ok(None) };
        Ok(self.held_offers(slot).await?.iter().find_map(|held| profile.upgrade(held, release)))
    }
}
