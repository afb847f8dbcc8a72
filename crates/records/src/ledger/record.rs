//! One ledger row as the rest of the host sees it.

use serde::Serialize;
use sqlx::Row;

/// Ledger statuses. `running` exists only while a claim is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LedgerStatus {
    Running,
    Succeeded,
    Failed,
    Pending,
    Unknown,
}

impl LedgerStatus {
    /// Every status.
    pub const ALL: [LedgerStatus; 5] = [
        LedgerStatus::Running,
        LedgerStatus::Succeeded,
        LedgerStatus::Failed,
        LedgerStatus::Pending,
        LedgerStatus::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LedgerStatus::Running => "running",
            LedgerStatus::Succeeded => "succeeded",
            LedgerStatus::Failed => "failed",
            LedgerStatus::Pending => "pending",
            LedgerStatus::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<LedgerStatus> {
        Some(match s {
            "running" => LedgerStatus::Running,
            "succeeded" => LedgerStatus::Succeeded,
            "failed" => LedgerStatus::Failed,
            "pending" => LedgerStatus::Pending,
            "unknown" => LedgerStatus::Unknown,
            _ => return None,
        })
    }
}

/// A `capability_invocation` row.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub id: String,
    pub idempotency_key: String,
    pub capability_id: String,
    pub capability_version: i64,
    pub principal: String,
    pub run_id: Option<String>,
    pub task_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub input_digest: String,
    pub status: LedgerStatus,
    #[serde(skip)]
    pub claim_token: String,
    pub owner: String,
    pub attempts: i64,
    pub effect_started: bool,
    pub result: Option<String>,
    pub error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Record {
    pub fn from_row(r: &sqlx::any::AnyRow) -> Result<Record, sqlx::Error> {
        let status: String = r.try_get("status")?;
        Ok(Record {
            id: r.try_get("id")?,
            idempotency_key: r.try_get("idempotency_key")?,
            capability_id: r.try_get("capability_id")?,
            capability_version: r.try_get("capability_version")?,
            principal: r.try_get("principal")?,
            run_id: r.try_get("run_id")?,
            tool_call_id: r.try_get("tool_call_id")?,
            task_id: r.try_get("task_id")?,
            input_digest: r.try_get("input_digest")?,
            status: LedgerStatus::parse(&status)
                .ok_or_else(|| sqlx::Error::Decode(format!("unknown ledger status {status}").into()))?,
            claim_token: r.try_get("claim_token")?,
            owner: r.try_get("owner")?,
            attempts: r.try_get("attempts")?,
            effect_started: r.try_get::<i64, _>("effect_started")? != 0,
            result: r.try_get("result")?,
            error: r.try_get("error")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }
}
