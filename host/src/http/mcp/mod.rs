//! Capstan as a Model Context Protocol server at `/mcp`, over streamable
//! HTTP, with the protocol's own Rust SDK (`rmcp`) doing the protocol:
//! the current revision per request without a session, and the older
//! ones (2025-11-25 and before) through `initialize` with a session, so
//! they can be told when the tools change.
//!
//! [`gate`] decides who may reach it (Host, Origin, an API key);
//! [`tools`] is each capability as a tool for that key; [`resources`]
//! the read-only resources (decisions waiting, the library, the audit
//! verdict); [`server`]
//! answers `tools/list` and `tools/call` through the one invoke path;
//! [`denied`] says what would allow a call refused for want of authority,
//! and asks for the approval of a plan it acted on; [`sessions`] caps the
//! sessions one key holds.
//! The endpoint is not part of the OpenAPI document: its contract is the
//! protocol's.

pub mod denied;
pub mod gate;
pub mod resources;
pub mod server;
pub mod sessions;
pub mod tools;

use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::AppState;

/// The endpoint's path.
pub const PATH: &str = "/mcp";

/// The `/mcp` route with its gate. Open streams end when the server
/// starts shutting down (`AppState::closing`).
pub fn routes(state: AppState, reach: gate::Reach) -> Router<AppState> {
    let stop = CancellationToken::new();
    if let Some(mut closing) = state.closing.clone() {
        let stop = stop.clone();
        tokio::spawn(async move {
            let _ = closing.wait_for(|c| *c).await;
            stop.cancel();
        });
    }
    let server = server::CapstanMcp::new(state.app.clone());
    server.spawn_list_changed(stop.clone());
    // Host and Origin are the gate's to check, with the operator's lists.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(super::BODY_LIMIT)
        .with_json_response(true)
        .with_cancellation_token(stop);
    let sessions = Arc::new(LocalSessionManager::default());
    let count = Arc::new(sessions::SessionCount::new(sessions.clone()));
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    let gate = axum::middleware::from_fn_with_state((state, reach, count), gate::check);
    Router::new().route_service(PATH, service).layer(gate)
}
