//! How the task queue stands now: what is ready and how long the oldest has
//! waited, what is scheduled for later, what is running, and counts by
//! kind. Read by the health check and the metrics; changes nothing.

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::Row;

use super::Tasks;
use crate::store::now_ms;

/// The queue at one moment.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueState {
    /// Queued and due: a worker would take them now.
    pub ready: i64,
    /// Queued for later (a retry's backoff, say).
    pub scheduled: i64,
    pub running: i64,
    /// How long the longest-waiting ready task has waited, in ms.
    pub oldest_ready_ms: Option<i64>,
    /// Tasks by kind and status, every status.
    pub by_kind: BTreeMap<String, BTreeMap<String, i64>>,
}

impl Tasks {
    /// The queue now.
    pub async fn queue(&self) -> Result<QueueState, sqlx::Error> {
        let now = now_ms();
        let mut state = QueueState::default();
        let rows = sqlx::query(
            "SELECT kind, status, CAST(CASE WHEN status = 'queued' AND run_after > $1 THEN 1 ELSE 0 END AS BIGINT) AS later, \
             COUNT(*) AS n, MIN(run_after) AS since FROM task GROUP BY kind, status, later",
        )
        .bind(now)
        .fetch_all(&self.db.pool)
        .await?;
        for row in rows {
            let (kind, status): (String, String) = (row.try_get("kind")?, row.try_get("status")?);
            let later: i64 = row.try_get("later")?;
            let n: i64 = row.try_get("n")?;
            match (status.as_str(), later) {
                ("queued", 0) => {
                    state.ready += n;
                    let since: i64 = row.try_get("since")?;
                    let waited = (now - since).max(0);
                    state.oldest_ready_ms = Some(state.oldest_ready_ms.map_or(waited, |w| w.max(waited)));
                }
                ("queued", _) => state.scheduled += n,
                ("running", _) => state.running += n,
                _ => {}
            }
            *state.by_kind.entry(kind).or_default().entry(status).or_default() += n;
        }
        Ok(state)
    }
}
