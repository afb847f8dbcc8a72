//! Policies with revisions. A new revision starts as a draft; publishing it
//! supersedes the revision published before. Grants bound to a revision
//! stop authorising anything once it is no longer the published one.

use sqlx::Row;

use super::{Authz, AuthzError};
use crate::store::now_ms;

/// Policy revisions and their statuses: the contract's, which guests read
/// through `policy.get`.
pub use capstan_contract::records::Policy;
pub use capstan_contract::status::PolicyStatus;

fn from_row(r: &sqlx::any::AnyRow) -> Result<Policy, sqlx::Error> {
    let status: String = r.try_get("status")?;
    let body: String = r.try_get("body")?;
    Ok(Policy {
        name: r.try_get("name")?,
        revision: r.try_get("revision")?,
        status: PolicyStatus::parse(&status).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        body: serde_json::from_str(&body).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        created_by: r.try_get("created_by")?,
    })
}

impl Authz {
    /// Adds a draft revision of policy `name` and returns it.
    pub async fn draft_policy(&self, name: &str, body: &serde_json::Value, by: &str) -> Result<Policy, AuthzError> {
        if name.is_empty()
            || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        {
            return Err(AuthzError::Invalid(format!("policy name {name:?} must be lowercase letters, digits, . or -")));
        }
        let mut tx = self.db.begin_write().await?;
        let last: Option<i64> = sqlx::query_scalar("SELECT MAX(revision) FROM policy WHERE name = $1")
            .bind(name)
            .fetch_one(&mut *tx)
            .await?;
        let revision = last.unwrap_or(0) + 1;
        let now = now_ms();
        sqlx::query(
            "INSERT INTO policy (name, revision, status, body, created_by, created_at, updated_at) \
             VALUES ($1, $2, 'draft', $3, $4, $5, $5)",
        )
        .bind(name)
        .bind(revision)
        .bind(body.to_string())
        .bind(by)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.policy(name, revision).await?.ok_or_else(|| AuthzError::NotFound("policy", name.to_string()))
    }

    /// Publishes a draft revision; the previously published one is superseded.
    pub async fn publish_policy(&self, name: &str, revision: i64) -> Result<Policy, AuthzError> {
        let mut tx = self.db.begin_write().await?;
        let status: Option<String> = sqlx::query_scalar("SELECT status FROM policy WHERE name = $1 AND revision = $2")
            .bind(name)
            .bind(revision)
            .fetch_optional(&mut *tx)
            .await?;
        match status.as_deref() {
            None => return Err(AuthzError::NotFound("policy revision", format!("{name}@{revision}"))),
            Some("draft") => {}
            Some(other) => {
                return Err(AuthzError::Invalid(format!(
                    "{name}@{revision} is {other}; only a draft can be published"
                )));
            }
        }
        let now = now_ms();
        sqlx::query(
            "UPDATE policy SET status = 'superseded', updated_at = $1 WHERE name = $2 AND status = 'published'",
        )
        .bind(now)
        .bind(name)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE policy SET status = 'published', updated_at = $1 WHERE name = $2 AND revision = $3")
            .bind(now)
            .bind(name)
            .bind(revision)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.policy(name, revision).await?.ok_or_else(|| AuthzError::NotFound("policy", name.to_string()))
    }

    pub async fn policy(&self, name: &str, revision: i64) -> Result<Option<Policy>, sqlx::Error> {
        let row = sqlx::query("SELECT * FROM policy WHERE name = $1 AND revision = $2")
            .bind(name)
            .bind(revision)
            .fetch_optional(&self.db.pool)
            .await?;
        row.map(|r| from_row(&r)).transpose()
    }

    /// The published revision of policy `name`.
    pub async fn published_policy(&self, name: &str) -> Result<Policy, AuthzError> {
        let row = sqlx::query("SELECT * FROM policy WHERE name = $1 AND status = 'published'")
            .bind(name)
            .fetch_optional(&self.db.pool)
            .await?;
        row.map(|r| from_row(&r)).transpose()?.ok_or_else(|| AuthzError::NotFound("published policy", name.to_string()))
    }

    /// The published policy of `kind`, when there is one (the newest, if
    /// several of that kind are published).
    pub async fn published_of_kind(&self, kind: &str) -> Result<Option<Policy>, sqlx::Error> {
        let rows = sqlx::query("SELECT * FROM policy WHERE status = 'published' ORDER BY created_at DESC, name")
            .fetch_all(&self.db.pool)
            .await?;
        let published: Vec<Policy> = rows.iter().map(from_row).collect::<Result<_, _>>()?;
        Ok(published.into_iter().find(|p| p.kind() == kind))
    }

    /// Every revision of every policy, newest first.
    pub async fn policies(&self) -> Result<Vec<Policy>, sqlx::Error> {
        let rows = sqlx::query("SELECT * FROM policy ORDER BY name, revision DESC").fetch_all(&self.db.pool).await?;
        rows.iter().map(from_row).collect()
    }
}
