//! A notification target on loopback, answering as the real one does: a
//! webhook (any 2xx) or an ntfy server (a published message's JSON; 429
//! `limit reached` with `Retry-After` when rate limited). It records each
//! request (path, headers, JSON body) and answers a status tests queue up,
//! then 200.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::any;
use serde_json::{Value, json};

/// One request the target received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Shared {
    ntfy: bool,
    received: Mutex<Vec<Received>>,
    answers: Mutex<VecDeque<u16>>,
}

/// A running target.
pub struct MockNotify {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockNotify {
    /// A generic webhook.
    pub async fn webhook() -> MockNotify {
        MockNotify::start(false).await
    }

    /// An ntfy server.
    pub async fn ntfy() -> MockNotify {
        MockNotify::start(true).await
    }

    async fn start(ntfy: bool) -> MockNotify {
        let shared = Arc::new(Shared { ntfy, ..Shared::default() });
        let app = Router::new().fallback(any(receive)).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockNotify { addr, shared }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answers the next requests with `statuses`, in order.
    pub fn answer(&self, statuses: &[u16]) {
        self.shared.answers.lock().unwrap().extend(statuses);
    }

    /// What it received, in order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

async fn receive(State(s): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> impl IntoResponse {
    let headers: Vec<(String, String)> =
        headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string())).collect();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    s.received.lock().unwrap().push(Received { path: uri.path().to_string(), headers, body: body.clone() });
    let status = s.answers.lock().unwrap().pop_front().unwrap_or(200);
    let code = StatusCode::from_u16(status).unwrap();
    match (s.ntfy, status) {
        (true, 429) => {
            (code, [("Retry-After", "30")], json!({"code": 42901, "http": 429, "error": "limit reached"}).to_string())
                .into_response()
        }
        (true, 200) => {
            let message = json!({"id": "sPs71M8A2T", "time": 1, "event": "message", "topic": body["topic"],
                "title": body["title"], "message": body["message"]});
            (code, message.to_string()).into_response()
        }
        _ => (code, String::new()).into_response(),
    }
}
