//! A real HTTP server on loopback that plays an outbound service: it echoes
//! what it received (at `/echo`, and under `/tg/` and `/api/webhooks/`
//! for credentials in the path), so tests can see injected credentials;
//! it counts writes, has a form login with a session cookie, large bodies and a slow answer,
//! and can hold a write's answer back.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::{any, get, post};
use axum::{Json, Router};
use serde_json::json;

/// Counters the tests read.
#[derive(Default)]
pub struct Counters {
    pub writes: AtomicUsize,
    pub logins: AtomicUsize,
    pub requests: AtomicUsize,
    /// The path of each echoed request, as the server saw it.
    pub paths: std::sync::Mutex<Vec<String>>,
    /// Idempotency keys whose write arrived, in order.
    pub keys: std::sync::Mutex<Vec<String>>,
    /// When set, the next count answers `crash: true` (and clears it).
    pub crash_next: std::sync::atomic::AtomicBool,
    /// While set, a count is recorded but not answered: the caller is left
    /// waiting, as a process that dies mid-call would be.
    pub hold_answers: std::sync::atomic::AtomicBool,
    /// While set, asking whether a count happened answers 503, so a
    /// component's `verify` cannot tell.
    pub status_down: std::sync::atomic::AtomicBool,
}

/// A running mock service.
pub struct MockService {
    pub addr: SocketAddr,
    pub counters: Arc<Counters>,
}

/// The session cookie value the login hands out.
pub const SESSION: &str = "SID=mock-session";

impl MockService {
    /// Starts the server on 127.0.0.1 with a free port.
    pub async fn start() -> MockService {
        let counters = Arc::new(Counters::default());
        let app = Router::new()
            .route("/echo", any(echo))
            .route("/count", post(count))
            .route("/count/status", get(count_status))
            .route("/login", post(login))
            .route("/protected", get(protected))
            .route("/big", get(big))
            .route("/long", get(long))
            .route("/slow", get(slow))
            .route("/tg/{*rest}", any(echo))
            .route("/api/webhooks/{*rest}", any(echo))
            .with_state(counters.clone());
        let addr = crate::loopback::serve(app).await;
        MockService { addr, counters }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn writes(&self) -> usize {
        self.counters.writes.load(Ordering::SeqCst)
    }

    pub fn logins(&self) -> usize {
        self.counters.logins.load(Ordering::SeqCst)
    }
}

async fn echo(
    State(c): State<Arc<Counters>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> impl IntoResponse {
    c.requests.fetch_add(1, Ordering::SeqCst);
    c.paths.lock().unwrap().push(uri.path().to_string());
    let headers: BTreeMap<String, String> =
        headers.iter().map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect();
    Json(json!({ "method": method.as_str(), "path": uri.path(), "query": query, "headers": headers }))
}

async fn count(State(c): State<Arc<Counters>>, Query(q): Query<BTreeMap<String, String>>) -> impl IntoResponse {
    let n = c.writes.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(key) = q.get("key") {
        c.keys.lock().unwrap().push(key.clone());
    }
    let crash = c.crash_next.swap(false, Ordering::SeqCst);
    while c.hold_answers.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Json(json!({ "count": n, "crash": crash }))
}

async fn count_status(State(c): State<Arc<Counters>>, Query(q): Query<BTreeMap<String, String>>) -> impl IntoResponse {
    if c.status_down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": "down"})));
    }
    let key = q.get("key").cloned().unwrap_or_default();
    let done = c.keys.lock().unwrap().contains(&key);
    (StatusCode::OK, Json(json!({ "done": done, "count": c.writes.load(Ordering::SeqCst) })))
}

async fn login(State(c): State<Arc<Counters>>, Form(form): Form<BTreeMap<String, String>>) -> impl IntoResponse {
    c.logins.fetch_add(1, Ordering::SeqCst);
    let ok = form.get("username").map(String::as_str) == Some("admin")
        && form.get("password").map(String::as_str) == Some("secret");
    if ok {
        (StatusCode::OK, [("set-cookie", format!("{SESSION}; HttpOnly; path=/"))], "Ok.").into_response()
    } else {
        (StatusCode::FORBIDDEN, "Fails.").into_response()
    }
}

async fn protected(headers: HeaderMap) -> impl IntoResponse {
    let cookie = headers.get("cookie").and_then(|v| v.to_str().ok()).unwrap_or("");
    if cookie.contains(SESSION) {
        (StatusCode::OK, "inside").into_response()
    } else {
        (StatusCode::FORBIDDEN, "Forbidden").into_response()
    }
}

/// How the body of `/long` ends: words only the service says.
pub const LONG_TAIL: &str = "END-OF-LONG-BODY-7c1e";

/// `bytes` letters, then [`LONG_TAIL`].
async fn long(Query(q): Query<BTreeMap<String, String>>) -> impl IntoResponse {
    let n: usize = q.get("bytes").and_then(|b| b.parse().ok()).unwrap_or(10_000);
    format!("{}{LONG_TAIL}", "l".repeat(n))
}

async fn big(Query(q): Query<BTreeMap<String, String>>) -> impl IntoResponse {
    let n: usize = q.get("bytes").and_then(|b| b.parse().ok()).unwrap_or(1 << 20);
    "y".repeat(n)
}

async fn slow() -> impl IntoResponse {
    tokio::time::sleep(Duration::from_secs(5)).await;
    "late"
}
