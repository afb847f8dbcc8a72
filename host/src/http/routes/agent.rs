//! Agent runs over HTTP: `POST /agent/runs {goal, mode, capabilityAllowlist?, skill?}`
//! creates a run and its durable `runAgent` task (`queued`); `GET
//! /agent/runs` lists them; `GET /agent/runs/{id}?afterSeq=&limit=` returns
//! the run, its events by seq, its messages and the verified report;
//! `POST /agent/runs/{id}/messages {text, newTask?}`, `POST
//! /agent/runs/{id}/abort {reason?}` and `DELETE /agent/runs/{id}`. An
//! execute run needs the execute scope, a plan-only run the propose scope,
//! deleting the execute scope; reading needs any key or a console session.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::StartError;
use crate::agent::engine::EngineError;
use crate::agent::runs::Deleted;
use crate::agent::runs::{NewRun, Run, RunError, RunEvent, RunMessage, RunMode, RunStatus};
use crate::domain::Artifact;
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::{ApiPath, ApiQuery, in_range};
use crate::http::openapi::ErrorBody;
use crate::runtime::EffectClass;

fn run_error(e: RunError) -> ApiError {
    match e {
        RunError::NotFound(id) => ApiError::not_found(format!("no agent run {id}")),
        RunError::WrongState(..) => ApiError::new(StatusCode::CONFLICT, "conflict", e.to_string()),
        RunError::Sql(e) => ApiError::internal(e),
    }
}

fn start_error(e: StartError) -> ApiError {
    match e {
        StartError::Invalid(m) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", m),
        StartError::UnknownCapability(id) => {
            ApiError::not_found(format!("capabilityAllowlist names {id}, which is not loaded"))
                .about("capabilityAllowlist")
        }
        StartError::UnknownSkill(why) => ApiError::not_found(why).about("skill"),
        StartError::Run(e) => run_error(e),
        StartError::Task(m) => ApiError::internal(m),
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct StartRun {
    #[schema(schema_with = crate::http::schema::not_blank)]
    goal: String,
    #[serde(default = "execute")]
    mode: RunMode,
    capability_allowlist: Option<Vec<String>>,
    /// A skill the run starts with already read (its name).
    skill: Option<String>,
}

fn execute() -> RunMode {
    RunMode::Execute
}

/// Starts a run: it is queued for a worker.
#[utoipa::path(post, path = "/api/v1/agent/runs", tag = "agent",
    security(("apiKey" = []), ("consoleSession" = [])),
    request_body = StartRun,
    responses((status = 201, description = "The queued run", body = Run),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "The key's scopes do not reach the run's mode", body = ErrorBody),
              (status = 404, description = "The allowlist names a capability that is not loaded, or the skill cannot be read", body = ErrorBody),
              (status = 422, description = "An execute capability in a plan_only allowlist", body = ErrorBody)))]
pub async fn start(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<StartRun>,
) -> Result<(StatusCode, Json<Run>), ApiError> {
    let needs = if body.mode == RunMode::Execute { EffectClass::Execute } else { EffectClass::Propose };
    caller.origin(needs, "starting an agent run in this mode", String::new())?;
    let new = NewRun {
        goal: body.goal,
        mode: body.mode,
        allowlist: body.capability_allowlist,
        created_by: caller.principal(),
        investigation: None,
        skill: body.skill,
    };
    let run = state.agent().start(new).await.map_err(start_error)?;
    Ok((StatusCode::CREATED, Json(run)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunsQuery {
    limit: Option<i64>,
}

/// Runs, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct RunList {
    items: Vec<Run>,
}

/// Runs, newest first.
#[utoipa::path(get, path = "/api/v1/agent/runs", tag = "agent",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "At most this many runs (default 50)")),
    responses((status = 200, description = "The runs", body = RunList),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<RunsQuery>,
) -> Result<Json<RunList>, ApiError> {
    let limit = in_range("limit", q.limit, 50, 1, 500)?;
    let items = state.agent().runs().list(limit).await.map_err(run_error)?;
    Ok(Json(RunList { items }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RunQuery {
    after_seq: Option<i64>,
    limit: Option<i64>,
}

/// A run with its events after `afterSeq`, its messages and its report.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunDetail {
    run: Run,
    /// By seq, after `afterSeq`.
    events: Vec<RunEvent>,
    /// The last event's seq (`afterSeq` when there were none): where the
    /// next read goes on from.
    next_seq: i64,
    messages: Vec<RunMessage>,
    /// Null while a run that is not waiting has no report yet.
    report: Option<RunReport>,
}

/// A run's report: where a waiting run stands now, or the one an ended run
/// ended with.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub(crate) enum RunReport {
    /// A waiting run's, built from the records as they are now.
    Current {
        #[schema(schema_with = crate::http::schema::only_true)]
        current: bool,
        /// The AgentGoalReport's body as it would be now.
        #[schema(value_type = Object)]
        body: Value,
    },
    /// The AgentGoalReport artifact the run ended with.
    Ended(Artifact),
}

/// A run with its events after `afterSeq`, its messages and its report.
#[utoipa::path(get, path = "/api/v1/agent/runs/{id}", tag = "agent",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Run id"),
           ("afterSeq" = Option<i64>, Query, minimum = 0, maximum = 9_223_372_036_854_775_807_i64, description = "Events after this run seq"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "At most this many events (default 200)")),
    responses((status = 200, description = "The run, its events, messages and report: a waiting run's report is where it stands now (`current: true`)", body = RunDetail),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 404, description = "No such run", body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<RunQuery>,
) -> Result<Json<RunDetail>, ApiError> {
    let runs = state.agent().runs();
    let after = in_range("afterSeq", q.after_seq, 0, 0, i64::MAX)?;
    let limit = in_range("limit", q.limit, 200, 1, 1000)?;
    // Events before the run: a status written between the two reads then
    // has an event after `nextSeq`, which brings the reader back. Read the
    // other way round, the status event could be passed over with the run
    // still read as it was, and a follower would show it running for good.
    let events = runs.run_events(&id, after, limit).await.map_err(run_error)?;
    let run = runs.get(&id).await.map_err(run_error)?;
    let next = events.last().map_or(after, |e| e.seq);
    let messages = runs.messages(&id).await.map_err(run_error)?;
    // A waiting run's report is where it stands now; an ended run's, the
    // one it ended with.
    let report = match &run.report_id {
        _ if run.status == RunStatus::Waiting => {
            let body = state.agent().current_report(&run).await.map_err(ApiError::internal)?;
            Some(RunReport::Current { current: true, body })
        }
        Some(report) => {
            let artifact = state.services().domain.artifact(report).await.map_err(super::library::domain_error)?;
            Some(RunReport::Ended(artifact))
        }
        None => None,
    };
    Ok(Json(RunDetail { run, events, next_seq: next, messages, report }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SendMessage {
    #[schema(schema_with = crate::http::schema::not_blank)]
    text: String,
    /// Starts a new task: the plan is dropped and the message opens a new
    /// request scope (identical writes may run again). Without it the
    /// message goes on with the current task ("how far are you?",
    /// "continue"), keeping its plan and request scope.
    #[serde(default)]
    new_task: bool,
}

/// Sends the run a message: taken after the current turn, or it wakes a
/// run that finished, waits or was aborted.
#[utoipa::path(post, path = "/api/v1/agent/runs/{id}/messages", tag = "agent",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Run id")),
    request_body = SendMessage,
    responses((status = 200, description = "The run", body = Run),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "The key's scopes do not reach the run's mode", body = ErrorBody),
              (status = 404, description = "No such run", body = ErrorBody),
              (status = 409, description = "The run is being aborted; it takes messages once it has stopped", body = ErrorBody),
              (status = 422, description = "Empty text", body = ErrorBody)))]
pub async fn message(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    body: Result<ApiJson<SendMessage>, ApiError>,
) -> Result<Json<Run>, ApiError> {
    let run = state.agent().runs().get(&id).await.map_err(run_error)?;
    let needs = if run.mode == RunMode::Execute { EffectClass::Execute } else { EffectClass::Propose };
    caller.origin(needs, "messaging an agent run in this mode", String::new())?;
    let ApiJson(body) = body?;
    let run = state.agent().message(&id, &body.text, &caller.principal(), body.new_task).await.map_err(start_error)?;
    Ok(Json(run))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AbortRun {
    reason: Option<String>,
}

/// Stops the run after its current step (a model answer in flight is cut
/// off); undoes nothing.
#[utoipa::path(post, path = "/api/v1/agent/runs/{id}/abort", tag = "agent",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Run id")),
    request_body = AbortRun,
    responses((status = 200, description = "The run, with the abort recorded", body = Run),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 404, description = "No such run", body = ErrorBody),
              (status = 409, description = "The run already ended", body = ErrorBody)))]
pub async fn abort(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<AbortRun>,
) -> Result<Json<Run>, ApiError> {
    caller.origin(EffectClass::Propose, "aborting an agent run", String::new())?;
    let reason =
        body.reason.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| format!("aborted by {}", caller.principal()));
    // One conditional update: 409 and nothing written for a run that ended;
    // a queued run ends here, a running or waiting one at its next check.
    let run = state.agent().runs().request_abort(&id, &reason).await.map_err(run_error)?;
    Ok(Json(run))
}

/// What deleting a run did.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunDeleted {
    run_id: String,
    deleted: RunRemoval,
    /// Its writes whose outcome is open, which keep it (0 when gone).
    open_writes: i64,
}

/// `gone`: nothing of the run remains; `kept`: it is marked deleted and
/// goes once its writes with an open outcome are settled.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RunRemoval {
    Gone,
    Kept,
}

/// Deletes an ended run: its messages, its events, its session log and the
/// receipts of its writes whose outcome is known go now; a run with writes
/// whose outcome is open is kept, marked deleted, until they are settled.
#[utoipa::path(delete, path = "/api/v1/agent/runs/{id}", tag = "agent",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Run id")),
    responses((status = 200, description = "Whether the run is gone or kept for its open writes", body = RunDeleted),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "The key has no execute scope", body = ErrorBody),
              (status = 404, description = "No such run", body = ErrorBody),
              (status = 409, description = "The run has not ended; abort it first", body = ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RunDeleted>, ApiError> {
    caller.origin(EffectClass::Execute, "deleting an agent run", String::new())?;
    let deleted = match state.agent().delete(&id).await {
        Ok(deleted) => deleted,
        Err(EngineError::Run(e)) => return Err(run_error(e)),
        Err(e) => return Err(ApiError::internal(e)),
    };
    let (removal, word, open) = match deleted {
        Deleted::Gone => (RunRemoval::Gone, "gone", 0),
        Deleted::Kept { open } => (RunRemoval::Kept, "kept", open),
    };
    let detail = format!("{word}; writes with an open outcome kept: {open}");
    super::audit_change(&state, &caller, "agent_run.delete", &id, "succeeded", Some(detail)).await?;
    Ok(Json(RunDeleted { run_id: id, deleted: removal, open_writes: open }))
}
