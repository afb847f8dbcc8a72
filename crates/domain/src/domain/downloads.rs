//! Download tasks: what the client is doing with a submitted plan. Status
//! changes come from polling the client; from `importing` on, only the
//! organization moves a download, and `imported` and `removed` are final.

use serde_json::json;

use super::model::ReadRow;
use super::{Domain, DomainError, DownloadStatus, DownloadTask, require};
use crate::store::now_ms;

/// A status change worth telling others about.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusChange {
    pub from: DownloadStatus,
    pub to: DownloadStatus,
}

impl Domain {
    pub async fn download(&self, id: &str) -> Result<DownloadTask, DomainError> {
        sqlx::query("SELECT * FROM download_task WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| DownloadTask::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no download task {id}")))
    }

    pub async fn download_for_plan(&self, plan_id: &str) -> Result<Option<DownloadTask>, DomainError> {
        Ok(sqlx::query("SELECT * FROM download_task WHERE plan_id = $1")
            .bind(plan_id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| DownloadTask::from_row(&r))
            .transpose()?)
    }

    /// Download tasks, most recently changed first, optionally in one status.
    pub async fn downloads(
        &self,
        status: Option<DownloadStatus>,
        limit: i64,
    ) -> Result<Vec<DownloadTask>, DomainError> {
        let rows = self
            .filtered("download_task", &[("status", status.map(DownloadStatus::as_str))], "updated_at DESC, id", limit)
            .await?;
        Ok(rows.iter().map(DownloadTask::from_row).collect::<Result<_, _>>()?)
    }

    /// Records what the client reports. Returns the task and, when the
    /// status changed, the change — exactly once per change, because the
    /// update only applies while the row still holds the old status. With
    /// `view`, what the client says besides (state, speed, seeds, ETA) is
    /// written in the same commit, whatever the download's status: nothing
    /// decides on it, it is for people to see.
    pub async fn update_download(
        &self,
        id: &str,
        status: DownloadStatus,
        progress: f64,
        content_path: Option<&str>,
        view: Option<&ClientView<'_>>,
    ) -> Result<(DownloadTask, Option<StatusChange>), DomainError> {
        require((0.0..=1.0).contains(&progress), || format!("progress {progress} is not between 0 and 1"))?;
        let mut tx = self.db.begin_write().await?;
        let current = sqlx::query("SELECT * FROM download_task WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| DownloadTask::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no download task {id}")))?;
        // Once an import has started, only the organization moves the record
        // (back to completed when it fails); the client's view no longer does.
        if let Some(view) = view {
            record_client_view(&mut tx, id, view).await?;
        }
        let organizing = [DownloadStatus::Importing, DownloadStatus::Imported, DownloadStatus::Removed];
        if organizing.contains(&current.status) && current.status != status {
            tx.commit().await?;
            return Err(DomainError::Conflict(format!(
                "download {id} is {}; the client's status no longer changes it",
                current.status
            )));
        }
        let now = now_ms();
        let moved = progress > current.progress || status != current.status;
        let changed = sqlx::query(
            "UPDATE download_task SET status = $1, progress = $2, content_path = COALESCE($3, content_path), \
             updated_at = $4, progress_at = $5 WHERE id = $6 AND status = $7",
        )
        .bind(status.as_str())
        .bind(progress)
        .bind(content_path)
        .bind(now)
        .bind(if moved { now } else { current.progress_at })
        .bind(id)
        .bind(current.status.as_str())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        // Another writer moved it first: their change is the one reported.
        let change =
            (changed == 1 && current.status != status).then_some(StatusChange { from: current.status, to: status });
        let mut announce = false;
        if let Some(change) = &change {
            let payload = json!({
                "downloadTaskId": id,
                "planId": current.plan_id,
                "from": change.from,
                "to": change.to,
                "progress": progress,
            });
            self.emit(&mut tx, "download.status_changed", id, payload).await?;
            announce = true;
        }
        tx.commit().await?;
        if announce {
            self.events.announce();
        }
        Ok((self.download(id).await?, change))
    }
}

/// Writes what the client says of a download besides its status and
/// progress, as read (an unknown value clears the one before).
async fn record_client_view(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    id: &str,
    view: &ClientView<'_>,
) -> Result<(), DomainError> {
    sqlx::query(
        "UPDATE download_task SET client_state = $1, download_speed = $2, seeds = $3, eta_seconds = $4 WHERE id = $5",
    )
    .bind(view.state)
    .bind(view.download_speed)
    .bind(view.seeds)
    .bind(view.eta_seconds)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// What a client says of a download besides its status and progress.
#[derive(Debug, Clone, Default)]
pub struct ClientView<'a> {
    pub state: Option<&'a str>,
    pub download_speed: Option<i64>,
    pub seeds: Option<i64>,
    pub eta_seconds: Option<i64>,
}
