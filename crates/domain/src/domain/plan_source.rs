//! Plans as approvals see them: an acquisition plan is open while it is a
//! draft; an organization plan (its frozen artifact's hash is the payload
//! hash) while it is planned. An organization that replaces files the
//! library holds is a `replacement` plan and no `organization` one, and the
//! other way round.

use sqlx::Row;

use super::Domain;
use crate::authz::{PlanSource, PlanState};

impl PlanSource for Domain {
    async fn plan_state(&self, plan_type: &str, plan_id: &str) -> Result<Option<PlanState>, sqlx::Error> {
        let (row, open_status) = match plan_type {
            "acquisition" => (
                sqlx::query("SELECT payload_hash, revision, created_by, status FROM acquisition_plan WHERE id = $1")
                    .bind(plan_id)
                    .fetch_optional(&self.db.pool)
                    .await?,
                "draft",
            ),
            "organization" | "replacement" => (
                sqlx::query(
                    "SELECT a.payload_hash AS payload_hash, o.revision AS revision, o.created_by AS created_by, \
                     o.status AS status \
                     FROM organization o JOIN artifact a ON a.id = o.plan_artifact_id WHERE o.id = $1 AND o.replaces = $2",
                )
                .bind(plan_id)
                .bind(i64::from(plan_type == "replacement"))
                .fetch_optional(&self.db.pool)
                .await?,
                "planned",
            ),
            _ => (None, ""),
        };
        row.map(|r| {
            Ok(PlanState {
                payload_hash: r.try_get("payload_hash")?,
                revision: r.try_get("revision")?,
                created_by: r.try_get("created_by")?,
                open: r.try_get::<String, _>("status")? == open_status,
            })
        })
        .transpose()
    }
}

impl Domain {
    /// The entity a plan (or the download task carrying one out) acts on
    /// and its kind (`movie`/`tv`), for checking a grant's scope against
    /// the real target rather than what an input claims.
    pub(crate) async fn plan_target(
        &self,
        plan_type: &str,
        plan_id: &str,
    ) -> Result<Option<(String, String)>, sqlx::Error> {
        let acquisition_id = match plan_type {
            "acquisition" => Some(plan_id.to_string()),
            "organization" | "replacement" => sqlx::query_scalar::<_, String>(
                "SELECT d.plan_id FROM organization o JOIN download_task d ON d.id = o.download_task_id WHERE o.id = $1",
            )
            .bind(plan_id)
            .fetch_optional(&self.db.pool)
            .await?,
            // A download task is scoped by the plan it carries out.
            "download" => sqlx::query_scalar::<_, String>("SELECT plan_id FROM download_task WHERE id = $1")
                .bind(plan_id)
                .fetch_optional(&self.db.pool)
                .await?,
            _ => None,
        };
        let Some(acquisition_id) = acquisition_id else { return Ok(None) };
        let row = sqlx::query(
            "SELECT e.id AS entity_id, e.kind AS kind FROM acquisition_plan p \
             JOIN media_slot s ON s.id = p.slot_id JOIN media_entity e ON e.id = s.entity_id WHERE p.id = $1",
        )
        .bind(&acquisition_id)
        .fetch_optional(&self.db.pool)
        .await?;
        row.map(|r| Ok((r.try_get("entity_id")?, r.try_get("kind")?))).transpose()
    }
}
