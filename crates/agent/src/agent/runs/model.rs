//! The shapes of run records and their statuses.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::agent::tools::plan::StepPlan;
use crate::store::{IntFlag, JsonText};

/// `queued → running → waiting → succeeded | failed | nothing_done |
/// cancelled | budget_exceeded`. `nothing_done`: an execute run whose goal
/// asked for a change and that made none (or gave no answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    Waiting,
    Succeeded,
    Failed,
    Cancelled,
    BudgetExceeded,
    NothingDone,
}

impl RunStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [RunStatus; 8] = [
        RunStatus::Queued,
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::BudgetExceeded,
        RunStatus::NothingDone,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::BudgetExceeded => "budget_exceeded",
            RunStatus::NothingDone => "nothing_done",
        }
    }

    pub fn parse(s: &str) -> Result<RunStatus, sqlx::Error> {
        Ok(match s {
            "queued" => RunStatus::Queued,
            "running" => RunStatus::Running,
            "waiting" => RunStatus::Waiting,
            "succeeded" => RunStatus::Succeeded,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            "budget_exceeded" => RunStatus::BudgetExceeded,
            "nothing_done" => RunStatus::NothingDone,
            other => return Err(sqlx::Error::Decode(format!("unknown run status {other}").into())),
        })
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            RunStatus::Succeeded
                | RunStatus::Failed
                | RunStatus::Cancelled
                | RunStatus::BudgetExceeded
                | RunStatus::NothingDone
        )
    }

    /// Ended, but a message starts it again: after a success, a failure, a
    /// spent budget (raised since) or an abort the user may go on. Nothing
    /// but a message reopens an aborted run: that stop was a human's.
    pub fn reopens(self) -> bool {
        self.is_final()
    }
}

/// `execute` may use every capability the caller's authority allows;
/// `plan_only` stops at propose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    Execute,
    PlanOnly,
}

impl RunMode {
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Execute => "execute",
            RunMode::PlanOnly => "plan_only",
        }
    }

    fn parse(s: &str) -> Result<RunMode, sqlx::Error> {
        match s {
            "execute" => Ok(RunMode::Execute),
            "plan_only" => Ok(RunMode::PlanOnly),
            other => Err(sqlx::Error::Decode(format!("unknown run mode {other}").into())),
        }
    }
}

/// A run to create.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub goal: String,
    pub mode: RunMode,
    pub allowlist: Option<Vec<String>>,
    pub created_by: String,
    /// Set for a run that investigates a decision.
    pub investigation: Option<Investigation>,
    /// A skill the run starts with already read.
    pub skill: Option<String>,
}

/// What makes a run an investigation of a decision: the decision (one run
/// per decision, ever) and bounds tighter than the settings'.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Investigation {
    pub decision_id: String,
    pub max_tool_calls: i64,
    pub max_duration_sec: i64,
}

/// One run.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: String,
    pub goal: String,
    pub mode: RunMode,
    pub capability_allowlist: Option<Vec<String>>,
    pub status: RunStatus,
    pub created_by: String,
    pub task_id: Option<String>,
    /// The AgentGoalReport artifact, once the run is finalized.
    pub report_id: Option<String>,
    /// What the model said last; unverified.
    pub final_text: Option<String>,
    pub error: Option<String>,
    pub abort_reason: Option<String>,
    pub tool_calls: i64,
    pub tokens: i64,
    pub cost_usd: f64,
    pub started_at: Option<i64>,
    /// When the run last went `running` (its duration budget counts from here).
    pub resumed_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// Set while the run is held back by something another attempt cannot
    /// change by itself: `config` or `day_budget` (see `runs::gate`).
    pub blocked_on: Option<String>,
    /// While waiting: when the run looks again, and when it stops waiting.
    pub wake_at: Option<i64>,
    pub wait_until: Option<i64>,
    /// For a run investigating a decision: which, and its bounds.
    pub investigation: Option<Investigation>,
    /// The skill the run started with already read, if any.
    pub skill: Option<String>,
    /// The model's current plan for its task (its notes, not proof).
    #[schema(value_type = Option<Object>)]
    pub plan: Option<StepPlan>,
    /// Set when the run was deleted while some of its writes still had an
    /// open outcome: it is kept until they are settled.
    pub deleted_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Run {
    pub(super) fn from_row(r: &AnyRow) -> Result<Run, sqlx::Error> {
        let allowlist: Option<String> = r.try_get("allowlist")?;
        let cost: i64 = r.try_get("cost_micro_usd")?;
        Ok(Run {
            id: r.try_get("id")?,
            goal: r.try_get("goal")?,
            mode: RunMode::parse(&r.try_get::<String, _>("mode")?)?,
            capability_allowlist: allowlist.and_then(|a| serde_json::from_str(&a).ok()),
            status: RunStatus::parse(&r.try_get::<String, _>("status")?)?,
            created_by: r.try_get("created_by")?,
            task_id: r.try_get("task_id")?,
            report_id: r.try_get("report_id")?,
            final_text: r.try_get("final_text")?,
            error: r.try_get("error")?,
            abort_reason: r.try_get("abort_reason")?,
            tool_calls: r.try_get("tool_calls")?,
            tokens: r.try_get("tokens")?,
            cost_usd: cost as f64 / 1e6,
            started_at: r.try_get("started_at")?,
            resumed_at: r.try_get("resumed_at")?,
            finished_at: r.try_get("finished_at")?,
            blocked_on: r.try_get("blocked_on")?,
            wake_at: r.try_get("wake_at")?,
            wait_until: r.try_get("wait_until")?,
            investigation: match r.try_get::<Option<String>, _>("decision_id")? {
                Some(decision_id) => Some(Investigation {
                    decision_id,
                    max_tool_calls: r.try_get::<Option<i64>, _>("max_tool_calls")?.unwrap_or(0),
                    max_duration_sec: r.try_get::<Option<i64>, _>("max_duration_sec")?.unwrap_or(0),
                }),
                None => None,
            },
            skill: r.try_get("skill")?,
            plan: r.try_get::<Option<String>, _>("plan")?.and_then(|p| serde_json::from_str(&p).ok()),
            deleted_at: r.try_get("deleted_at")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }
}

/// A user message sent to a run.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct RunMessage {
    pub seq: i64,
    pub text: String,
    #[sqlx(try_from = "IntFlag")]
    pub consumed: bool,
    /// The sender started a new task: the plan is dropped and the message
    /// opens a new request scope. Otherwise it goes on with the current task.
    #[sqlx(try_from = "IntFlag")]
    pub new_task: bool,
}

/// One event of a run's stream.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct RunEvent {
    pub seq: i64,
    pub kind: String,
    #[schema(value_type = Object)]
    #[sqlx(try_from = "JsonText")]
    pub payload: Value,
    pub at: i64,
}
