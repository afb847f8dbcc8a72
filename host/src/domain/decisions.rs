//! Decisions: questions left for a human (an ambiguous identity, a run over
//! budget). One per dedupe key, so a sweep that meets the same question
//! again does not open it twice.

use serde_json::Value;

use super::{Decision, Domain, DomainError, require};
use crate::store::{is_unique_violation, new_id, now_ms};

impl Domain {
    /// Opens a decision, or returns the one already opened under `dedupe_key`
    /// with `false`.
    pub async fn open_decision(
        &self,
        kind: &str,
        subject: Option<&str>,
        options: &Value,
        evidence: &Value,
        dedupe_key: &str,
    ) -> Result<(Decision, bool), DomainError> {
        require(!kind.trim().is_empty(), || "decision kind must not be empty".into())?;
        require(!dedupe_key.trim().is_empty(), || "dedupe key must not be empty".into())?;
        if let Some(found) = self.decision_by_key(dedupe_key).await? {
            return Ok((found, false));
        }
        let id = new_id();
        let now = now_ms();
        let inserted = sqlx::query(
            "INSERT INTO decision (id, kind, subject, status, options, evidence, dedupe_key, created_at, updated_at) \
             VALUES ($1, $2, $3, 'open', $4, $5, $6, $7, $7)",
        )
        .bind(&id)
        .bind(kind)
        .bind(subject)
        .bind(options.to_string())
        .bind(evidence.to_string())
        .bind(dedupe_key)
        .bind(now)
        .execute(&self.db.pool)
        .await;
        match inserted {
            Ok(_) => Ok((self.decision(&id).await?, true)),
            Err(e) if is_unique_violation(&e) => {
                Ok((self.decision_by_key(dedupe_key).await?.ok_or(DomainError::Sql(e))?, false))
            }
            Err(e) => Err(e.into()),
        }
    }

    pub async fn decision(&self, id: &str) -> Result<Decision, DomainError> {
        sqlx::query("SELECT * FROM decision WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Decision::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no decision {id}")))
    }

    async fn decision_by_key(&self, key: &str) -> Result<Option<Decision>, DomainError> {
        Ok(sqlx::query("SELECT * FROM decision WHERE dedupe_key = $1")
            .bind(key)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Decision::from_row(&r))
            .transpose()?)
    }

    /// Decisions, newest first, optionally in one status.
    pub async fn decisions(&self, status: Option<&str>, limit: i64) -> Result<Vec<Decision>, DomainError> {
        let rows = self.filtered("decision", &[("status", status)], "created_at DESC, id", limit).await?;
        Ok(rows.iter().map(Decision::from_row).collect::<Result<_, _>>()?)
    }

    /// Records the answer to a decision.
    pub async fn resolve_decision(&self, id: &str, resolution: &Value) -> Result<Decision, DomainError> {
        let changed = sqlx::query(
            "UPDATE decision SET status = 'resolved', resolution = $1, updated_at = $2 WHERE id = $3 AND status <> 'resolved'",
        )
        .bind(resolution.to_string())
        .bind(now_ms())
        .bind(id)
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        let decision = self.decision(id).await?;
        if changed == 0 {
            return Err(DomainError::Conflict(format!("decision {id} is already resolved")));
        }
        Ok(decision)
    }
}
