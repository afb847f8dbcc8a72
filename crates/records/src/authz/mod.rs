//! Authorisation records and decisions for automated callers: policies with
//! revisions (draft → published → superseded), standing automation grants
//! (an action, an optional bound policy revision, a scope, daily invocation
//! and byte budgets, an expiry), and the host switches (automation on/off,
//! read-only reconcile mode). Grants can be created, revoked or shortened,
//! never widened in place. Budgets are charged inside the ledger's claim
//! transaction, so concurrent calls cannot overspend them.

mod approvals;
mod grants;
mod policies;

use serde::{Deserialize, Serialize};
use sqlx::{Any, Transaction};

pub use approvals::{APPROVAL_TTL_MS, Approval, ApprovalStatus, PLAN_TYPES, PlanSource, PlanState};
pub use grants::{
    AutomationGrant, Callee, DEFAULT_DAILY_BYTES, DEFAULT_DAILY_INVOCATIONS, DEFAULT_GRANT_DAYS, GrantScope,
    MAX_DAILY_BYTES, MAX_DAILY_INVOCATIONS, MAX_GRANT_DAYS, MAX_REASON_CHARS, NewGrant, POLICY_REVISION_ID_PATTERN,
    wildcard_prefix,
};
pub use policies::{Policy, PolicyStatus};

use crate::store::{Db, now_ms};

#[derive(Debug, thiserror::Error)]
pub enum AuthzError {
    #[error("{0}")]
    Invalid(String),
    #[error("no {0} with id {1}")]
    NotFound(&'static str, String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

/// The automation switches, stored as settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switches {
    /// Master switch: off denies every automated execute call.
    pub automation_enabled: bool,
    /// Read-only reconcile mode: automated execute calls are denied while
    /// state is being reconciled.
    pub read_only_reconcile: bool,
}

const AUTOMATION_ENABLED: &str = "automation.enabled";
const READ_ONLY_RECONCILE: &str = "automation.read_only_reconcile";

/// Authorisation records over one database.
#[derive(Clone)]
pub struct Authz {
    db: Db,
}

impl Authz {
    pub fn new(db: Db) -> Authz {
        Authz { db }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO setting (key, value, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(key)
        .bind(value)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// The current switches (automation on, reconcile mode off by default).
    pub async fn switches(&self) -> Result<Switches, sqlx::Error> {
        // Both in one read: every execute call asks.
        let rows: Vec<(String, String)> = sqlx::query_as("SELECT key, value FROM setting WHERE key IN ($1, $2)")
            .bind(AUTOMATION_ENABLED)
            .bind(READ_ONLY_RECONCILE)
            .fetch_all(&self.db.pool)
            .await?;
        let value = |key: &str| rows.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        Ok(Switches {
            automation_enabled: value(AUTOMATION_ENABLED).is_none_or(|v| v == "true"),
            read_only_reconcile: value(READ_ONLY_RECONCILE).is_some_and(|v| v == "true"),
        })
    }

    pub async fn set_switches(&self, switches: Switches) -> Result<(), sqlx::Error> {
        self.set_setting(AUTOMATION_ENABLED, &switches.automation_enabled.to_string()).await?;
        self.set_setting(READ_ONLY_RECONCILE, &switches.read_only_reconcile.to_string()).await
    }

    /// Charges one invocation and `bytes` to the grant's budget for today,
    /// inside the claim transaction. False when the budget is spent.
    pub(crate) async fn charge_in(
        tx: &mut Transaction<'_, Any>,
        grant: &AutomationGrant,
        bytes: i64,
    ) -> Result<bool, sqlx::Error> {
        let day = utc_day(now_ms());
        // One statement: today's row is made with this charge, or charged
        // while it stays inside both budgets (a refused charge touches
        // nothing). The SELECT's WHERE keeps a first charge inside them
        // too, and lets SQLite read the upsert unambiguously.
        let charged = sqlx::query(
            "INSERT INTO grant_usage (grant_id, day, invocations, bytes) \
             SELECT $1, $2, 1, $3 WHERE $4 >= 1 AND $3 <= $5 \
             ON CONFLICT (grant_id, day) DO UPDATE SET invocations = grant_usage.invocations + 1, \
             bytes = grant_usage.bytes + excluded.bytes \
             WHERE grant_usage.invocations < $4 AND grant_usage.bytes + excluded.bytes <= $5",
        )
        .bind(&grant.id)
        .bind(&day)
        .bind(bytes)
        .bind(grant.daily_invocations)
        .bind(grant.daily_bytes)
        .execute(&mut **tx)
        .await?
        .rows_affected();
        Ok(charged == 1)
    }

    /// Today's usage of a grant: (invocations, bytes).
    pub async fn usage(&self, grant_id: &str) -> Result<(i64, i64), sqlx::Error> {
        let row: Option<(i64, i64)> =
            sqlx::query_as("SELECT invocations, bytes FROM grant_usage WHERE grant_id = $1 AND day = $2")
                .bind(grant_id)
                .bind(utc_day(now_ms()))
                .fetch_optional(&self.db.pool)
                .await?;
        Ok(row.unwrap_or((0, 0)))
    }
}

/// The UTC calendar day of a timestamp, `YYYY-MM-DD`; budgets reset daily.
pub(crate) fn utc_day(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let d = at.date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

#[cfg(test)]
mod tests {
    use super::utc_day;

    #[test]
    fn days_are_utc_calendar_days() {
        assert_eq!(utc_day(0), "1970-01-01");
        assert_eq!(utc_day(1_700_000_000_000), "2023-11-14");
        assert_eq!(utc_day(951_782_400_000), "2000-02-29");
    }
}
