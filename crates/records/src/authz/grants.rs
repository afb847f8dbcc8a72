//! Standing automation grants: what an automated caller may do without a
//! per-call approval. A grant names an action (an exact capability id, a
//! `prefix.*` wildcard over ids such as `task.*`, a policy action such as
//! `policy.acquisition` that capabilities carry as a tag, or `*`),
//! optionally a policy revision that must still be published, a scope
//! (entity ids, media kinds, capabilities), daily budgets, an expiry and
//! the operator's reason. Grants may be revoked or shortened, never
//! widened.

use serde::{Deserialize, Serialize};
use sqlx::FromRow;

use super::{Authz, AuthzError};
use crate::store::{new_id, now_ms};

/// The most calls a day a grant may allow.
pub const MAX_DAILY_INVOCATIONS: i64 = 100_000;
/// The most bytes a day a grant may allow (1 TB).
pub const MAX_DAILY_BYTES: i64 = 1_000_000_000_000;
/// How far ahead a grant may expire: a year, so a forgotten grant ends.
pub const MAX_GRANT_DAYS: i64 = 365;
const DAY_MS: i64 = 86_400_000;
/// What a grant allows when the body does not say: 100 calls and 10 GB a
/// day, for 30 days.
pub const DEFAULT_DAILY_INVOCATIONS: i64 = 100;
pub const DEFAULT_DAILY_BYTES: i64 = 10_000_000_000;
pub const DEFAULT_GRANT_DAYS: i64 = 30;
/// The longest reason kept.
pub const MAX_REASON_CHARS: usize = 500;
/// `<name>@<revision>`: a policy's name, then a revision (a whole number
/// from 1, at most 18 digits, so it is one `i64` holds).
pub const POLICY_REVISION_ID_PATTERN: &str = "^[^@]+@[1-9][0-9]{0,17}$";

fn default_daily_invocations() -> i64 {
    DEFAULT_DAILY_INVOCATIONS
}

fn default_daily_bytes() -> i64 {
    DEFAULT_DAILY_BYTES
}

fn default_expiry() -> i64 {
    now_ms() + DEFAULT_GRANT_DAYS * DAY_MS
}

/// The ids a `prefix.*` action covers start with `prefix.`: its prefix.
pub fn wildcard_prefix(action: &str) -> Option<&str> {
    action.strip_suffix(".*").filter(|p| !p.is_empty() && !p.contains('*'))
}

/// What a grant covers; an empty list means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrantScope {
    #[serde(default)]
    pub entity_ids: Vec<String>,
    #[serde(default)]
    pub media_kinds: Vec<String>,
    #[serde(default)]
    pub capabilities: Vec<String>,
}

// The stored scope is its JSON.
impl TryFrom<String> for GrantScope {
    type Error = serde_json::Error;
    fn try_from(json: String) -> Result<GrantScope, serde_json::Error> {
        serde_json::from_str(&json)
    }
}

/// A grant to create.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewGrant {
    /// An execute capability's id, a `prefix.*` wildcard, a `policy.*`
    /// action, or `*`.
    #[schema(schema_with = crate::text::not_blank_schema)]
    pub action: String,
    /// The policy the grant is bound to, with `policyRevision`.
    #[serde(default)]
    pub policy_name: Option<String>,
    /// The revision of `policyName` the grant is bound to.
    #[serde(default)]
    pub policy_revision: Option<i64>,
    #[serde(default)]
    #[schema(schema_with = policy_revision_id_schema)]
    pub policy_revision_id: Option<String>,
    #[serde(default)]
    pub scope: GrantScope,
    #[serde(default = "default_daily_invocations")]
    #[schema(schema_with = daily_invocations_schema)]
    pub daily_invocations: i64,
    #[serde(default = "default_daily_bytes")]
    #[schema(schema_with = daily_bytes_schema)]
    pub daily_bytes: i64,
    /// Milliseconds since the epoch; in the future, at most 365 days ahead
    /// (default 30 days from now).
    #[serde(default = "default_expiry")]
    pub expires_at: i64,
    #[serde(default)]
    #[schema(schema_with = reason_schema)]
    pub reason: Option<String>,
}

/// A whole number from 1 to `max`, as `create_grant` checks it.
fn budget_schema(max: i64, description: &str) -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(1))
        .maximum(Some(max))
        .description(Some(description))
        .build()
}

fn daily_invocations_schema() -> utoipa::openapi::Object {
    budget_schema(MAX_DAILY_INVOCATIONS, "Calls a day (default 100).")
}

fn daily_bytes_schema() -> utoipa::openapi::Object {
    budget_schema(MAX_DAILY_BYTES, "Bytes a day (default 10 GB).")
}

fn nullable_text(description: &str) -> utoipa::openapi::schema::ObjectBuilder {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null])).description(Some(description))
}

fn reason_schema() -> utoipa::openapi::Object {
    nullable_text("Why the grant is given, for whoever reads it later.").max_length(Some(MAX_REASON_CHARS)).build()
}

fn policy_revision_id_schema() -> utoipa::openapi::Object {
    nullable_text(
        "The policy revision the grant is bound to, as `<name>@<revision>` (instead of `policyName` and \
         `policyRevision`).",
    )
    .pattern(Some(POLICY_REVISION_ID_PATTERN))
    .build()
}

/// A stored grant.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct AutomationGrant {
    pub id: String,
    pub action: String,
    pub policy_name: Option<String>,
    pub policy_revision: Option<i64>,
    #[sqlx(try_from = "String")]
    pub scope: GrantScope,
    pub daily_invocations: i64,
    pub daily_bytes: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
    pub reason: Option<String>,
    pub created_by: String,
    pub created_at: i64,
}

/// The capability a call is for, as grants see it: its id and the
/// `policy.*` tags that let an action-wide grant cover it.
#[derive(Debug, Clone, Copy)]
pub struct Callee<'a> {
    pub id: &'a str,
    pub tags: &'a [String],
}

fn listed(list: &[String], value: Option<&str>) -> bool {
    list.is_empty() || value.is_some_and(|v| list.iter().any(|x| x == v))
}

impl AutomationGrant {
    /// Whether this grant, by itself, covers a call of `call` with `input`
    /// (the policy binding is checked separately, against the database).
    pub fn covers(&self, call: &Callee<'_>, input: &serde_json::Value, now: i64) -> bool {
        let action_ok = self.action == "*"
            || self.action == call.id
            || wildcard_prefix(&self.action)
                .is_some_and(|p| call.id.strip_prefix(p).is_some_and(|r| r.starts_with('.')))
            || (self.action.starts_with("policy.") && call.tags.contains(&self.action));
        let field = |name: &str| input.get(name).and_then(|v| v.as_str());
        self.revoked_at.is_none()
            && self.expires_at > now
            && action_ok
            && listed(&self.scope.capabilities, Some(call.id))
            && listed(&self.scope.entity_ids, field("entityId"))
            && listed(&self.scope.media_kinds, field("mediaKind"))
    }
}

impl Authz {
    /// Creates a grant after checking it makes sense.
    pub async fn create_grant(&self, new: &NewGrant, by: &str) -> Result<AutomationGrant, AuthzError> {
        let bad = |m: &str| Err(AuthzError::Invalid(m.to_string()));
        if new.action.trim().is_empty() {
            return bad("action must not be empty");
        }
        if !(1..=MAX_DAILY_INVOCATIONS).contains(&new.daily_invocations) {
            return bad(&format!("dailyInvocations must be between 1 and {MAX_DAILY_INVOCATIONS}"));
        }
        if !(1..=MAX_DAILY_BYTES).contains(&new.daily_bytes) {
            return bad(&format!("dailyBytes must be between 1 and {MAX_DAILY_BYTES}"));
        }
        let now = now_ms();
        if new.expires_at <= now {
            return bad("expiresAt must be in the future");
        }
        if new.expires_at > now + MAX_GRANT_DAYS * DAY_MS {
            return bad(&format!("expiresAt must be at most {MAX_GRANT_DAYS} days ahead; make a new grant then"));
        }
        if new.reason.as_ref().is_some_and(|r| r.chars().count() > MAX_REASON_CHARS) {
            return bad(&format!("reason must be at most {MAX_REASON_CHARS} characters"));
        }
        let named = match (&new.policy_revision_id, &new.policy_name, new.policy_revision) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return bad(
                    "policyRevisionId names the policy revision by itself; leave out policyName and policyRevision",
                );
            }
            (Some(id), None, None) => {
                let parsed =
                    id.rsplit_once('@').and_then(|(name, rev)| Some((name.to_string(), rev.parse::<i64>().ok()?)));
                let Some((name, rev)) = parsed.filter(|(name, rev)| !name.is_empty() && *rev > 0) else {
                    return bad(&format!("policyRevisionId must be <name>@<revision>, not {id:?}"));
                };
                Some((name, rev))
            }
            (None, None, None) => None,
            (None, Some(name), Some(rev)) => Some((name.clone(), rev)),
            _ => return bad("policyName and policyRevision go together"),
        };
        if let Some((name, rev)) = &named
            && self.policy(name, *rev).await?.is_none()
        {
            return Err(AuthzError::NotFound("policy revision", format!("{name}@{rev}")));
        }
        let (policy_name, policy_revision) = named.unzip();
        let id = new_id();
        sqlx::query(
            "INSERT INTO automation_grant (id, action, policy_name, policy_revision, scope, daily_invocations, \
             daily_bytes, expires_at, reason, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(&id)
        .bind(&new.action)
        .bind(&policy_name)
        .bind(policy_revision)
        .bind(serde_json::to_string(&new.scope).unwrap_or_else(|_| "{}".into()))
        .bind(new.daily_invocations)
        .bind(new.daily_bytes)
        .bind(new.expires_at)
        .bind(new.reason.as_deref().map(str::trim).filter(|r| !r.is_empty()))
        .bind(by)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        self.grant(&id).await?.ok_or(AuthzError::NotFound("grant", id))
    }

    pub async fn grant(&self, id: &str) -> Result<Option<AutomationGrant>, sqlx::Error> {
        let row =
            sqlx::query("SELECT * FROM automation_grant WHERE id = $1").bind(id).fetch_optional(&self.db.pool).await?;
        row.map(|r| AutomationGrant::from_row(&r)).transpose()
    }

    pub async fn grants(&self) -> Result<Vec<AutomationGrant>, sqlx::Error> {
        let rows =
            sqlx::query("SELECT * FROM automation_grant ORDER BY created_at, id").fetch_all(&self.db.pool).await?;
        rows.iter().map(AutomationGrant::from_row).collect()
    }

    /// Revokes a grant now; one already revoked is a conflict and changes
    /// nothing.
    pub async fn revoke_grant(&self, id: &str) -> Result<AutomationGrant, AuthzError> {
        let changed = sqlx::query("UPDATE automation_grant SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now_ms())
            .bind(id)
            .execute(&self.db.pool)
            .await?
            .rows_affected();
        let grant = self.grant(id).await?.ok_or_else(|| AuthzError::NotFound("grant", id.to_string()))?;
        if changed == 0 {
            return Err(AuthzError::Conflict(format!("grant {id} is already revoked")));
        }
        Ok(grant)
    }

    /// Shortens a grant: an earlier expiry or smaller budgets. Anything that
    /// would widen it is refused and nothing changes; the update itself
    /// only ever narrows, so two changes racing cannot widen it either.
    pub async fn shorten_grant(
        &self,
        id: &str,
        expires_at: Option<i64>,
        daily_invocations: Option<i64>,
        daily_bytes: Option<i64>,
    ) -> Result<AutomationGrant, AuthzError> {
        let current = self.grant(id).await?.ok_or_else(|| AuthzError::NotFound("grant", id.to_string()))?;
        let widen =
            |what: &str| Err(AuthzError::Invalid(format!("{what} can only be reduced; create a new grant to widen")));
        if expires_at.is_some_and(|e| e > current.expires_at) {
            return widen("expiresAt");
        }
        if daily_invocations.is_some_and(|n| n > current.daily_invocations || n < 0) {
            return widen("dailyInvocations");
        }
        if daily_bytes.is_some_and(|n| n > current.daily_bytes || n < 0) {
            return widen("dailyBytes");
        }
        if current.revoked_at.is_some() {
            return Err(AuthzError::Conflict(format!("grant {id} is revoked")));
        }
        let changed = sqlx::query(
            "UPDATE automation_grant SET expires_at = $1, daily_invocations = $2, daily_bytes = $3 \
             WHERE id = $4 AND revoked_at IS NULL AND expires_at >= $1 AND daily_invocations >= $2 AND daily_bytes >= $3",
        )
        .bind(expires_at.unwrap_or(current.expires_at))
        .bind(daily_invocations.unwrap_or(current.daily_invocations))
        .bind(daily_bytes.unwrap_or(current.daily_bytes))
        .bind(id)
        .execute(&self.db.pool)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(AuthzError::Conflict(format!(
                "grant {id} changed meanwhile (revoked or narrowed further); nothing was changed"
            )));
        }
        self.grant(id).await?.ok_or_else(|| AuthzError::NotFound("grant", id.to_string()))
    }

    /// The first active grant that covers the call, with its bound policy
    /// revision still published.
    pub async fn covering_grant(
        &self,
        call: &Callee<'_>,
        input: &serde_json::Value,
    ) -> Result<Option<AutomationGrant>, sqlx::Error> {
        Ok(self.covering_grants(std::slice::from_ref(call), input).await?.pop().flatten())
    }

    /// [`Self::covering_grant`] for each of `calls`, reading the grants
    /// once (a page listing several capabilities asks about each).
    pub async fn covering_grants(
        &self,
        calls: &[Callee<'_>],
        input: &serde_json::Value,
    ) -> Result<Vec<Option<AutomationGrant>>, sqlx::Error> {
        let now = now_ms();
        let grants = self.grants().await?;
        let mut found = Vec::with_capacity(calls.len());
        for call in calls {
            let mut covering = None;
            for grant in grants.iter().filter(|g| g.covers(call, input, now)) {
                if let (Some(name), Some(rev)) = (&grant.policy_name, grant.policy_revision) {
                    let published =
                        self.policy(name, rev).await?.is_some_and(|p| p.status == super::PolicyStatus::Published);
                    if !published {
                        continue;
                    }
                }
                covering = Some(grant.clone());
                break;
            }
            found.push(covering);
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(action: &str) -> AutomationGrant {
        AutomationGrant {
            id: "g".into(),
            action: action.into(),
            policy_name: None,
            policy_revision: None,
            scope: GrantScope::default(),
            daily_invocations: 1,
            daily_bytes: 1,
            expires_at: i64::MAX,
            revoked_at: None,
            reason: None,
            created_by: "admin:a".into(),
            created_at: 0,
        }
    }

    #[test]
    fn a_wildcard_covers_the_ids_under_its_prefix_only() {
        let covers =
            |action: &str, id: &str| grant(action).covers(&Callee { id, tags: &[] }, &serde_json::json!({}), 0);
        assert!(covers("task.*", "task.retry") && covers("task.*", "task.cancel"));
        assert!(!covers("task.*", "task") && !covers("task.*", "taskmaster.run") && !covers("task.*", "download.task"));
        assert!(covers("download.*", "download.recheck"));
        assert_eq!(
            (wildcard_prefix("*.*"), wildcard_prefix(".*"), wildcard_prefix("task.*")),
            (None, None, Some("task"))
        );
    }
}
