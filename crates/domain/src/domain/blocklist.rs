//! The blocklist: releases the sweep does not pick again, for any slot,
//! with why and who said so; and giving up a download for another release
//! (`download.replace`): its release is blocked, the download is `removed`
//! (final), and its slot is let go — wanted again and due a search, or
//! satisfied when it holds what it needs (an upgrade given up). A plan for
//! a blocked release is refused; unblocking lets it be picked again.

use serde_json::json;
use sqlx::{Any, Row, Transaction, any::AnyRow};

use super::model::ReadRow;
use super::{BlockedRelease, Domain, DomainError, DownloadStatus, DownloadTask, SlotStatus, require};
use crate::store::now_ms;

/// Longest reason kept.
pub const MAX_REASON: usize = 500;
/// Most blocked releases listed at once.
pub const MAX_LISTED: i64 = 500;

const SELECT: &str = "SELECT b.release_id AS release_id, r.title AS title, r.entity_id AS entity_id, \
     b.reason AS reason, b.blocked_by AS blocked_by, b.created_at AS created_at \
     FROM release_block b JOIN source_release r ON r.id = b.release_id";

impl ReadRow for BlockedRelease {
    fn from_row(r: &AnyRow) -> Result<BlockedRelease, sqlx::Error> {
        Ok(BlockedRelease {
            release_id: r.try_get("release_id")?,
            title: r.try_get("title")?,
            entity_id: r.try_get("entity_id")?,
            reason: r.try_get("reason")?,
            blocked_by: r.try_get("blocked_by")?,
            created_at: r.try_get("created_at")?,
        })
    }
}

fn check_reason(reason: &str) -> Result<&str, DomainError> {
    let reason = reason.trim();
    require(!reason.is_empty() && reason.chars().count() <= MAX_REASON, || {
        format!("say why the release is blocked, in 1 to {MAX_REASON} characters")
    })?;
    Ok(reason)
}

/// Blocks `release_id` inside `tx` unless it is already; answers the entry.
async fn block_in(
    tx: &mut Transaction<'_, Any>,
    release_id: &str,
    reason: &str,
    by: &str,
) -> Result<BlockedRelease, DomainError> {
    let known =
        sqlx::query("SELECT 1 FROM source_release WHERE id = $1").bind(release_id).fetch_optional(&mut **tx).await?;
    if known.is_none() {
        return Err(DomainError::NotFound(format!("no source release {release_id}")));
    }
    let blocked = sqlx::query("SELECT 1 FROM release_block WHERE release_id = $1")
        .bind(release_id)
        .fetch_optional(&mut **tx)
        .await?;
    if blocked.is_none() {
        sqlx::query("INSERT INTO release_block (release_id, reason, blocked_by, created_at) VALUES ($1, $2, $3, $4)")
            .bind(release_id)
            .bind(reason)
            .bind(by)
            .bind(now_ms())
            .execute(&mut **tx)
            .await?;
    }
    let row = sqlx::query(&format!("{SELECT} WHERE b.release_id = $1")).bind(release_id).fetch_one(&mut **tx).await?;
    Ok(BlockedRelease::from_row(&row)?)
}

impl Domain {
    /// Blocks a release (already blocked: the entry as it was).
    pub async fn block_release(&self, release_id: &str, reason: &str, by: &str) -> Result<BlockedRelease, DomainError> {
        let reason = check_reason(reason)?;
        let mut tx = self.db.begin_write().await?;
        let blocked = block_in(&mut tx, release_id, reason, by).await?;
        tx.commit().await?;
        Ok(blocked)
    }

    /// Lets a release be picked again; `NotFound` when it was not blocked.
    pub async fn unblock_release(&self, release_id: &str) -> Result<(), DomainError> {
        let removed = sqlx::query("DELETE FROM release_block WHERE release_id = $1")
            .bind(release_id)
            .execute(&self.db.pool)
            .await?
            .rows_affected();
        require(removed > 0, || format!("release {release_id} is not blocked")).map_err(|e| match e {
            DomainError::Invalid(m) => DomainError::NotFound(m),
            other => other,
        })
    }

    /// The blocklist, newest first.
    pub async fn blocklist(&self, limit: i64) -> Result<Vec<BlockedRelease>, DomainError> {
        let rows = sqlx::query(&format!("{SELECT} ORDER BY b.created_at DESC, b.release_id LIMIT $1"))
            .bind(limit.clamp(1, MAX_LISTED))
            .fetch_all(&self.db.pool)
            .await?;
        Ok(rows.iter().map(BlockedRelease::from_row).collect::<Result<_, _>>()?)
    }

    /// The blocked releases identified as `entity_id`: what its slots skip.
    pub async fn blocked_for_entity(&self, entity_id: &str) -> Result<Vec<String>, DomainError> {
        Ok(sqlx::query_scalar(
            "SELECT b.release_id FROM release_block b JOIN source_release r ON r.id = b.release_id \
             WHERE r.entity_id = $1",
        )
        .bind(entity_id)
        .fetch_all(&self.db.pool)
        .await?)
    }

    /// Whether `release_id` is blocked, and why.
    pub(crate) async fn blocked(&self, release_id: &str) -> Result<Option<BlockedRelease>, DomainError> {
        let row = sqlx::query(&format!("{SELECT} WHERE b.release_id = $1"))
            .bind(release_id)
            .fetch_optional(&self.db.pool)
            .await?;
        Ok(row.map(|r| BlockedRelease::from_row(&r)).transpose()?)
    }

    /// Gives up download `download_id` for another release: blocks its
    /// release, marks it `removed` and lets its slot go (due a search when
    /// wanted). A download already removed answers as it is; one being or
    /// already imported is a `conflict`.
    pub async fn replace_download(
        &self,
        download_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<(DownloadTask, BlockedRelease), DomainError> {
        let reason = check_reason(reason)?;
        let download = self.download(download_id).await?;
        let plan = self.plan(&download.plan_id).await?;
        let slot = self.slot(&plan.slot_id).await?;
        let profile = self.profile_of(&slot).await?;
        let mut tx = self.db.begin_write().await?;
        let blocked = block_in(&mut tx, &plan.source_release_id, reason, by).await?;
        match download.status {
            DownloadStatus::Removed => {
                tx.commit().await?;
                return Ok((download, blocked));
            }
            DownloadStatus::Importing | DownloadStatus::Imported => {
                return Err(DomainError::Conflict(format!(
                    "download {download_id} is {}; there is nothing to replace",
                    download.status
                )));
            }
            _ => {}
        }
        let changed =
            sqlx::query("UPDATE download_task SET status = 'removed', updated_at = $2 WHERE id = $1 AND status = $3")
                .bind(download_id)
                .bind(now_ms())
                .bind(download.status.as_str())
                .execute(&mut *tx)
                .await?
                .rows_affected();
        if changed == 0 {
            return Err(DomainError::Conflict(format!("download {download_id} changed meanwhile; look again")));
        }
        let payload = json!({
            "downloadTaskId": download_id, "planId": plan.id, "from": download.status,
            "to": DownloadStatus::Removed, "progress": download.progress, "reason": reason,
        });
        self.emit(&mut tx, "download.status_changed", download_id, payload).await?;
        if slot.status == SlotStatus::Reserved
            && super::held::let_go_in(&mut tx, &slot, profile.as_ref(), SlotStatus::Wanted).await? == SlotStatus::Wanted
        {
            sqlx::query("UPDATE media_slot SET searched_at = NULL WHERE id = $1")
                .bind(&slot.id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        self.events.announce();
        Ok((self.download(download_id).await?, blocked))
    }
}
