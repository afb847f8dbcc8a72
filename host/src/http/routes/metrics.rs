//! `GET /metrics`: the host's Prometheus metrics. A scraper on this
//! machine needs nothing; from anywhere else — or through any proxy, even
//! one on this machine — it takes an API key (which only an administrator
//! can make) or a console session.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::agent::runs::RunStatus;
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::http::transport::local_and_unproxied;

/// The metrics, in the OpenMetrics text format Prometheus reads.
#[utoipa::path(get, path = "/metrics", tag = "health", security((), ("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "OpenMetrics text", content_type = "application/openmetrics-text", body = String),
              (status = 401, description = "Not from this machine, and no valid API key or session", body = crate::http::openapi::ErrorBody)))]
pub async fn metrics(State(state): State<AppState>, mut parts: Parts) -> Result<Response, ApiError> {
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    if !local_and_unproxied(peer, &parts.headers) {
        Caller::from_request_parts(&mut parts, &state).await?;
    }
    // The shared gauges group tables that grow with use: scrapes that
    // arrive together share one rendering.
    let svc = state.services().clone();
    let text = state
        .metrics_read
        .get(|| async move {
            let runs: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
            svc.caps.metrics().render(&svc.db, &svc.ledger, svc.domain.tasks(), &runs).await.map_err(|e| e.to_string())
        })
        .await
        .map_err(ApiError::internal)?;
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, content_type)], text).into_response())
}
