//! One ledger row as the rest of the host sees it.

use serde::Serialize;

use crate::store::IntFlag;

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
        LedgerStatus::ALL.into_iter().find(|status| status.as_str() == s)
    }
}

// What the status column is read through.
impl TryFrom<String> for LedgerStatus {
    type Error = String;
    fn try_from(text: String) -> Result<LedgerStatus, String> {
        LedgerStatus::parse(&text).ok_or_else(|| format!("unknown ledger status {text:?}"))
    }
}

/// A `capability_invocation` row.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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
    #[sqlx(try_from = "String")]
    pub status: LedgerStatus,
    #[serde(skip)]
    pub claim_token: String,
    pub owner: String,
    pub attempts: i64,
    #[sqlx(try_from = "IntFlag")]
    pub effect_started: bool,
    pub result: Option<String>,
    pub error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}
