//! The agent loop and a run's lifecycle. [`AgentRuntime::drive`] is what the
//! `runAgent` task runs: it checks the day's budget, rebuilds the
//! conversation from the session log, reconciles tool calls a crash left
//! without a result, then answers user requests turn by turn ([`turn`]),
//! waits in execute mode until what the run touched settles, and finalizes
//! the run with an AgentGoalReport built from the business tables
//! ([`report`]). Aborts are honoured between steps and cancel a model
//! stream in flight.

pub mod budget;
mod ending;
mod error;
pub mod investigation;
mod playbook;
pub mod report;
mod resume;
mod snapshot;
pub mod toolbox;
mod turn;
pub mod verdict;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::providers::{self, Provider};
use super::runs::{BlockReason, NewRun, Run, RunError, RunMode, RunStatus, Runs};
use super::session_store::SessionStore;
use super::tokens::TokenCounter;
use super::tools::results::ResultStore;
use crate::pipeline::{Capabilities, Services};
use crate::runtime::Actor;
use crate::settings::{Settings, SettingsSnapshot};
use crate::skills::{SkillSet, Skills};
use crate::tasks::{NewTask, Tasks};
use budget::RunLimits;
pub use error::EngineError;

/// The task kind that drives a run.
pub const RUN_AGENT: &str = "runAgent";

/// Why a run waits past its window.
const WAIT_OVERDUE: &str = "what the run touched did not settle within agent.goal_wait_hours; it keeps waiting, and \
                            finishes when that settles or a message arrives";

/// Everything runs need, shared by the API and the worker of one process.
pub struct AgentRuntime {
    /// The invoke path and the stores, as the composition root built them.
    svc: Services,
    /// The model, agent and budget settings, read afresh for each run.
    settings: Arc<Settings>,
    runs: Runs,
    tasks: Tasks,
    /// Where the runs' session logs are kept.
    sessions: SessionStore,
    results: Arc<ResultStore>,
    /// A provider fixed by the embedder (tests, benchmarks); otherwise the
    /// settings choose one for each run.
    provider: Option<Arc<dyn Provider>>,
    /// The skills runs may read: the built-ins and the skills folder's.
    skills: Arc<Skills>,
}

/// Why a run could not be started or changed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Invalid(String),
    /// The allowlist names a capability that is not loaded.
    #[error("capabilityAllowlist names {0}, which is not loaded")]
    UnknownCapability(String),
    /// The run was to start with a skill that cannot be read: the reason.
    #[error("{0}")]
    UnknownSkill(String),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("could not queue the run: {0}")]
    Task(String),
}

impl StartError {
    /// Whether the run was refused because it exists already (a second
    /// investigation of one decision).
    pub(crate) fn is_duplicate(&self) -> bool {
        matches!(self, StartError::Run(RunError::Sql(e)) if crate::store::is_unique_violation(e))
    }
}

impl AgentRuntime {
    pub fn new(svc: Services, settings: Arc<Settings>) -> AgentRuntime {
        let config = svc.caps.runtime().config();
        let sessions = SessionStore::for_db(&svc.db, &config.data_dir());
        let skills = Arc::new(Skills::new(config.skills_dir()));
        let runs = Runs::new(svc.db.clone(), svc.events.clone());
        let tasks = svc.domain.tasks().clone();
        AgentRuntime {
            svc,
            settings,
            runs,
            tasks,
            sessions,
            results: Arc::new(ResultStore::default()),
            provider: None,
            skills,
        }
    }

    /// The skills folder and the built-ins, as runs read them.
    pub fn skills(&self) -> &Arc<Skills> {
        &self.skills
    }

    /// Every skill now, checked against what is loaded; read off the disk
    /// on a blocking thread (a skills folder may be on a slow disk).
    pub async fn skill_set(&self) -> SkillSet {
        let (skills, snapshot) = (self.skills.clone(), self.svc.caps.runtime().snapshot());
        tokio::task::spawn_blocking(move || skills.current(&snapshot)).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "reading the skills failed; runs see none");
            SkillSet::default()
        })
    }

    /// Uses `provider` for every run instead of the settings' choice.
    pub fn with_provider(mut self, provider: Arc<dyn Provider>) -> AgentRuntime {
        self.provider = Some(provider);
        self
    }

    pub fn runs(&self) -> &Runs {
        &self.runs
    }

    pub fn capabilities(&self) -> &Arc<Capabilities> {
        &self.svc.caps
    }

    /// The invoke path and the stores this runtime acts through.
    pub fn services(&self) -> &Services {
        &self.svc
    }

    /// Where the runs' session logs are kept.
    pub fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// Creates a run and queues its `runAgent` task. A plan-only run's
    /// allowlist may not name a capability that changes anything outside.
    pub async fn start(&self, new: NewRun) -> Result<Run, StartError> {
        if new.goal.trim().is_empty() {
            return Err(StartError::Invalid("goal must not be empty".into()));
        }
        if let Some(list) = &new.allowlist {
            let snapshot = self.svc.caps.runtime().snapshot();
            for id in list {
                let Some(loaded) = snapshot.get(id) else {
                    return Err(StartError::UnknownCapability(id.clone()));
                };
                if new.mode == RunMode::PlanOnly && loaded.descriptor.label > crate::runtime::EffectClass::Propose {
                    return Err(StartError::Invalid(format!(
                        "a plan_only run may not allow {id}, which is labelled {}",
                        loaded.descriptor.label
                    )));
                }
            }
        }
        // A skill to start with is read now: one that cannot be is refused
        // before anything is recorded, and the read commits with the run.
        let started_with = match &new.skill {
            Some(name) => Some(self.started_with(name, &new).await?),
            None => None,
        };
        let mut run = self.runs.create_with(&new, |id| playbook::first_writes(id, started_with.as_ref())).await?;
        // The run as created, not read back: a worker may have taken it
        // already, and the caller is answered about what it started.
        run.task_id = Some(self.wake(&run.id, &new.created_by).await?);
        Ok(run)
    }

    /// Makes sure a `runAgent` task is queued or running for the run, and
    /// says which.
    pub async fn wake(&self, run_id: &str, by: &str) -> Result<String, StartError> {
        let task = NewTask {
            kind: RUN_AGENT.into(),
            subject: Some(format!("run:{run_id}")),
            payload: json!({"runId": run_id}),
            dedupe_key: Some(format!("agent:{run_id}")),
            max_attempts: 5,
            created_by: by.to_string(),
        };
        let (task, _) = self.tasks.enqueue(&task).await.map_err(|e| StartError::Task(e.to_string()))?;
        self.runs.set_task(run_id, &task.id).await?;
        Ok(task.id)
    }

    /// Sends a message: consumed after the current turn, or wakes a run
    /// that waits or ended (an aborted one too, once its abort is done). A
    /// blocked run is not queued: the waker looks at once whether its
    /// obstacle is gone. `new_task` starts a new task (a new plan and
    /// request scope); otherwise the message goes on with the current one.
    pub async fn message(&self, run_id: &str, text: &str, by: &str, new_task: bool) -> Result<Run, StartError> {
        if text.trim().is_empty() {
            return Err(StartError::Invalid("text must not be empty".into()));
        }
        self.runs.add_message(run_id, text, by, new_task).await?;
        let run = self.runs.get(run_id).await?;
        if run.blocked_on.is_some() {
            self.runs.look_again(Some(run_id)).await?;
            return Ok(run);
        }
        if run.status.reopens() {
            self.runs.reopen(run_id).await?;
        }
        self.wake(run_id, by).await?;
        Ok(self.runs.get(run_id).await?)
    }

    /// The tokenizer of the configured provider (an estimate for one fixed
    /// by the embedder).
    fn token_counter(&self, settings: &SettingsSnapshot) -> TokenCounter {
        if self.provider.is_some() {
            return TokenCounter::estimate();
        }
        let name = settings.get("model.provider").ok();
        TokenCounter::for_provider(name.as_ref().and_then(|v| v.as_str()).unwrap_or("scripted"))
    }

    async fn provider(&self, settings: &SettingsSnapshot) -> Result<Arc<dyn Provider>, EngineError> {
        if let Some(p) = &self.provider {
            return Ok(p.clone());
        }
        Ok(providers::from_snapshot(&self.settings, settings).await.map(Arc::from)?)
    }

    /// Runs the run as far as it goes: the body of the `runAgent` task.
    pub async fn drive(&self, run_id: &str) -> Result<Value, EngineError> {
        let run = self.runs.get(run_id).await?;
        if run.status.is_final() {
            return Ok(json!({"runId": run_id, "status": run.status.as_str()}));
        }
        if let Some(reason) = &run.abort_reason {
            let text = run.final_text.clone().unwrap_or_default();
            return self.finish(run_id, RunStatus::Cancelled, Some(reason), &text).await;
        }
        // What another attempt cannot change ends the run once and blocks
        // it (`runs::gate`): the waker does not start it again for nothing.
        // One read of the settings for everything the run needs of them.
        let settings = self.settings.snapshot().await?;
        let provider = match self.provider(&settings).await {
            Ok(p) => p,
            Err(e) => {
                return self.end_blocked(&run, BlockReason::Config, &format!("the model cannot be used: {e}")).await;
            }
        };
        let limits = RunLimits::load(&settings)?.within(run.investigation.as_ref());
        if run.status == RunStatus::Queued {
            // A run reopened by a message was counted when it first started.
            let first_start = run.started_at.is_none();
            if let Some(reason) = budget::day_allows(&settings, &self.runs, first_start).await? {
                return self.end_blocked(&run, BlockReason::DayBudget, &reason).await;
            }
            match self.runs.set_status(run_id, RunStatus::Running, None).await {
                Ok(_) => {}
                // Aborted while queued: it ended already.
                Err(RunError::WrongState(_, status, _)) => return Ok(json!({"runId": run_id, "status": status})),
                Err(e) => return Err(e.into()),
            }
        } else if run.status == RunStatus::Waiting && self.runs.has_unconsumed(run_id).await? {
            self.runs.set_status(run_id, RunStatus::Running, Some("a new message arrived")).await?;
        }
        let (log, session) = self.sessions.open(run_id).await?;
        let mode = playbook::mode_of(run.mode);
        let counter = Arc::new(self.token_counter(&settings));
        let skills = self.skill_set().await.skills;
        let parts = turn::Parts { provider, counter, limits, skills };
        let mut state = turn::RunState::new(self, &run, mode, Actor::Agent, parts, log, session);
        let outcome = state.answer_pending_requests().await?;
        // A run that looks again after waiting says nothing new: its last
        // words stay the ones the report attaches.
        let final_text = if state.final_text.is_empty() {
            run.final_text.clone().unwrap_or_default()
        } else {
            state.final_text.clone()
        };
        match outcome {
            turn::TurnOutcome::Aborted(reason) => {
                return self.finish(run_id, RunStatus::Cancelled, Some(&reason), &final_text).await;
            }
            turn::TurnOutcome::OverBudget(reason) => {
                let run = self.runs.get(run_id).await?;
                return self.end_over_budget(&run, &reason, &final_text).await;
            }
            turn::TurnOutcome::Failed(reason) => {
                return self.finish(run_id, RunStatus::Failed, Some(&reason), &final_text).await;
            }
            turn::TurnOutcome::Idle => {}
        }
        // Execute mode waits for what it touched to settle. It holds no
        // worker while it waits: the waker queues its task again at
        // `wake_at`, and a message queues it at once.
        let touched = report::touched(&self.svc.domain, &self.svc.db, run_id).await?;
        if run.mode == RunMode::PlanOnly || report::settled(&touched) {
            let (_, activity) = self.tool_calls(run_id).await?;
            let asked = verdict::Asked { mode: run.mode, goal: &run.goal, investigation: run.investigation.is_some() };
            let (status, detail) = verdict::verdict(&touched, &asked, &activity, &final_text);
            return self.finish_with(run_id, status, detail.as_deref(), &final_text, &touched).await;
        }
        // Past agent.goal_wait_hours the run keeps the state its report
        // gives — waiting, with the reason — and goes on looking: what it
        // touched settling, or a message, still finishes it.
        let current = self.runs.get(run_id).await?;
        let now = crate::store::now_ms();
        if !final_text.is_empty() {
            self.runs.set_outcome(run_id, None, &final_text).await?;
        }
        let ms = |d: Duration| d.as_millis() as i64;
        self.runs.schedule_wake(run_id, now + ms(state.limits.goal_poll), now + ms(state.limits.goal_wait)).await?;
        if current.status != RunStatus::Waiting {
            self.runs.set_status(run_id, RunStatus::Waiting, Some("goal-settled")).await?;
        }
        if current.wait_until.is_some_and(|until| now > until) {
            self.runs.wait_overdue(run_id, WAIT_OVERDUE).await?;
        }
        Ok(json!({"runId": run_id, "status": "waiting"}))
    }

    /// A human decided an approval: every run waiting on it that was not
    /// aborted is told it may go on (a message, which wakes it). A
    /// rejection is not sent: the run already ended saying it waits.
    pub async fn approval_decided(&self, approval: &crate::authz::Approval) -> Result<usize, StartError> {
        if approval.status != crate::authz::ApprovalStatus::Approved {
            return Ok(0);
        }
        let text = format!(
            "A human approved the {} plan {} (approval {}); it may be carried out now.",
            approval.plan_type, approval.plan_id, approval.id
        );
        let mut told = 0;
        for run_id in self.runs.watching(&approval.id).await? {
            if self.runs.get(&run_id).await?.status == RunStatus::Cancelled {
                continue;
            }
            self.message(&run_id, &text, &format!("approval:{}", approval.id), false).await?;
            told += 1;
        }
        Ok(told)
    }

    /// Queues the task of every run that is due (see [`Runs::due`]), and
    /// looks at blocked runs whose next look is due, queuing those whose
    /// obstacle is gone; the worker that runs agent tasks calls this about
    /// once a second.
    pub(crate) async fn wake_due(&self) -> Result<usize, StartError> {
        let now = crate::store::now_ms();
        let due = self.runs.due(now).await?;
        for id in &due {
            if self.runs.get(id).await?.status.reopens() {
                self.runs.reopen(id).await?;
            }
            self.wake(id, "agent:waker").await?;
        }
        let mut woken = due.len();
        for blocked in self.runs.blocked_due(now).await? {
            let first_start = self.runs.get(&blocked.run_id).await?.started_at.is_none();
            if self.obstacle_gone(blocked.block, first_start).await {
                tracing::info!(run = %blocked.run_id, block = blocked.block.as_str(), "a blocked run can go on");
                self.runs.reopen(&blocked.run_id).await?;
                self.wake(&blocked.run_id, "agent:waker").await?;
                woken += 1;
            } else {
                self.runs.still_blocked(&blocked).await?;
            }
        }
        Ok(woken)
    }

    /// Whether what blocked a run is gone, checked here, with no task.
    async fn obstacle_gone(&self, block: BlockReason, first_start: bool) -> bool {
        let Ok(settings) = self.settings.snapshot().await else { return false };
        match block {
            BlockReason::Config => self.provider(&settings).await.is_ok(),
            BlockReason::DayBudget => matches!(budget::day_allows(&settings, &self.runs, first_start).await, Ok(None)),
        }
    }

    /// How long to sleep between abort checks while a model answers.
    pub(crate) const ABORT_POLL: Duration = Duration::from_millis(200);
}
