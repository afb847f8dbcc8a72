//! Plans as approvals see them: an acquisition plan is open while it is a
//! draft; an organization plan (its frozen artifact's hash is the payload
//! hash) while it is planned.

use sqlx::Row;

use super::Domain;
use crate::authz::{PlanSource, PlanState};

impl PlanSource for Domain {
    async fn plan_state(&self, plan_type: &str, plan_id: &str) -> Result<Option<PlanState>, sqlx::Error> {
        let (row, open_status) = match plan_type {
            "acquisition" => (
                sqlx::query(
                    "SELECT payload_hash, revision, created_by, status FROM acquisition_plan WHERE id = $1",
                )
                .bind(plan_id)
                .fetch_optional(&self.db.pool)
                .await?,
                "draft",
            ),
            "organization" => (
                sqlx::query(
                    "SELECT a.payload_hash AS payload_hash, o.revision AS revision, o.created_by AS created_by, \
                     o.status AS status \
                     FROM organization o JOIN artifact a ON a.id = o.plan_artifact_id WHERE o.id = $1",
                )
                .bind(plan_id)
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
