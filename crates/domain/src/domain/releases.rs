//! Source releases: what indexers offered, keyed by infohash so the same
//! torrent seen on two indexers is one release (one listed without a hash
//! by its indexer and link), and the identity match that says which entity
//! a release is for.

use serde_json::Value;

use super::model::ReadRow;
use super::{Domain, DomainError, IdentityStatus, NewRelease, SourceRelease, require};
use crate::store::{new_id, now_ms};

/// A v1 infohash in lowercase hex, or why it is not one.
pub(crate) fn normalize_infohash(hash: &str) -> Result<String, DomainError> {
    let hash = hash.trim().to_ascii_lowercase();
    require(hash.len() == 40 && hash.bytes().all(|b| b.is_ascii_hexdigit()), || {
        format!("infohash {hash:?} is not 40 hexadecimal digits")
    })?;
    Ok(hash)
}

impl Domain {
    /// Records a release; one already known by infohash (or, listed
    /// without one, by its indexer and link) is returned as is.
    pub async fn record_release(&self, new: &NewRelease) -> Result<SourceRelease, DomainError> {
        require(!new.title.trim().is_empty(), || "title must not be empty".into())?;
        require(!new.indexer.trim().is_empty(), || "indexer must not be empty".into())?;
        require(new.infohash.is_some() || new.download_url.is_some() || new.magnet_url.is_some(), || {
            "a release needs an infohash, a download URL or a magnet link".into()
        })?;
        require(new.size.is_none_or(|s| s >= 0), || "size must not be negative".into())?;
        let infohash = new.infohash.as_deref().map(normalize_infohash).transpose()?;
        if let Some(hash) = &infohash
            && let Some(found) = self.release_by_infohash(hash).await?
        {
            return Ok(found);
        }
        if infohash.is_none()
            && let Some(link) = &new.download_url
            && let Some(found) = self.release_by_link(new.indexer.trim(), link).await?
        {
            return Ok(found);
        }
        let parsed = if new.parsed.is_null() { Value::Object(Default::default()) } else { new.parsed.clone() };
        let id = new_id();
        let now = now_ms();
        let inserted = sqlx::query(
            "INSERT INTO source_release (id, indexer, title, parsed, size, infohash, download_url, magnet_url, identity_status, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'unresolved', $9, $9)",
        )
        .bind(&id)
        .bind(new.indexer.trim())
        .bind(new.title.trim())
        .bind(parsed.to_string())
        .bind(new.size)
        .bind(&infohash)
        .bind(&new.download_url)
        .bind(&new.magnet_url)
        .bind(now)
        .execute(&self.db.pool)
        .await;
        match (inserted, &infohash) {
            (Ok(_), _) => self.release(&id).await,
            // Another caller recorded the same torrent first: theirs stands.
            (Err(e), Some(hash)) if crate::store::is_unique_violation(&e) => {
                self.release_by_infohash(hash).await?.ok_or_else(|| DomainError::Sql(e))
            }
            (Err(e), _) => Err(e.into()),
        }
    }

    pub async fn release(&self, id: &str) -> Result<SourceRelease, DomainError> {
        sqlx::query("SELECT * FROM source_release WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| SourceRelease::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no source release {id}")))
    }

    pub async fn release_by_infohash(&self, hash: &str) -> Result<Option<SourceRelease>, DomainError> {
        let hash = normalize_infohash(hash)?;
        Ok(sqlx::query("SELECT * FROM source_release WHERE infohash = $1")
            .bind(&hash)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| SourceRelease::from_row(&r))
            .transpose()?)
    }

    /// The release an indexer listed without an infohash at `link` (its
    /// download link as recorded, the key a slot), if one was recorded.
    pub async fn release_by_link(&self, indexer: &str, link: &str) -> Result<Option<SourceRelease>, DomainError> {
        Ok(sqlx::query(
            "SELECT * FROM source_release WHERE indexer = $1 AND download_url = $2 AND infohash IS NULL \
             ORDER BY created_at, id LIMIT 1",
        )
        .bind(indexer)
        .bind(link)
        .fetch_optional(&self.db.pool)
        .await?
        .map(|r| SourceRelease::from_row(&r))
        .transpose()?)
    }

    /// The releases resolved to an entity, oldest first. An unknown entity
    /// is `NotFound` rather than an empty list, so a typo is not mistaken
    /// for "nothing offered yet".
    pub async fn releases_for_entity(&self, entity_id: &str) -> Result<Vec<SourceRelease>, DomainError> {
        self.entity(entity_id).await?;
        let rows = sqlx::query("SELECT * FROM source_release WHERE entity_id = $1 ORDER BY created_at, id LIMIT 1000")
            .bind(entity_id)
            .fetch_all(&self.db.pool)
            .await?;
        Ok(rows.iter().map(SourceRelease::from_row).collect::<Result<_, _>>()?)
    }

    /// Records whom a release is for: `resolved` with an entity, or
    /// `ambiguous` without one, with the evidence either way.
    pub async fn match_identity(
        &self,
        release_id: &str,
        entity_id: Option<&str>,
        status: IdentityStatus,
        evidence: &Value,
    ) -> Result<SourceRelease, DomainError> {
        require(status != IdentityStatus::Unresolved, || "an identity match is resolved or ambiguous".into())?;
        require((status == IdentityStatus::Resolved) == entity_id.is_some(), || {
            "a resolved identity names an entity; an ambiguous one does not".into()
        })?;
        if let Some(entity) = entity_id {
            self.entity(entity).await?;
        }
        let changed = sqlx::query(
            "UPDATE source_release SET entity_id = $1, identity_status = $2, evidence = $3, updated_at = $4 WHERE id = $5",
        )
        .bind(entity_id)
        .bind(status.as_str())
        .bind(evidence.to_string())
        .bind(now_ms())
        .bind(release_id)
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(DomainError::NotFound(format!("no source release {release_id}")));
        }
        self.release(release_id).await
    }
}
