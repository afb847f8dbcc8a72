//! A notification target on loopback, answering as the real one does: a
//! webhook (any 2xx), an ntfy server (a published message's JSON; 429
//! `limit reached` with `Retry-After` when rate limited), Telegram's Bot
//! API (`/bot<token>/sendMessage`: `{"ok": true, "result": {...}}`, 401
//! `Unauthorized` for another token, 400 `chat not found` for a chat it
//! does not know, 429 with `parameters.retry_after`) or a Discord webhook
//! (`/api/webhooks/<id>/<token>`: 204, 401 `Invalid Webhook Token`, 404
//! `Unknown Webhook`, 429 with `retry_after` and `Retry-After`). It
//! records each request (path, headers, JSON body) and answers a status
//! tests queue up, else what the request earns.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
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

/// Which target it plays.
#[derive(Clone, Default)]
enum Flavor {
    #[default]
    Webhook,
    Ntfy,
    /// The bot's token and the chats it can write to.
    Telegram {
        token: String,
        chat: String,
    },
    /// The webhook's id and token.
    Discord {
        id: String,
        token: String,
    },
}

#[derive(Default)]
struct Shared {
    flavor: Flavor,
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
        MockNotify::start(Flavor::Webhook).await
    }

    /// An ntfy server.
    pub async fn ntfy() -> MockNotify {
        MockNotify::start(Flavor::Ntfy).await
    }

    /// Telegram's Bot API for one bot (`token`) that may write to `chat`.
    pub async fn telegram(token: &str, chat: &str) -> MockNotify {
        MockNotify::start(Flavor::Telegram { token: token.into(), chat: chat.into() }).await
    }

    /// Discord with one webhook, `/api/webhooks/<id>/<token>`.
    pub async fn discord(id: &str, token: &str) -> MockNotify {
        MockNotify::start(Flavor::Discord { id: id.into(), token: token.into() }).await
    }

    async fn start(flavor: Flavor) -> MockNotify {
        let shared = Arc::new(Shared { flavor, ..Shared::default() });
        let app = Router::new().fallback(any(receive)).with_state(shared.clone());
        let addr = crate::loopback::serve(app).await;
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

fn json_answer(status: u16, headers: &[(&'static str, &'static str)], body: Value) -> Response {
    let mut resp = (StatusCode::from_u16(status).unwrap(), body.to_string()).into_response();
    resp.headers_mut().insert("Content-Type", "application/json".parse().unwrap());
    for (k, v) in headers {
        resp.headers_mut().insert(*k, v.parse().unwrap());
    }
    resp
}

/// What Telegram's Bot API answers `sendMessage`.
fn telegram(token: &str, chat: &str, path: &str, queued: Option<u16>, body: &Value) -> Response {
    let refused = |code: u16, description: &str| {
        json_answer(code, &[], json!({"ok": false, "error_code": code, "description": description}))
    };
    let Some(rest) = path.strip_prefix("/bot").and_then(|r| r.strip_suffix("/sendMessage")) else {
        return refused(404, "Not Found");
    };
    if rest != token {
        return refused(401, "Unauthorized");
    }
    match queued {
        Some(429) => json_answer(
            429,
            &[],
            json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 5",
                "parameters": {"retry_after": 5}}),
        ),
        Some(code) if code >= 300 => refused(code, "Internal Server Error"),
        _ if body["chat_id"].as_str() != Some(chat) => refused(400, "Bad Request: chat not found"),
        _ => json_answer(
            200,
            &[],
            json!({"ok": true, "result": {"message_id": 7, "chat": {"id": chat}, "date": 1, "text": body["text"]}}),
        ),
    }
}

/// What a Discord webhook answers an execute.
fn discord(id: &str, token: &str, path: &str, queued: Option<u16>) -> Response {
    let Some(rest) = path.strip_prefix("/api/webhooks/") else {
        return json_answer(404, &[], json!({"message": "404: Not Found", "code": 0}));
    };
    let (hook, secret) = rest.split_once('/').unwrap_or((rest, ""));
    if hook != id {
        return json_answer(404, &[], json!({"message": "Unknown Webhook", "code": 10015}));
    }
    if secret != token {
        return json_answer(401, &[], json!({"message": "Invalid Webhook Token", "code": 50027}));
    }
    match queued {
        Some(429) => json_answer(
            429,
            &[("Retry-After", "1")],
            json!({"message": "You are being rate limited.", "retry_after": 0.75, "global": false}),
        ),
        Some(code) if code >= 300 => json_answer(code, &[], json!({"message": "Internal Server Error", "code": 0})),
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

async fn receive(State(s): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let headers: Vec<(String, String)> =
        headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string())).collect();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_string();
    s.received.lock().unwrap().push(Received { path: path.clone(), headers, body: body.clone() });
    let queued = s.answers.lock().unwrap().pop_front();
    match &s.flavor {
        Flavor::Telegram { token, chat } => return telegram(token, chat, &path, queued, &body),
        Flavor::Discord { id, token } => return discord(id, token, &path, queued),
        _ => {}
    }
    let status = queued.unwrap_or(200);
    let code = StatusCode::from_u16(status).unwrap();
    match (matches!(s.flavor, Flavor::Ntfy), status) {
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
