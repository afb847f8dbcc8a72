//! One run's conversation in motion: takes user requests in order, asks the
//! model, answers its tool calls, and writes every step to the session log
//! before going on. Budgets are checked before each model request and tool
//! call; an abort is noticed between steps and cancels a model stream in
//! flight. Subagents run the same loop as read-only callers without a log.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::budget::RunLimits;
use super::toolbox::{self, RunCaller};
use super::{AgentRuntime, EngineError};
use crate::agent::compaction::{self, Compaction};
use crate::agent::providers::{Block, Completion, Message, ModelRequest, Provider, StopReason, StreamEvent, ToolSpec};
use crate::agent::runs::{Run, StepWrites};
use crate::agent::session_log::{Entry, SessionLog, SessionState};
use crate::agent::tokens::{TokenCount, TokenCounter};
use crate::agent::tools::discovery::Discovery;
use crate::agent::tools::plan::StepPlan;
use crate::agent::tools::skill_reads::{self, SkillRead};
use crate::runtime::{Actor, Mode};
use crate::skills::Skill;
use crate::store::new_id;

mod approval;
mod calls;
mod checks;
mod delegate;
mod request;
mod usage;

/// How far a call to [`RunState::answer_pending_requests`] got.
#[derive(Debug)]
pub(crate) enum TurnOutcome {
    /// Every request so far is answered.
    Idle,
    Aborted(String),
    OverBudget(String),
    Failed(String),
}

pub(crate) struct RunState<'a> {
    pub(super) rt: &'a AgentRuntime,
    run_id: String,
    allowlist: Option<Vec<String>>,
    caller: RunCaller,
    provider: Arc<dyn Provider>,
    pub(super) limits: RunLimits,
    /// Shared with subagents: one calibration, one compaction policy.
    counter: Arc<TokenCounter>,
    log: Option<SessionLog>,
    session: SessionState,
    discovery: Discovery,
    /// What the last search enabled and left out, told to the model.
    discovery_note: Option<String>,
    /// The skills this task may read, as they stood when it began, and
    /// the system prompt's list of them.
    skills: Vec<Arc<Skill>>,
    skills_listing: Option<String>,
    /// The skill the run started with (`Run::skill`) as read for it
    /// (`None` when it cannot be read now), and the system prompt's
    /// section that says so.
    started_with: Option<(Option<SkillRead>, String)>,
    pub(super) final_text: String,
    /// Answers in a row with neither words nor calls.
    empty_answers: u8,
    /// The run's row as the last step's final commit left it, for the
    /// next step's checks instead of reading it again.
    committed_run: Option<Run>,
    /// What the requests so far measured, so a step measures only what
    /// is new.
    measured: TokenCount,
    /// The tools last offered, built once while what is offered stays the
    /// same: each capability's id and digest, and the specs (the session
    /// tools after them, fixed by the actor).
    offered: (Vec<String>, Arc<[ToolSpec]>),
}

/// What a run's loop works with besides the run and its log.
pub(crate) struct Parts {
    pub provider: Arc<dyn Provider>,
    pub counter: Arc<TokenCounter>,
    pub limits: RunLimits,
    /// The skills the run may read now.
    pub skills: Vec<Arc<Skill>>,
}

impl<'a> RunState<'a> {
    pub fn new(
        rt: &'a AgentRuntime,
        run: &Run,
        mode: Mode,
        actor: Actor,
        parts: Parts,
        log: SessionLog,
        session: SessionState,
    ) -> RunState<'a> {
        let Parts { provider, counter, limits, skills } = parts;
        let (request_id, turn) = session.request.clone().unwrap_or_default();
        let catalog = toolbox::catalog(&rt.svc.caps, actor, mode, run.capability_allowlist.as_deref());
        let skills_listing = skill_reads::listing(&skills, limits.context_budget);
        let caller = RunCaller { run_id: run.id.clone(), actor, mode, request_id, turn };
        let started_with = run.skill.as_ref().map(|name| {
            let allowlist = run.capability_allowlist.as_deref();
            match skills.iter().find(|s| &s.name == name) {
                Some(skill) => {
                    let read = super::playbook::read(&rt.svc.caps, skill.clone(), &caller, allowlist);
                    let section = super::playbook::section(&read, limits.context_budget);
                    (Some(read), section)
                }
                None => (None, format!("This run was started with the skill {name}, which cannot be read now.")),
            }
        });
        let mut discovery = Discovery::new(catalog);
        if let Some((Some(read), _)) = &started_with {
            discovery.enable(&read.callable);
        }
        RunState {
            rt,
            run_id: run.id.clone(),
            allowlist: run.capability_allowlist.clone(),
            caller,
            provider,
            limits,
            counter,
            log: Some(log),
            session,
            discovery,
            discovery_note: None,
            skills,
            skills_listing,
            started_with,
            final_text: String::new(),
            empty_answers: 0,
            committed_run: None,
            measured: TokenCount::default(),
            offered: (Vec::new(), Arc::from([])),
        }
    }

    async fn record(&mut self, entry: Entry) -> Result<(), EngineError> {
        if let Some(log) = &mut self.log {
            log.append(&entry).await?;
        }
        if matches!(entry, Entry::Compacted { .. }) {
            self.measured.forget_messages();
        }
        self.session.apply(&entry);
        Ok(())
    }

    /// Records `entry`, made durable by the step's one sync (see
    /// [`SessionLog::append_unsynced`]).
    fn record_unsynced(&mut self, entry: Entry) -> Result<(), EngineError> {
        if let Some(log) = &mut self.log {
            log.append_unsynced(&entry)?;
        }
        self.session.apply(&entry);
        Ok(())
    }

    /// Records a step's results, made durable while the model is asked for
    /// the next answer: the next record waits for that (see
    /// [`SessionLog::append_syncing_behind`]).
    async fn record_results(&mut self, content: Vec<Block>) -> Result<(), EngineError> {
        let entry = Entry::ToolResults { content };
        if let Some(log) = &mut self.log {
            log.append_syncing_behind(&entry).await?;
        }
        self.session.apply(&entry);
        Ok(())
    }

    /// Records a new plan (or none), and for the run itself — not a
    /// subagent — shows it on the run's record with an `agent.plan` event.
    async fn record_plan(&mut self, plan: Option<StepPlan>) -> Result<(), EngineError> {
        self.record(Entry::Plan { plan: plan.clone() }).await?;
        if self.log.is_some() {
            self.rt.runs.set_plan(&self.run_id, plan.as_ref()).await?;
        }
        Ok(())
    }

    async fn abort_reason(&self) -> Option<String> {
        let run = self.rt.runs.get(&self.run_id).await.ok()?;
        closed_reason(&run)
    }

    /// Answers requests until none is left, the run is aborted, a budget
    /// is spent or the model fails; what it logged is durable when it
    /// returns.
    pub(crate) async fn answer_pending_requests(&mut self) -> Result<TurnOutcome, EngineError> {
        let outcome = self.answer_requests().await;
        let settled = self.settle_log().await;
        let outcome = outcome?;
        settled?;
        Ok(outcome)
    }

    /// Waits until what the log holds is durable (the last step's results
    /// may still be syncing) and in the store for any reader; a failed
    /// sync is this call's error.
    pub(super) async fn settle_log(&mut self) -> Result<(), EngineError> {
        if let Some(log) = &mut self.log {
            log.settle_all().await?;
        }
        Ok(())
    }

    async fn answer_requests(&mut self) -> Result<TurnOutcome, EngineError> {
        // A request logged before its message was marked taken (a crash in
        // between) is taken now.
        let taken = self.session.last_message_seq;
        self.rt.runs.mark_consumed_through(&self.run_id, taken).await?;
        let pending = self.session.pending_calls();
        if !pending.is_empty() {
            // A run aborted meanwhile lets its calls go as they stand
            // (`snapshot`); only a run that goes on settles them here.
            if let Some(reason) = self.abort_reason().await {
                return Ok(TurnOutcome::Aborted(reason));
            }
            let answers = super::resume::reconcile(self, &pending).await?;
            self.record(Entry::ToolResults { content: answers }).await?;
        }
        // A run that stopped after its calls' results and before the model
        // answered them takes a waiting message with those results.
        if self.session.messages.last().is_some_and(|m| m.content.iter().any(Block::is_tool_result)) {
            self.take_next_message().await?;
        }
        loop {
            // The row the last step's commit returned is as fresh as a
            // read here would be but for an abort in the instants since,
            // which the watch during the model's answer and the check
            // before an answer's first call (and any call that may act)
            // still see.
            let run = match self.committed_run.take() {
                Some(run) => run,
                None => self.rt.runs.get(&self.run_id).await?,
            };
            if let Some(reason) = closed_reason(&run) {
                return Ok(TurnOutcome::Aborted(reason));
            }
            let awaiting_model =
                self.session.messages.last().is_some_and(|m| m.role == crate::agent::providers::Role::User);
            if awaiting_model {
                match self.step(&run).await? {
                    TurnOutcome::Idle => continue,
                    other => return Ok(other),
                }
            }
            if !self.take_next_message().await? {
                return Ok(TurnOutcome::Idle);
            }
        }
    }

    /// Takes the next user message, if one is waiting. A message goes on
    /// with the current task — its plan, its tools and its request scope,
    /// so a write the task made already is not made again — unless its
    /// sender started a new task (or there is none yet): then the plan is
    /// dropped, tool discovery starts over and the request scope is new.
    async fn take_next_message(&mut self) -> Result<bool, EngineError> {
        let messages = self.rt.runs.messages(&self.run_id).await?;
        let Some(next) = messages.into_iter().find(|m| m.seq > self.session.last_message_seq) else {
            return Ok(false);
        };
        let current = self.session.request.as_ref().map(|(id, _)| id.clone());
        let (request_id, continues) = match current {
            Some(id) if !next.new_task => (id, true),
            _ => (new_id(), false),
        };
        if !continues && self.session.plan.is_some() {
            // A new task: the old plan does not carry over.
            self.record_plan(None).await?;
        }
        let text = next.text;
        let note = self.check_open_writes().await?;
        let message_seq = next.seq;
        self.record(Entry::Request { request_id: request_id.clone(), message_seq, text, continues, note }).await?;
        self.rt.runs.mark_consumed(&self.run_id, next.seq).await?;
        self.caller.turn = next.seq;
        if !continues {
            self.caller.request_id = request_id;
            self.discovery.reset();
            self.discovery_note = None;
            // A new task reads the skills as they are now, and starts with
            // the tools of the skill the run started with.
            self.skills = self.rt.skill_set().await.skills;
            self.skills_listing = skill_reads::listing(&self.skills, self.limits.context_budget);
            if let Some((Some(read), _)) = &self.started_with {
                self.discovery.enable(&read.callable);
            }
        }
        Ok(true)
    }

    /// One model request and the tool calls it makes; `run` as it was just
    /// read.
    async fn step(&mut self, run: &Run) -> Result<TurnOutcome, EngineError> {
        if let Some(reason) = self.limits.exceeded(run, 0) {
            return Ok(TurnOutcome::OverBudget(reason));
        }
        let mut request = self.request();
        let estimated = match self.fit(&request).await {
            Ok((Some(messages), tokens)) => {
                request.messages = messages;
                tokens
            }
            Ok((None, tokens)) => tokens,
            // What cannot fit ends the run; the engine's own failures do not.
            Err(EngineError::Compaction(reason)) => return Ok(TurnOutcome::Failed(reason)),
            Err(e) => return Err(e),
        };
        // The step's writes: the last streamed text and the answer's cost
        // commit with the first call's start (or alone, without calls).
        let mut writes = StepWrites::default();
        let completion = match self.ask(&request, &mut writes).await? {
            Ok(c) => c,
            Err(outcome) => {
                self.rt.runs.commit_step(&self.run_id, writes).await?;
                return Ok(outcome);
            }
        };
        self.charge(&completion, estimated, &mut writes);
        let said_nothing = completion.text.trim().is_empty() && completion.tool_calls.is_empty();
        if said_nothing {
            // Nothing to keep (an empty message is refused by the APIs next
            // time); the tokens are still charged. Asked again once, then the
            // run fails saying so.
            self.empty_answers += 1;
            self.rt.runs.commit_step(&self.run_id, writes).await?;
            if self.empty_answers >= 2 {
                let hint = if completion.stop == StopReason::MaxTokens {
                    " (it stopped at its token limit: a lower model.thinking_level leaves more for the answer)"
                } else {
                    ""
                };
                return Ok(TurnOutcome::Failed(format!(
                    "the model answered twice with neither text nor a tool call{hint}"
                )));
            }
            return Ok(TurnOutcome::Idle);
        }
        self.empty_answers = 0;
        let mut content = completion.reasoning.clone();
        if !completion.text.trim().is_empty() {
            content.push(Block::Text { text: completion.text.clone() });
        }
        for call in &completion.tool_calls {
            let input = call.input.clone().unwrap_or_else(|e| json!({"invalid_arguments": e}));
            content.push(Block::ToolUse { id: call.id.clone(), name: call.name.clone(), input });
        }
        if completion.tool_calls.is_empty() {
            self.record(Entry::Assistant { content }).await?;
            self.rt.runs.commit_step(&self.run_id, writes).await?;
            self.final_text = completion.text;
            return Ok(TurnOutcome::Idle);
        }
        // Synced with the results: one sync a step.
        self.record_unsynced(Entry::Assistant { content })?;
        let (answers, over, run) = self.answer_calls(&completion.tool_calls, writes).await?;
        self.committed_run = run;
        self.record_results(answers).await?;
        Ok(over.map(TurnOutcome::OverBudget).unwrap_or(TurnOutcome::Idle))
    }

    /// Makes the request fit the context window: compacts the history at
    /// the threshold (and logs the result, so a restart resumes from it),
    /// or explains why it cannot fit. Returns the new history, if any, and
    /// the tokens the request then takes.
    async fn fit(&mut self, request: &ModelRequest) -> Result<(Option<Vec<Message>>, usize), EngineError> {
        let window = self.limits.context_budget;
        let ratio = if self.limits.compaction { self.limits.compaction_ratio } else { 1.0 };
        let tokens = self.counter.count_request_measured(request, &self.offered.0, &mut self.measured);
        let compacted = compaction::compact(request, tokens, &self.session.request_text, &self.counter, window, ratio)
            .map_err(EngineError::Compaction)?;
        match compacted {
            Compaction::NotNeeded { tokens } => Ok((None, tokens)),
            Compaction::Compacted { .. } if !self.limits.compaction => Err(EngineError::Compaction(format!(
                "the request needs more than the context window of {window} tokens and compaction is switched off"
            ))),
            Compaction::Compacted { messages, before, after } => {
                self.record(Entry::Compacted { messages: messages.clone() }).await?;
                let payload = json!({"tokensBefore": before, "tokensAfter": after, "actor": self.actor_name()});
                if let Err(e) = self.rt.runs.append_event(&self.run_id, "agent.compacted", &payload).await {
                    tracing::warn!(run = %self.run_id, error = %e, "could not record a compaction");
                }
                Ok((Some(messages), after))
            }
        }
    }

    fn actor_name(&self) -> &'static str {
        if self.caller.actor == Actor::Subagent { "subagent" } else { "agent" }
    }

    /// Streams the model's answer, publishing text as it arrives; what is
    /// left when the stream ends goes into `writes`. An abort drops the
    /// stream.
    async fn ask(
        &self,
        request: &ModelRequest,
        writes: &mut StepWrites,
    ) -> Result<Result<Completion, TurnOutcome>, EngineError> {
        let (tx, rx) = mpsc::unbounded_channel();
        // Forwarded beside the answer in this task: the stream ends when
        // the answer is done (or dropped on an abort), and so does this.
        let forward = forward_text(self.rt.runs.clone(), self.run_id.clone(), rx);
        let answering = async {
            tokio::select! {
                answer = self.provider.complete(request, tx) => Ok(answer),
                reason = self.watch_abort() => Err(reason),
            }
        };
        let (answer, left) = tokio::join!(answering, forward);
        if !left.is_empty() {
            writes.events.push(("agent.text_delta", json!({"text": left})));
        }
        Ok(match answer {
            Ok(Ok(completion)) => Ok(completion),
            Ok(Err(e)) => Err(TurnOutcome::Failed(format!("the model request failed: {e}"))),
            Err(reason) => Err(TurnOutcome::Aborted(reason)),
        })
    }

    async fn watch_abort(&self) -> String {
        loop {
            tokio::time::sleep(AgentRuntime::ABORT_POLL).await;
            if let Some(reason) = self.abort_reason().await {
                return reason;
            }
        }
    }
}

/// Why the run takes no further steps, if it was aborted or has ended.
pub(super) fn closed_reason(run: &Run) -> Option<String> {
    if run.status.is_final() {
        return Some(format!("the run is {}", run.status.as_str()));
    }
    run.abort_reason.clone()
}

/// Publishes streamed text as `agent.text_delta` events, a few deltas at a
/// time so a fast stream does not become one database write per word;
/// returns what is left when the stream ends, for the step to write with
/// the rest of its writes.
async fn forward_text(
    runs: crate::agent::runs::Runs,
    run_id: String,
    mut rx: mpsc::UnboundedReceiver<StreamEvent>,
) -> String {
    let mut buffer = String::new();
    let mut last = tokio::time::Instant::now();
    loop {
        let next = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await;
        let closed = matches!(next, Ok(None));
        if let Ok(Some(StreamEvent::TextDelta(text))) = next {
            buffer.push_str(&text);
        }
        if closed {
            return buffer;
        }
        let due = last.elapsed() >= Duration::from_millis(100) || buffer.len() >= 512;
        if !buffer.is_empty() && due {
            let payload = json!({"text": std::mem::take(&mut buffer)});
            if let Err(e) = runs.append_event(&run_id, "agent.text_delta", &payload).await {
                tracing::warn!(run = %run_id, error = %e, "could not record streamed text");
            }
            last = tokio::time::Instant::now();
        }
    }
}
