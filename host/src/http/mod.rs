//! The HTTP API under `/api/v1`. For now: health and the capability list;
//! every error is JSON `{"error":{"code","message"}}`.

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::runtime::Runtime;

/// The API router.
pub fn router(runtime: Arc<Runtime>) -> Router {
    Router::new()
        .route("/api/v1/health", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/api/v1/capabilities", get(capabilities))
        .fallback(|| async {
            (
                axum::http::StatusCode::NOT_FOUND,
                Json(json!({ "error": { "code": "not_found", "message": "no such endpoint" } })),
            )
        })
        .with_state(runtime)
}

async fn capabilities(State(runtime): State<Arc<Runtime>>) -> Json<Value> {
    let snapshot = runtime.snapshot();
    let active: Vec<Value> = snapshot
        .active
        .values()
        .map(|l| {
            json!({
                "descriptor": l.descriptor,
                "digest": l.digest,
                "effectClass": l.imports.class,
                "source": l.source,
            })
        })
        .collect();
    let held: Vec<Value> = snapshot
        .held
        .iter()
        .map(|(id, h)| json!({ "id": id, "digest": h.candidate.digest, "reason": h.reason }))
        .collect();
    Json(json!({ "capabilities": active, "held": held, "refused": snapshot.refused }))
}

/// Serves the API on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    runtime: Arc<Runtime>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(runtime)).with_graceful_shutdown(shutdown).await
}
