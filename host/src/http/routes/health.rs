//! `GET /api/v1/health`: whether the host can do its work — the database
//! answers (and how fast), how many processes are alive by their
//! heartbeats, and how the task queue stands. Open to anyone, like any
//! load balancer's check; it says nothing a caller could misuse. 200 while
//! the database answers (`ok`, or `degraded` when ready tasks have no live
//! process to take them); 503 `failing` when it does not.

use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::http::AppState;

/// The host can do its work, or can do it once a worker is alive.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Health {
    status: HealthStatus,
    database: DatabaseUp,
    workers: Workers,
    tasks: TaskQueue,
}

/// `degraded`: tasks are ready and no process is alive to take them.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HealthStatus {
    Ok,
    Degraded,
}

/// The database answered.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DatabaseUp {
    #[schema(schema_with = crate::http::schema::only_true)]
    ok: bool,
    /// `sqlite` or `postgres`.
    backend: &'static str,
    /// How long `SELECT 1` took, to the hundredth of a millisecond.
    latency_ms: f64,
}

/// The server and worker processes alive by their heartbeats.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workers {
    live_processes: i64,
    /// Said when tasks are ready and no process is alive to take them.
    note: Option<&'static str>,
}

/// How the task queue stands.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskQueue {
    /// Queued and due: a worker would take them now.
    ready: i64,
    /// Queued for later (a retry's backoff, say).
    scheduled: i64,
    running: i64,
    /// How long the longest-waiting ready task has waited.
    oldest_ready_ms: Option<i64>,
}

/// The host cannot do its work: its database does not answer, or its
/// tables cannot be read.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct HealthFailing {
    #[schema(schema_with = failing_schema)]
    status: &'static str,
    database: DatabaseDown,
}

/// The database did not answer, or answered without its tables.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct DatabaseDown {
    #[schema(schema_with = crate::http::schema::only_false)]
    ok: bool,
    /// `sqlite` or `postgres`.
    backend: &'static str,
    /// What failed, without internals; the server log has the rest.
    error: &'static str,
}

/// The text `failing` and nothing else.
fn failing_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["failing"])).build()
}

/// Whether the host can do its work.
#[utoipa::path(get, path = "/api/v1/health", tag = "health",
    responses((status = 200, description = "The database answers; `status` is ok or degraded", body = Health),
              (status = 503, description = "The database does not answer", body = HealthFailing)))]
pub async fn health(State(state): State<AppState>) -> Response {
    let db = &state.services().db;
    let started = Instant::now();
    let answered = sqlx::query_scalar::<_, i64>("SELECT 1").fetch_one(&db.pool).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let backend = match db.backend {
        crate::store::Backend::Sqlite => "sqlite",
        crate::store::Backend::Postgres => "postgres",
    };
    let failing = |error| {
        let body = HealthFailing { status: "failing", database: DatabaseDown { ok: false, backend, error } };
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    };
    if let Err(e) = answered {
        tracing::error!(error = %e, "health check: the database did not answer");
        return failing("the database did not answer; see the server log");
    }
    // Grouping the queue grows with the task table: checks that arrive
    // together share one read.
    let ledger = state.services().ledger.clone();
    let tasks = state.app.tasks().clone();
    let read = state
        .health_read
        .get(|| async move {
            let processes = ledger.live_processes().await.map_err(|e| e.to_string())?;
            let queue = tasks.queue().await.map_err(|e| e.to_string())?;
            Ok((processes, queue))
        })
        .await;
    let (processes, queue) = match read {
        Ok(read) => read,
        Err(e) => {
            tracing::error!(error = %e, "health check: cannot read the heartbeats or the queue");
            return failing("the database answered but its tables could not be read; see the server log");
        }
    };
    let stalled = queue.ready > 0 && processes == 0;
    let body = Health {
        status: if stalled { HealthStatus::Degraded } else { HealthStatus::Ok },
        database: DatabaseUp { ok: true, backend, latency_ms: (latency_ms * 100.0).round() / 100.0 },
        workers: Workers {
            live_processes: processes,
            note: stalled.then_some("tasks are ready but no server or worker process is alive to take them"),
        },
        tasks: TaskQueue {
            ready: queue.ready,
            scheduled: queue.scheduled,
            running: queue.running,
            oldest_ready_ms: queue.oldest_ready_ms,
        },
    };
    (StatusCode::OK, Json(body)).into_response()
}
