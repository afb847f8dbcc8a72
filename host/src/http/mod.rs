//! The HTTP API under `/api/v1`: API-key and console-session
//! authentication, the capability list, the invoke endpoint (the one invoke
//! path), and the audit log.
//! Every error is JSON `{"error":{"code","message"}}`; bodies over 1 MiB,
//! malformed JSON, wrong types and unknown fields are 4xx and change
//! nothing.

pub mod auth;
pub mod error;
pub mod keys;
mod routes;
pub mod session;

use std::future::Future;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use crate::pipeline::Capabilities;
use error::ApiError;

/// Largest request body accepted.
pub const BODY_LIMIT: usize = 1 << 20;

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    pub caps: Arc<Capabilities>,
}

/// The API router.
pub fn router(caps: Arc<Capabilities>) -> Router {
    Router::new()
        .route("/api/v1/health", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/api/v1/capabilities", get(routes::capabilities::list))
        .route("/api/v1/capabilities/{id}/invoke", post(routes::capabilities::invoke))
        .route("/api/v1/audit", get(routes::audit::list))
        .route("/api/v1/automation-grants", get(routes::grants::list).post(routes::grants::create))
        .route("/api/v1/automation-grants/{id}", axum::routing::patch(routes::grants::update))
        .route("/api/v1/approvals", get(routes::approvals::list).post(routes::approvals::request))
        .route("/api/v1/approvals/{id}", get(routes::approvals::get).patch(routes::approvals::decide))
        .route("/api/v1/settings", get(routes::settings::get).patch(routes::settings::update))
        .route("/api/v1/session", post(routes::session::login).delete(routes::session::logout))
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(AppState { caps })
}

/// Serves the API on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    caps: Arc<Capabilities>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(caps)).with_graceful_shutdown(shutdown).await
}
