//! Artifacts (frozen plans, reports, evidence, each with the hash of its
//! body) and organizations: putting a completed download into the library
//! by a frozen plan. Starting an organization checks the plan's
//! fingerprint; finishing it marks the download imported, records the
//! files the slot now holds and settles the slot (satisfied, or still
//! wanted: [`super::held`]) in the same transaction. An organization whose
//! items replace files the slot holds (an upgrade) is marked `replaces`;
//! only a file the slot holds can be named as replaced.

use serde_json::{Value, json};

use super::model::ReadRow;
use super::{
    Artifact, ArtifactKind, Author, Domain, DomainError, DownloadStatus, NewOrganizationPlan, Organization,
    OrganizationStatus, SlotStatus, payload_hash, require,
};
use crate::store::{new_id, now_ms};

impl Domain {
    /// Stores an artifact; its payload hash is the fingerprint of `body`.
    pub async fn create_artifact(
        &self,
        by: &Author,
        kind: ArtifactKind,
        subject: Option<&str>,
        body: &Value,
    ) -> Result<Artifact, DomainError> {
        let id = new_id();
        sqlx::query(
            "INSERT INTO artifact (id, kind, subject, body, payload_hash, created_by, run_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&id)
        .bind(kind.as_str())
        .bind(subject)
        .bind(body.to_string())
        .bind(payload_hash(body))
        .bind(&by.principal)
        .bind(&by.run_id)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        self.artifact(&id).await
    }

    pub async fn artifact(&self, id: &str) -> Result<Artifact, DomainError> {
        sqlx::query("SELECT * FROM artifact WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Artifact::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no artifact {id}")))
    }

    /// Artifacts, newest first, optionally of one kind or about one subject.
    pub async fn artifacts(
        &self,
        kind: Option<ArtifactKind>,
        subject: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Artifact>, DomainError> {
        let rows = self
            .filtered(
                "artifact",
                &[("kind", kind.map(ArtifactKind::as_str)), ("subject", subject)],
                "created_at DESC, id",
                limit,
            )
            .await?;
        Ok(rows.iter().map(Artifact::from_row).collect::<Result<_, _>>()?)
    }

    /// Freezes an organization plan for a completed download. The same plan
    /// again returns the open organization unchanged; a different one
    /// re-freezes it (new artifact, revision bumped), which makes approvals
    /// of the old plan stale.
    pub async fn plan_organization(
        &self,
        by: &Author,
        new: &NewOrganizationPlan,
    ) -> Result<(Organization, Artifact), DomainError> {
        require(!new.items.is_empty(), || "an organization plan needs at least one item".into())?;
        let download = self.download(&new.download_task_id).await?;
        require(matches!(download.status, DownloadStatus::Completed | DownloadStatus::Importing), || {
            format!("download {} is {}; only a completed download can be organized", download.id, download.status)
        })?;
        let replaces = self.check_replaced(&download.plan_id, &new.items).await?;
        let body = json!({ "downloadTaskId": download.id, "mode": new.mode, "items": new.items });
        let fingerprint = payload_hash(&body);
        let open = self.open_organization(&download.id).await?;
        if let Some(open) = &open {
            let artifact = self.artifact(&open.plan_artifact_id).await?;
            if artifact.payload_hash == fingerprint {
                return Ok((open.clone(), artifact));
            }
        }
        let artifact = self.create_artifact(by, ArtifactKind::Plan, Some(&download.id), &body).await?;
        let items = Value::Array(new.items.clone()).to_string();
        let now = now_ms();
        let id = match open {
            Some(open) => {
                let changed = sqlx::query(
                    "UPDATE organization SET plan_artifact_id = $1, mode = $2, items = $3, revision = revision + 1, \
                     updated_at = $4, replaces = $7 WHERE id = $5 AND revision = $6 AND status = 'planned'",
                )
                .bind(&artifact.id)
                .bind(new.mode.as_str())
                .bind(&items)
                .bind(now)
                .bind(&open.id)
                .bind(open.revision)
                .bind(i64::from(replaces))
                .execute(&self.db.pool)
                .await?
                .rows_affected();
                if changed == 0 {
                    return Err(DomainError::Conflict(format!("organization {} changed while re-planning", open.id)));
                }
                open.id
            }
            None => {
                let id = new_id();
                sqlx::query(
                    "INSERT INTO organization (id, download_task_id, plan_artifact_id, mode, items, status, revision, \
                     created_by, created_at, updated_at, replaces) VALUES ($1, $2, $3, $4, $5, 'planned', 1, $6, $7, $7, $8)",
                )
                .bind(&id)
                .bind(&download.id)
                .bind(&artifact.id)
                .bind(new.mode.as_str())
                .bind(&items)
                .bind(&by.principal)
                .bind(now)
                .bind(i64::from(replaces))
                .execute(&self.db.pool)
                .await?;
                id
            }
        };
        Ok((self.organization(&id).await?, artifact))
    }

    /// Whether `items` replace files the library holds, each naming one
    /// (`replaces`) that the slot of plan `plan_id` holds: the movie's file,
    /// or an episode file of the season. Naming any other file is refused.
    async fn check_replaced(&self, plan_id: &str, items: &[Value]) -> Result<bool, DomainError> {
        let named: Vec<&str> = items
            .iter()
            .flat_map(|i| i.get("replaces").and_then(Value::as_array).into_iter().flatten())
            .map(|path| path.as_str().ok_or_else(|| DomainError::Invalid("an item's replaces must list paths".into())))
            .collect::<Result<_, _>>()?;
        if named.is_empty() {
            return Ok(false);
        }
        let slot = self.slot(&self.plan(plan_id).await?.slot_id).await?;
        let held: Vec<String> = match slot.season {
            None => slot.file.into_iter().collect(),
            Some(season) => {
                sqlx::query_scalar(
                    "SELECT file FROM media_episode WHERE entity_id = $1 AND season = $2 AND file IS NOT NULL",
                )
                .bind(&slot.entity_id)
                .bind(season)
                .fetch_all(&self.db.pool)
                .await?
            }
        };
        if let Some(stranger) = named.iter().find(|n| !held.iter().any(|h| h == *n)) {
            return Err(DomainError::Invalid(format!(
                "an item replaces {stranger}, which is not a file the library holds for this title"
            )));
        }
        Ok(true)
    }

    async fn open_organization(&self, download_id: &str) -> Result<Option<Organization>, DomainError> {
        Ok(sqlx::query("SELECT * FROM organization WHERE download_task_id = $1 AND status = 'planned'")
            .bind(download_id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Organization::from_row(&r))
            .transpose()?)
    }

    pub async fn organization(&self, id: &str) -> Result<Organization, DomainError> {
        sqlx::query("SELECT * FROM organization WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Organization::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no organization {id}")))
    }

    /// Organizations of one download, newest first.
    pub async fn organizations_for_download(&self, download_id: &str) -> Result<Vec<Organization>, DomainError> {
        let rows = self
            .filtered("organization", &[("download_task_id", Some(download_id))], "created_at DESC, id", 100)
            .await?;
        Ok(rows.iter().map(Organization::from_row).collect::<Result<_, _>>()?)
    }

    /// planned → running, only while the frozen plan still has the
    /// fingerprint the caller worked from; the download becomes `importing`.
    pub async fn start_organization(&self, id: &str, fingerprint: &str) -> Result<Organization, DomainError> {
        let org = self.organization(id).await?;
        let artifact = self.artifact(&org.plan_artifact_id).await?;
        if artifact.payload_hash != fingerprint {
            return Err(DomainError::Conflict(format!("organization {id} was planned with another fingerprint")));
        }
        match org.status {
            OrganizationStatus::Planned => {}
            OrganizationStatus::Running => return Ok(org),
            other => return Err(DomainError::Conflict(format!("organization {id} is {other}; it cannot start"))),
        }
        let now = now_ms();
        let mut tx = self.db.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE organization SET status = 'running', revision = revision + 1, updated_at = $1 WHERE id = $2 AND status = 'planned'",
        )
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(DomainError::Conflict(format!("organization {id} changed while starting")));
        }
        sqlx::query(
            "UPDATE download_task SET status = 'importing', updated_at = $1 WHERE id = $2 AND status = 'completed'",
        )
        .bind(now)
        .bind(&org.download_task_id)
        .execute(&mut *tx)
        .await?;
        let payload = json!({ "organizationId": id, "downloadTaskId": org.download_task_id, "status": OrganizationStatus::Running });
        self.emit(&mut tx, "organization.changed", id, payload).await?;
        tx.commit().await?;
        self.events.announce();
        self.organization(id).await
    }

    /// running → succeeded (download imported, slot satisfied) or failed
    /// (download back to completed, so it can be planned again).
    pub async fn finish_organization(&self, id: &str, error: Option<&str>) -> Result<Organization, DomainError> {
        let org = self.organization(id).await?;
        let status = if error.is_some() { OrganizationStatus::Failed } else { OrganizationStatus::Succeeded };
        match org.status {
            OrganizationStatus::Running => {}
            s if s == status => return Ok(org),
            other => return Err(DomainError::Conflict(format!("organization {id} is {other}, not running"))),
        }
        let download = self.download(&org.download_task_id).await?;
        let plan = self.plan(&download.plan_id).await?;
        let slot = self.slot(&plan.slot_id).await?;
        let profile = self.profile_of(&slot).await?;
        let now = now_ms();
        let mut tx = self.db.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE organization SET status = $1, error = $2, revision = revision + 1, updated_at = $3 \
             WHERE id = $4 AND status = 'running'",
        )
        .bind(status.as_str())
        .bind(error)
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(DomainError::Conflict(format!("organization {id} changed while finishing")));
        }
        let download_status = if error.is_some() { DownloadStatus::Completed } else { DownloadStatus::Imported };
        sqlx::query("UPDATE download_task SET status = $1, updated_at = $2 WHERE id = $3")
            .bind(download_status.as_str())
            .bind(now)
            .bind(&download.id)
            .execute(&mut *tx)
            .await?;
        if error.is_none() {
            // What the slot now holds, and whether that is enough: a season
            // is satisfied once no monitored episode that has aired is left
            // without a file, and any slot once no file is below its
            // profile's cutoff.
            match slot.season {
                Some(_) => {
                    let files = super::episodes::files_of_items(&org.items);
                    super::episodes::record_files_in(&mut tx, &slot.entity_id, &files, &plan.source_release_id).await?;
                }
                None => {
                    if let Some(file) = main_file(&org.items) {
                        sqlx::query("UPDATE media_slot SET file = $2, file_release_id = $3 WHERE id = $1")
                            .bind(&slot.id)
                            .bind(file)
                            .bind(&plan.source_release_id)
                            .execute(&mut *tx)
                            .await?;
                    }
                }
            }
            super::held::let_go_in(&mut tx, &slot, profile.as_ref(), SlotStatus::Satisfied).await?;
        }
        let payload = json!({
            "organizationId": id,
            "downloadTaskId": download.id,
            "slotId": plan.slot_id,
            "status": status,
            "error": error,
        });
        self.emit(&mut tx, "organization.changed", id, payload).await?;
        tx.commit().await?;
        self.events.announce();
        self.organization(id).await
    }
}

impl Domain {
    /// Takes organization `id` for `holder` until `until_ms` (or renews the
    /// hold `holder` already has). Answers `false` when another holder's
    /// hold has not run out; `NotFound` when there is no such organization.
    pub async fn hold_organization(&self, id: &str, holder: &str, until_ms: i64) -> Result<bool, DomainError> {
        let taken = sqlx::query(
            "UPDATE organization SET holder = $1, held_until = $2 \
             WHERE id = $3 AND (holder IS NULL OR holder = $1 OR held_until < $4)",
        )
        .bind(holder)
        .bind(until_ms)
        .bind(id)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        if taken == 0 {
            self.organization(id).await?;
        }
        Ok(taken > 0)
    }

    /// Extends `holder`'s hold on organization `id` to `until_ms`, only if
    /// it still has it.
    pub async fn renew_organization(&self, id: &str, holder: &str, until_ms: i64) -> Result<(), DomainError> {
        sqlx::query("UPDATE organization SET held_until = $1 WHERE id = $2 AND holder = $3")
            .bind(until_ms)
            .bind(id)
            .bind(holder)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// Lets go of `holder`'s hold on organization `id`, if it still has it.
    pub async fn release_organization(&self, id: &str, holder: &str) -> Result<(), DomainError> {
        sqlx::query("UPDATE organization SET holder = NULL, held_until = NULL WHERE id = $1 AND holder = $2")
            .bind(id)
            .bind(holder)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }
}

/// A movie's file among an organization's items: the largest one placed.
fn main_file(items: &Value) -> Option<&str> {
    items
        .as_array()?
        .iter()
        .filter_map(|i| Some((i.get("size").and_then(Value::as_u64).unwrap_or(0), i.get("destination")?.as_str()?)))
        .max_by_key(|(size, _)| *size)
        .map(|(_, destination)| destination)
}
