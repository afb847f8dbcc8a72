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
use serde_json::json;

use crate::http::AppState;
use crate::tasks::Tasks;

/// Whether the host can do its work.
#[utoipa::path(get, path = "/api/v1/health", tag = "health",
    responses((status = 200, description = "The database answers; `status` is ok or degraded", body = serde_json::Value),
              (status = 503, description = "The database does not answer", body = serde_json::Value)))]
pub async fn health(State(state): State<AppState>) -> Response {
    let db = state.caps().db();
    let started = Instant::now();
    let answered = sqlx::query_scalar::<_, i64>("SELECT 1").fetch_one(&db.pool).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let backend = match db.backend {
        crate::store::Backend::Sqlite => "sqlite",
        crate::store::Backend::Postgres => "postgres",
    };
    if let Err(e) = answered {
        tracing::error!(error = %e, "health check: the database did not answer");
        let body = json!({
            "status": "failing",
            "database": { "ok": false, "backend": backend, "error": "the database did not answer; see the server log" },
        });
        return (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    }
    // Grouping the queue grows with the task table: checks that arrive
    // together share one read.
    let ledger = state.caps().ledger().clone();
    let tasks = Tasks::new(db.clone());
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
            let body = json!({ "status": "failing", "database": { "ok": false, "backend": backend,
                "error": "the database answered but its tables could not be read; see the server log" } });
            return (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
        }
    };
    let stalled = queue.ready > 0 && processes == 0;
    let body = json!({
        "status": if stalled { "degraded" } else { "ok" },
        "database": { "ok": true, "backend": backend, "latencyMs": (latency_ms * 100.0).round() / 100.0 },
        "workers": {
            "liveProcesses": processes,
            "note": if stalled { Some("tasks are ready but no server or worker process is alive to take them") } else { None },
        },
        "tasks": { "ready": queue.ready, "scheduled": queue.scheduled, "running": queue.running,
                   "oldestReadyMs": queue.oldest_ready_ms },
    });
    (StatusCode::OK, Json(body)).into_response()
}
