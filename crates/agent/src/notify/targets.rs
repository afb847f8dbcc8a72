//! Each notification target's place in the event log (`notify_target`):
//! the last event it was told about, and the sends that failed since with
//! the last reason — what the console shows beside the target.

use serde::Serialize;
use sqlx::Row;

use crate::store::{Db, now_ms};

/// The targets there are: each `notify.*` capability and the outbound
/// service it sends through.
pub const TARGETS: &[(&str, &str)] = &[
    ("notify.webhook", "webhook"),
    ("notify.ntfy", "ntfy"),
    ("notify.telegram", "telegram"),
    ("notify.discord", "discord"),
];

/// Where a target stands.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotifyTarget {
    pub capability_id: String,
    /// The last event it was told about (or skipped).
    pub after_seq: i64,
    /// Sends that failed in a row.
    pub failures: i64,
    /// Why the last one failed, or why events were given up.
    pub last_error: Option<String>,
    pub last_sent_at: Option<i64>,
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<NotifyTarget, sqlx::Error> {
    Ok(NotifyTarget {
        capability_id: r.try_get("capability_id")?,
        after_seq: r.try_get("after_seq")?,
        failures: r.try_get("failures")?,
        last_error: r.try_get("last_error")?,
        last_sent_at: r.try_get("last_sent_at")?,
    })
}

/// Every target that was ever told something.
pub async fn all(db: &Db) -> Result<Vec<NotifyTarget>, sqlx::Error> {
    let rows = sqlx::query("SELECT * FROM notify_target ORDER BY capability_id").fetch_all(&db.pool).await?;
    rows.iter().map(from_row).collect()
}

/// The target's place; a new one starts at `head`, the log's end, so it is
/// told what happens from now on, not the history.
pub(super) async fn load_or_start(db: &Db, capability: &str, head: i64) -> Result<NotifyTarget, sqlx::Error> {
    let insert = "INSERT INTO notify_target (capability_id, after_seq, failures, updated_at) VALUES ($1, $2, 0, $3) \
                  ON CONFLICT (capability_id) DO NOTHING";
    sqlx::query(insert).bind(capability).bind(head).bind(now_ms()).execute(&db.pool).await?;
    let row = sqlx::query("SELECT * FROM notify_target WHERE capability_id = $1")
        .bind(capability)
        .fetch_one(&db.pool)
        .await?;
    from_row(&row)
}

/// Moves the target's place to `seq`: its message was `sent`, nothing was
/// to be told, or its events were given up (`gave_up` says why).
pub(super) async fn moved_on(
    db: &Db,
    capability: &str,
    seq: i64,
    sent: bool,
    gave_up: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE notify_target SET after_seq = $2, failures = 0, \
         last_error = CASE WHEN $4 = 1 THEN NULL WHEN $3 IS NULL THEN last_error ELSE $3 END, \
         last_sent_at = CASE WHEN $4 = 1 THEN $5 ELSE last_sent_at END, updated_at = $5 WHERE capability_id = $1",
    )
    .bind(capability)
    .bind(seq)
    .bind(gave_up)
    .bind(i64::from(sent))
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Counts a send that failed, keeping the target's place.
pub(super) async fn failed(db: &Db, capability: &str, why: &str) -> Result<(), sqlx::Error> {
    let why: String = why.chars().take(500).collect();
    sqlx::query(
        "UPDATE notify_target SET failures = failures + 1, last_error = $2, updated_at = $3 WHERE capability_id = $1",
    )
    .bind(capability)
    .bind(why)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}
