//! The HTTP API under `/api/v1`: API-key and console-session
//! authentication, the capability list, the invoke endpoint (the one invoke
//! path), automation grants, approvals, settings, the audit log, agent runs,
//! and the OpenAPI document built from the handlers; and the operator
//! console at `/` (`console/`).
//! Every error is JSON `{"error":{"code","message"}}`; bodies over 1 MiB,
//! malformed JSON, wrong types and unknown fields are 4xx and change
//! nothing.

pub mod auth;
pub mod authority;
mod bodies;
mod console;
pub mod error;
pub mod extract;
mod headers;
pub mod keys;
pub mod mcp;
pub mod openapi;
mod routes;
pub mod schema;
pub mod session;
mod shared_read;
pub mod signin;
pub mod transport;

use std::future::{Future, IntoFuture};
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::{Json, Router};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::agent::AgentRuntime;
use crate::app::App;
use crate::pipeline::{Capabilities, Services};
use error::ApiError;

/// Largest request body accepted.
pub(crate) const BODY_LIMIT: usize = 1 << 20;

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    pub app: Arc<App>,
    /// Proxies whose word on HTTPS is believed (`transport`).
    pub trusted_proxies: Arc<[crate::config::TrustedProxy]>,
    /// Origins besides the request's own host that console pages may be
    /// served from (`authority`), lower case, as `scheme://host[:port]`.
    pub public_origins: Arc<[String]>,
    /// API keys as the database said a moment ago.
    pub keys: Arc<keys::KeyCache>,
    /// Console sign-in: its password checks and throttle.
    pub signin: Arc<signin::SignIn>,
    /// True once the server is shutting down (`HttpOptions::closing`).
    pub closing: Option<tokio::sync::watch::Receiver<bool>>,
    /// Live processes and the task queue, read once for the health checks
    /// that arrive together.
    pub health_read: Arc<shared_read::SharedRead<(i64, crate::tasks::QueueState)>>,
    /// The metrics text, rendered once for the scrapes that arrive together.
    pub metrics_read: Arc<shared_read::SharedRead<String>>,
}

impl AppState {
    /// Resolves when the server starts shutting down; never, for a router
    /// built without a shutdown signal.
    pub fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let closing = self.closing.clone();
        async move {
            let Some(mut closing) = closing else { return std::future::pending().await };
            if closing.wait_for(|c| *c).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

impl AppState {
    /// The one invoke path.
    pub fn caps(&self) -> &Arc<Capabilities> {
        self.app.caps()
    }

    /// The invoke path and the stores.
    pub fn services(&self) -> &Services {
        self.app.services()
    }

    /// Starts, messages and aborts runs; the loop itself runs on a worker.
    pub fn agent(&self) -> &Arc<AgentRuntime> {
        self.app.agent()
    }
}

/// How the server is exposed, from the configuration.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    pub trusted_proxies: Vec<crate::config::TrustedProxy>,
    pub public_origins: Vec<String>,
    /// Who besides loopback may reach `/mcp` (`[mcp]`).
    pub mcp: crate::config::McpConfig,
    /// Turns true when the server is shutting down; open event streams end
    /// then. `serve` sets it; a router built without one never closes them.
    pub closing: Option<tokio::sync::watch::Receiver<bool>>,
}

/// How long `serve` waits, once told to stop, for requests in progress to
/// finish before it closes their connections anyway.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Every API operation, with the document built from the same handlers.
fn operations() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(routes::health::health))
        .routes(routes!(routes::metrics::metrics))
        .routes(routes!(routes::capabilities::list))
        .routes(routes!(routes::capabilities::invoke))
        .routes(routes!(routes::plugins::accept))
        .routes(routes!(routes::plugins::put, routes::plugins::remove))
        .routes(routes!(routes::skills::list))
        .routes(routes!(routes::skills::get, routes::skills::put))
        .routes(routes!(routes::audit::list))
        .routes(routes!(routes::audit::verify))
        .routes(routes!(routes::events::list))
        .routes(routes!(routes::grants::list, routes::grants::create))
        .routes(routes!(routes::grants::update))
        .routes(routes!(routes::approvals::list, routes::approvals::request))
        .routes(routes!(routes::approvals::get, routes::approvals::change))
        .routes(routes!(routes::decisions::list))
        .routes(routes!(routes::decisions::get, routes::decisions::answer))
        .routes(routes!(routes::settings::get, routes::settings::update))
        .routes(routes!(routes::library::library))
        .routes(routes!(routes::titles::add))
        .routes(routes!(routes::titles::change, routes::titles::remove))
        .routes(routes!(routes::policies::list))
        .routes(routes!(routes::blocklist::list, routes::blocklist::block))
        .routes(routes!(routes::blocklist::unblock))
        .routes(routes!(routes::notifications::get))
        .routes(routes!(routes::policies::put))
        .routes(routes!(routes::episodes::list))
        .routes(routes!(routes::episodes::change))
        .routes(routes!(routes::episodes::search))
        .routes(routes!(routes::calendar::calendar))
        .routes(routes!(routes::setup::get))
        .routes(routes!(routes::setup::put_service, routes::setup::remove_service))
        .routes(routes!(routes::setup::test_service))
        .routes(routes!(routes::setup::put_root, routes::setup::remove_root))
        .routes(routes!(routes::setup::test_roots))
        .routes(routes!(routes::setup_mcp::put, routes::setup_mcp::remove))
        .routes(routes!(routes::setup_mcp::test))
        .routes(routes!(routes::setup::put_library))
        .routes(routes!(routes::acquisition::list, routes::acquisition::create))
        .routes(routes!(routes::library::artifacts))
        .routes(routes!(routes::library::artifact))
        .routes(routes!(routes::library::tasks))
        .routes(routes!(routes::library::task))
        .routes(routes!(routes::library::cancel))
        .routes(routes!(routes::library::retry))
        .routes(routes!(routes::session::login, routes::session::logout))
        .routes(routes!(routes::agent::start, routes::agent::list))
        .routes(routes!(routes::agent::get, routes::agent::delete))
        .routes(routes!(routes::agent::message))
        .routes(routes!(routes::agent::abort))
}

/// The routes and the OpenAPI document as served.
fn routes_and_document() -> (Router<AppState>, serde_json::Value) {
    let (api, doc) = operations().split_for_parts();
    (api, openapi::complete(serde_json::to_value(&doc).unwrap_or_default()))
}

/// The OpenAPI document as served.
#[cfg(test)]
pub fn document() -> serde_json::Value {
    routes_and_document().1
}

/// The API router, with its OpenAPI document built from the same handlers.
/// Layers, outermost first: timing, authority (`authority`: who may call,
/// before anything about the request is looked at), the body check
/// (`bodies`), the body limit, then the handler.
pub fn router(app: Arc<App>, options: HttpOptions) -> Router {
    let (api, doc) = routes_and_document();
    let doc = Arc::new(doc);
    let body_schemas = bodies::BodySchemas::from_document(&doc);
    let settings = app.settings().clone();
    let state = AppState {
        app,
        trusted_proxies: options.trusted_proxies.into(),
        public_origins: options.public_origins.into(),
        keys: Default::default(),
        signin: Default::default(),
        closing: options.closing,
        health_read: Default::default(),
        metrics_read: Default::default(),
    };
    let reach = mcp::gate::Reach::new(&options.mcp, &state.public_origins);
    api.route("/api/v1/openapi.json", get(move || async move { Json(doc.as_ref().clone()) }))
        .merge(console::routes(settings))
        .merge(mcp::routes(state.clone(), reach))
        .method_not_allowed_fallback(|| async {
            let message = "this endpoint does not take that method; the Allow header lists those it takes";
            ApiError::new(axum::http::StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", message)
        })
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(body_schemas, bodies::check))
        .layer(axum::middleware::from_fn_with_state(state.clone(), authority::check))
        .layer(axum::middleware::from_fn(headers::set))
        .layer(axum::middleware::from_fn_with_state(state.clone(), measure))
        .with_state(state)
}

/// Times each request into the metrics, by its route's template (never the
/// path itself, which a caller makes up) and a known method.
async fn measure(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let route = request.extensions().get::<axum::extract::MatchedPath>().map(|p| p.as_str().to_string());
    let method: &'static str = match request.method().as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        _ => "other",
    };
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let route = route.as_deref().unwrap_or("unmatched");
    state.caps().metrics().answered(method, route, response.status().as_u16(), started.elapsed());
    response
}

/// Serves the API on `listener` until `shutdown` resolves: then it takes
/// no new connections, ends the event streams it is sending, lets requests
/// in progress finish for up to [`SHUTDOWN_GRACE`], and returns. Each
/// request knows its peer's address, which `transport` needs.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    mut options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (close, closing) = tokio::sync::watch::channel(false);
    options.closing = Some(closing.clone());
    let service = router(app, options).into_make_service_with_connect_info::<std::net::SocketAddr>();
    let signal = async move {
        shutdown.await;
        tracing::info!("shutting down: taking no new connections and ending open event streams");
        let _ = close.send(true);
    };
    let server = axum::serve(listener, service).with_graceful_shutdown(signal).into_future();
    tokio::pin!(server);
    let mut told = closing;
    tokio::select! {
        served = &mut server => return served,
        _ = told.wait_for(|c| *c) => {}
    }
    match tokio::time::timeout(SHUTDOWN_GRACE, server).await {
        Ok(served) => served,
        Err(_) => {
            tracing::warn!(
                grace_s = SHUTDOWN_GRACE.as_secs(),
                "requests still open after the grace period; closing them"
            );
            Ok(())
        }
    }
}
