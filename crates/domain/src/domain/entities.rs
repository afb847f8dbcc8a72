//! Media entities (a movie or a series, keyed by kind and TMDB id) and the
//! slots that say what the library wants of them.

use serde::Deserialize;

use super::model::ReadRow;
use super::{Domain, DomainError, Entity, EntityKind, NewEntity, Slot, SlotStatus, require};
use crate::store::{new_id, now_ms};

/// A slot to open on an entity.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewSlot {
    pub entity_id: String,
    #[serde(default)]
    pub season: Option<i64>,
    pub quality: String,
    #[serde(default)]
    pub profile: Option<String>,
}

impl Domain {
    /// Records an entity, or refreshes the one with the same kind and TMDB id.
    pub async fn upsert_entity(&self, new: &NewEntity) -> Result<Entity, DomainError> {
        let mut tx = self.db.begin_write().await?;
        let id = upsert_entity_in(&mut tx, new).await?;
        tx.commit().await?;
        self.entity(&id).await
    }

    pub async fn entity(&self, id: &str) -> Result<Entity, DomainError> {
        sqlx::query("SELECT * FROM media_entity WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Entity::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no entity {id}")))
    }

    /// Entities, newest first, optionally of one kind.
    pub async fn entities(&self, kind: Option<EntityKind>, limit: i64) -> Result<Vec<Entity>, DomainError> {
        let limit = limit.clamp(1, 1000);
        // Two statements rather than `$1 IS NULL`, which PostgreSQL cannot type.
        let rows = match kind {
            Some(kind) => {
                sqlx::query("SELECT * FROM media_entity WHERE kind = $1 ORDER BY created_at DESC, id LIMIT $2")
                    .bind(kind.as_str())
                    .bind(limit)
                    .fetch_all(&self.db.pool)
                    .await?
            }
            None => {
                sqlx::query("SELECT * FROM media_entity ORDER BY created_at DESC, id LIMIT $1")
                    .bind(limit)
                    .fetch_all(&self.db.pool)
                    .await?
            }
        };
        Ok(rows.iter().map(Entity::from_row).collect::<Result<_, _>>()?)
    }

    /// Opens a slot: the library now wants this entity (or season) at this quality.
    pub async fn want(&self, new: &NewSlot) -> Result<Slot, DomainError> {
        let entity = self.entity(&new.entity_id).await?;
        require(!new.quality.trim().is_empty(), || "quality must not be empty".into())?;
        match (entity.kind, new.season) {
            (EntityKind::Movie, Some(_)) => return Err(DomainError::Invalid("a movie slot has no season".into())),
            (EntityKind::Tv, None) => return Err(DomainError::Invalid("a series slot names a season".into())),
            (_, Some(s)) if s < 0 => return Err(DomainError::Invalid("season must not be negative".into())),
            _ => {}
        }
        let id = new_id();
        let now = now_ms();
        // The next number in opening order, taken under the write lock.
        let mut tx = self.db.begin_write().await?;
        sqlx::query(
            "INSERT INTO media_slot (id, entity_id, season, quality, profile, status, revision, created_at, updated_at, created_seq) \
             VALUES ($1, $2, $3, $4, $5, 'wanted', 1, $6, $6, (SELECT COALESCE(MAX(created_seq), 0) + 1 FROM media_slot))",
        )
        .bind(&id)
        .bind(&entity.id)
        .bind(new.season)
        .bind(new.quality.trim())
        .bind(&new.profile)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.slot(&id).await
    }

    pub async fn slot(&self, id: &str) -> Result<Slot, DomainError> {
        sqlx::query("SELECT * FROM media_slot WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Slot::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no slot {id}")))
    }

    /// An entity's slots in creation order.
    pub async fn slots_for_entity(&self, entity_id: &str) -> Result<Vec<Slot>, DomainError> {
        let rows = sqlx::query("SELECT * FROM media_slot WHERE entity_id = $1 ORDER BY created_seq, id")
            .bind(entity_id)
            .fetch_all(&self.db.pool)
            .await?;
        Ok(rows.iter().map(Slot::from_row).collect::<Result<_, _>>()?)
    }

    /// The slot of season `season` of `entity_id` that is wanted, held by
    /// a plan or satisfied, if there is one.
    pub(crate) async fn season_slot(&self, entity_id: &str, season: i64) -> Result<Option<Slot>, DomainError> {
        let row = sqlx::query(
            "SELECT * FROM media_slot WHERE entity_id = $1 AND season = $2 \
             AND status IN ('wanted', 'reserved', 'satisfied') ORDER BY created_seq DESC LIMIT 1",
        )
        .bind(entity_id)
        .bind(season)
        .fetch_optional(&self.db.pool)
        .await?;
        Ok(row.map(|r| Slot::from_row(&r)).transpose()?)
    }

    /// Wanted slots the sweep searches the indexers for directly, oldest
    /// first: those never searched (new), and a season with a monitored
    /// episode missing that aired after the day of its last search. The
    /// rest are left to the indexers' feeds, or to someone asking.
    pub async fn slots_due_for_search(&self, limit: i64) -> Result<Vec<Slot>, DomainError> {
        let rows = sqlx::query(
            "SELECT s.* FROM media_slot s WHERE s.status = 'wanted' AND (s.searched_at IS NULL \
             OR (s.season IS NOT NULL AND EXISTS (SELECT 1 FROM media_episode e WHERE e.entity_id = s.entity_id \
                        AND e.season = s.season AND e.monitored = 1 AND e.file IS NULL \
                        AND e.air_date > s.searched_on AND e.air_date <= $1))) \
             ORDER BY s.created_seq, s.id LIMIT $2",
        )
        .bind(super::episodes::today())
        .bind(limit.clamp(1, 1000))
        .fetch_all(&self.db.pool)
        .await?;
        Ok(rows.iter().map(Slot::from_row).collect::<Result<_, _>>()?)
    }

    /// Wanted slots with a plan one of `principals` drafted that is still a
    /// draft (waiting for authority, or for its failed submit's backoff),
    /// oldest first, each with the newest such plan's id.
    pub async fn drafted_by(&self, principals: &[&str], limit: i64) -> Result<Vec<(Slot, String)>, DomainError> {
        if principals.is_empty() {
            return Ok(Vec::new());
        }
        let marks: Vec<String> = (2..principals.len() + 2).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT s.*, (SELECT p.id FROM acquisition_plan p WHERE p.slot_id = s.id AND p.status = 'draft' \
             AND p.created_by IN ({marks}) ORDER BY p.created_at DESC, p.id LIMIT 1) AS draft_id \
             FROM media_slot s WHERE s.status = 'wanted' AND EXISTS (SELECT 1 FROM acquisition_plan p \
             WHERE p.slot_id = s.id AND p.status = 'draft' AND p.created_by IN ({marks})) \
             ORDER BY s.created_seq, s.id LIMIT $1",
            marks = marks.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(limit.clamp(1, 1000));
        for principal in principals {
            query = query.bind(*principal);
        }
        let rows = query.fetch_all(&self.db.pool).await?;
        rows.iter().map(|r| Ok((Slot::from_row(r)?, sqlx::Row::try_get::<String, _>(r, "draft_id")?))).collect()
    }

    /// The slots a new release may be for: the wanted ones, then the
    /// satisfied ones that name a quality profile (a PROPER or REPACK of a
    /// file they hold would replace it), each oldest first — so a large
    /// library's satisfied titles never crowd a wanted one out of the bound.
    pub async fn slots_open_to_releases(&self, limit: i64) -> Result<Vec<Slot>, DomainError> {
        let rows = sqlx::query(&format!(
            "SELECT s.* FROM media_slot s WHERE {OPEN_TO_RELEASES} \
             ORDER BY CASE WHEN s.status = 'wanted' THEN 0 ELSE 1 END, s.created_seq, s.id LIMIT $1"
        ))
        .bind(limit.clamp(1, 1000))
        .fetch_all(&self.db.pool)
        .await?;
        Ok(rows.iter().map(Slot::from_row).collect::<Result<_, _>>()?)
    }

    /// The entities with a slot open to releases, in one read: those with
    /// a wanted slot first, as [`Self::slots_open_to_releases`] orders.
    pub async fn entities_open_to_releases(&self, limit: i64) -> Result<Vec<Entity>, DomainError> {
        let rows = sqlx::query(&format!(
            "SELECT m.* FROM media_entity m WHERE EXISTS (SELECT 1 FROM media_slot s \
             WHERE s.entity_id = m.id AND {OPEN_TO_RELEASES}) \
             ORDER BY CASE WHEN EXISTS (SELECT 1 FROM media_slot w WHERE w.entity_id = m.id \
             AND w.status = 'wanted') THEN 0 ELSE 1 END, m.created_at, m.id LIMIT $1"
        ))
        .bind(limit.clamp(1, 1000))
        .fetch_all(&self.db.pool)
        .await?;
        Ok(rows.iter().map(Entity::from_row).collect::<Result<_, _>>()?)
    }

    /// Series with a TMDB id and a season still wanted, fetched or held
    /// (not only `unwanted` slots), the longest unrefreshed first: what
    /// `refreshSeries` reads again from TMDB.
    pub async fn series_to_refresh(&self, limit: i64) -> Result<Vec<Entity>, DomainError> {
        let rows = sqlx::query(
            "SELECT m.* FROM media_entity m WHERE m.kind = 'tv' AND m.tmdb_id IS NOT NULL \
             AND EXISTS (SELECT 1 FROM media_slot s WHERE s.entity_id = m.id AND s.status <> 'unwanted') \
             ORDER BY m.updated_at, m.id LIMIT $1",
        )
        .bind(limit.clamp(1, 1000))
        .fetch_all(&self.db.pool)
        .await?;
        Ok(rows.iter().map(Entity::from_row).collect::<Result<_, _>>()?)
    }

    /// Records that the sweep searched for slot `id` now.
    pub async fn mark_searched(&self, id: &str) -> Result<(), DomainError> {
        sqlx::query("UPDATE media_slot SET searched_at = $2, searched_on = $3 WHERE id = $1")
            .bind(id)
            .bind(now_ms())
            .bind(super::episodes::today())
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// Slots in one status, oldest first.
    pub async fn slots_with_status(&self, status: SlotStatus, limit: i64) -> Result<Vec<Slot>, DomainError> {
        let rows = sqlx::query("SELECT * FROM media_slot WHERE status = $1 ORDER BY created_seq, id LIMIT $2")
            .bind(status.as_str())
            .bind(limit.clamp(1, 1000))
            .fetch_all(&self.db.pool)
            .await?;
        Ok(rows.iter().map(Slot::from_row).collect::<Result<_, _>>()?)
    }
}

/// A slot (`s`) a new release may be for.
const OPEN_TO_RELEASES: &str = "(s.status = 'wanted' OR (s.status = 'satisfied' AND s.profile IS NOT NULL))";

/// [`Domain::upsert_entity`] inside `tx`; returns the entity's id.
pub(super) async fn upsert_entity_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    new: &NewEntity,
) -> Result<String, DomainError> {
    require(!new.title.trim().is_empty(), || "title must not be empty".into())?;
    let seasons = serde_json::to_string(&new.seasons).map_err(|e| DomainError::Invalid(e.to_string()))?;
    let now = now_ms();
    let existing = match new.tmdb_id {
        Some(tmdb) => sqlx::query("SELECT id FROM media_entity WHERE kind = $1 AND tmdb_id = $2")
            .bind(new.kind.as_str())
            .bind(tmdb)
            .fetch_optional(&mut **tx)
            .await?
            .map(|r| sqlx::Row::get::<String, _>(&r, "id")),
        None => None,
    };
    let id = match existing {
        Some(id) => {
            sqlx::query(
                "UPDATE media_entity SET title = $1, original_title = $2, year = $3, seasons = $4, updated_at = $5 WHERE id = $6",
            )
            .bind(new.title.trim())
            .bind(&new.original_title)
            .bind(new.year)
            .bind(&seasons)
            .bind(now)
            .bind(&id)
            .execute(&mut **tx)
            .await?;
            id
        }
        None => {
            let id = new_id();
            sqlx::query(
                "INSERT INTO media_entity (id, kind, tmdb_id, title, original_title, year, seasons, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
            )
            .bind(&id)
            .bind(new.kind.as_str())
            .bind(new.tmdb_id)
            .bind(new.title.trim())
            .bind(&new.original_title)
            .bind(new.year)
            .bind(&seasons)
            .bind(now)
            .execute(&mut **tx)
            .await?;
            id
        }
    };
    super::episodes::upsert_episodes_in(tx, &id, &new.seasons, &new.episodes).await?;
    Ok(id)
}
