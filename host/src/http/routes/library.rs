//! The media domain over HTTP: `GET /library` (what the library holds and
//! wants), `GET /artifacts[/{id}]` (plans, reports, evidence), and the
//! durable tasks — `GET /tasks[/{id}]` (`?subjectId=`; without it, the
//! background sweeps' own tasks only with `?sweeps=true` or when they
//! failed), `POST
//! /tasks/{id}/cancel`, `POST /tasks/{id}/retry`. Task changes need a
//! console session or a key with the execute scope, and are audited.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use capstan_contract::ops::queries::Inventory;
use serde::{Deserialize, Serialize};

use crate::domain::{Artifact, DomainError};
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, ApiQuery, in_range, named};
use crate::http::openapi::ErrorBody;
use crate::runtime::EffectClass;
use crate::tasks::{Task, TaskError};

pub(crate) fn domain_error(e: DomainError) -> ApiError {
    match e {
        DomainError::Invalid(m) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", m),
        DomainError::NotFound(m) => ApiError::not_found(m),
        DomainError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
        DomainError::Sql(e) => ApiError::internal(e),
    }
}

fn task_error(e: TaskError) -> ApiError {
    match e {
        TaskError::NotFound(id) => ApiError::not_found(format!("no task {id}")),
        TaskError::Sql(e) => ApiError::internal(e),
        other => ApiError::new(StatusCode::CONFLICT, "conflict", other.to_string()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct LibraryQuery {
    kind: Option<String>,
    limit: Option<i64>,
}

/// Entities with their slots.
#[utoipa::path(get, path = "/api/v1/library", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("kind" = Option<String>, Query, pattern = "^(movie|tv)$", description = "movie or tv"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "At most this many entities (default 100)")),
    responses((status = 200, description = "The entities, each with its slots", body = Inventory),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn library(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<LibraryQuery>,
) -> Result<Json<Inventory>, ApiError> {
    let kind = named::<crate::domain::EntityKind>("kind", q.kind.as_deref())?;
    let limit = in_range("limit", q.limit, 100, 1, 1000)?;
    let inventory = state.services().domain.inventory(kind, limit).await.map_err(domain_error)?;
    Ok(Json(inventory))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ArtifactQuery {
    kind: Option<String>,
    subject: Option<String>,
    limit: Option<i64>,
}

/// The artifacts asked for, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ArtifactList {
    artifacts: Vec<Artifact>,
}

/// Artifacts, newest first.
#[utoipa::path(get, path = "/api/v1/artifacts", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("kind" = Option<String>, Query, pattern = "^(plan|report|evidence)$", description = "plan, report or evidence"),
           ("subject" = Option<String>, Query, description = "The record the artifact is about"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "At most this many (default 100)")),
    responses((status = 200, description = "The artifacts", body = ArtifactList),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn artifacts(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<ArtifactQuery>,
) -> Result<Json<ArtifactList>, ApiError> {
    let kind = named::<crate::domain::ArtifactKind>("kind", q.kind.as_deref())?;
    let limit = in_range("limit", q.limit, 100, 1, 1000)?;
    let list = state.services().domain.artifacts(kind, q.subject.as_deref(), limit).await.map_err(domain_error)?;
    Ok(Json(ArtifactList { artifacts: list }))
}

/// One artifact.
#[utoipa::path(get, path = "/api/v1/artifacts/{id}", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Artifact id")),
    responses((status = 200, description = "The artifact", body = Artifact),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 404, description = "Not found", body = ErrorBody)))]
pub async fn artifact(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Artifact>, ApiError> {
    Ok(Json(state.services().domain.artifact(&id).await.map_err(domain_error)?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct TaskQuery {
    subject_id: Option<String>,
    limit: Option<i64>,
    /// Also the background sweeps' own tasks that did not fail.
    #[serde(default)]
    sweeps: bool,
}

/// Durable tasks, newest first, and how many of the background sweeps'
/// own tasks were left out of them.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskList {
    tasks: Vec<Task>,
    /// Sweep tasks that did not fail, left out unless asked for.
    folded_sweeps: i64,
}

/// Durable tasks, newest first, optionally about one subject.
#[utoipa::path(get, path = "/api/v1/tasks", tag = "tasks",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("subjectId" = Option<String>, Query, description = "Only tasks about this record"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "At most this many (default 100)"),
           ("sweeps" = Option<bool>, Query, description = "Also the background sweeps' own tasks that did not fail (left out by default unless subjectId is given)")),
    responses((status = 200, description = "The tasks, and how many sweep tasks were left out", body = TaskList),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn tasks(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<TaskQuery>,
) -> Result<Json<TaskList>, ApiError> {
    let tasks = state.app.tasks();
    let limit = in_range("limit", q.limit, 100, 1, 1000)?;
    // Asked about one record, every task about it is wanted.
    let sweeps = [crate::acquisition::SWEEP_KINDS, &[crate::retention::PRUNE_DATA]].concat();
    let fold: &[&str] = if q.sweeps || q.subject_id.is_some() { &[] } else { &sweeps };
    let (list, folded) = tasks.list_folding(q.subject_id.as_deref(), limit, fold).await?;
    Ok(Json(TaskList { tasks: list, folded_sweeps: folded }))
}

/// One task.
#[utoipa::path(get, path = "/api/v1/tasks/{id}", tag = "tasks",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Task id")),
    responses((status = 200, description = "The task", body = Task),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 404, description = "Not found", body = ErrorBody)))]
pub async fn task(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Task>, ApiError> {
    let task = state.app.tasks().get(&id).await?;
    Ok(Json(task.ok_or_else(|| ApiError::not_found(format!("no task {id}")))?))
}

async fn change_task(state: &AppState, caller: &Caller, id: &str, action: &str) -> Result<Json<Task>, ApiError> {
    caller.origin(EffectClass::Execute, &format!("{action} of a task"), crate::store::new_id())?;
    let tasks = state.app.tasks();
    let result = if action == "cancel" { tasks.cancel(id).await } else { tasks.retry(id).await };
    let outcome = if result.is_ok() { "succeeded" } else { "failed" };
    let detail = result.as_ref().err().map(|e| e.to_string());
    super::audit_change(state, caller, &format!("task.{action}"), id, outcome, detail).await?;
    Ok(Json(result.map_err(task_error)?))
}

/// Cancels a queued or running task.
#[utoipa::path(post, path = "/api/v1/tasks/{id}/cancel", tag = "tasks",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Task id")),
    responses((status = 200, description = "The cancelled task", body = Task),
              (status = 403, description = "The key lacks the execute scope", body = ErrorBody),
              (status = 404, description = "Not found", body = ErrorBody),
              (status = 409, description = "The task already finished", body = ErrorBody)))]
pub async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Task>, ApiError> {
    change_task(&state, &caller, &id, "cancel").await
}

/// Queues a failed, dead or cancelled task again.
#[utoipa::path(post, path = "/api/v1/tasks/{id}/retry", tag = "tasks",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Task id")),
    responses((status = 200, description = "The queued task", body = Task),
              (status = 403, description = "The key lacks the execute scope", body = ErrorBody),
              (status = 404, description = "Not found", body = ErrorBody),
              (status = 409, description = "The task cannot be retried now", body = ErrorBody)))]
pub async fn retry(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Task>, ApiError> {
    change_task(&state, &caller, &id, "retry").await
}
