//! A model API on loopback that replays recorded-shape answers: a queue of
//! replies (an error status with `Retry-After`, or a body streamed in the
//! exact byte chunks given — so a test can split a UTF-8 character or end
//! the stream early, or a whole JSON answer), and a record of every request
//! with its headers. Requests the real APIs refuse are refused with a 400
//! in the provider's error shape (`llm_rules`), using up no reply.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;

/// One answer, used once, in order.
#[derive(Debug, Clone)]
pub enum Reply {
    Status {
        code: u16,
        retry_after: Option<u64>,
        body: String,
    },
    /// `text/event-stream` sent in exactly these chunks, then the body ends.
    Stream(Vec<Vec<u8>>),
    /// These chunks, then nothing: the connection stays open until the
    /// client lets go of it (counted in [`MockLlm::disconnects`]).
    Hang(Vec<Vec<u8>>),
    /// These chunks, then the connection is dropped mid-body (no clean end).
    Break(Vec<Vec<u8>>),
    /// No answer at all: the request is read and the server says nothing.
    Silent,
    /// One whole JSON answer (`application/json`), as servers that do not
    /// stream send.
    Json(Value),
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    disconnects: std::sync::atomic::AtomicUsize,
}

/// Counts a hanging answer's end when the server drops its body.
struct OnDrop(Arc<Shared>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.disconnects.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

pub struct MockLlm {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockLlm {
    pub async fn start(replies: Vec<Reply>) -> MockLlm {
        let shared = Arc::new(Shared { replies: Mutex::new(replies.into()), ..Shared::default() });
        let app = Router::new().route("/{*path}", post(answer)).with_state(shared.clone());
        let addr = crate::loopback::serve(app).await;
        MockLlm { addr, shared }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Hanging answers whose client went away.
    pub fn disconnects(&self) -> usize {
        self.shared.disconnects.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }
}

/// Server-Sent Events text for `(event, data)` pairs.
pub fn sse(events: &[(&str, Value)]) -> Vec<u8> {
    let mut out = String::new();
    for (name, data) in events {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    out.into_bytes()
}

async fn answer(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let recorded = Recorded {
        path: uri.path().to_string(),
        headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string())).collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    // A request the real API would refuse is refused here the same way,
    // and uses up no reply.
    let refusal = if recorded.path.ends_with("/messages") {
        crate::llm_rules::anthropic(&recorded.body)
            .err()
            .map(|m| serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": m}}))
    } else if recorded.path.ends_with("/chat/completions") {
        crate::llm_rules::openai(&recorded.body).err().map(|m| {
            serde_json::json!({"error": {"message": m, "type": "invalid_request_error", "param": null, "code": null}})
        })
    } else {
        None
    };
    shared.requests.lock().unwrap().push(recorded);
    if let Some(error) = refusal {
        return (StatusCode::BAD_REQUEST, [("content-type", "application/json")], error.to_string()).into_response();
    }
    let reply = shared.replies.lock().unwrap().pop_front();
    match reply {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "no reply queued").into_response(),
        Some(Reply::Status { code, retry_after, body }) => {
            let mut resp = (StatusCode::from_u16(code).unwrap(), body).into_response();
            if let Some(after) = retry_after {
                resp.headers_mut().insert("retry-after", after.to_string().parse().unwrap());
            }
            resp
        }
        Some(Reply::Stream(chunks)) => {
            let stream =
                futures_util::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Bytes::from(c))));
            ([("content-type", "text/event-stream")], Body::from_stream(stream)).into_response()
        }
        Some(Reply::Silent) => std::future::pending().await,
        Some(Reply::Json(value)) => ([("content-type", "application/json")], value.to_string()).into_response(),
        Some(Reply::Break(chunks)) => {
            let pieces =
                futures_util::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Bytes::from(c))));
            // Long enough for the head and the chunks to reach the client first.
            let broken = futures_util::stream::once(async {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "dropped"))
            });
            let stream = futures_util::StreamExt::chain(pieces, broken);
            ([("content-type", "text/event-stream")], Body::from_stream(stream)).into_response()
        }
        Some(Reply::Hang(chunks)) => {
            let guard = OnDrop(shared.clone());
            let queue: VecDeque<Vec<u8>> = chunks.into();
            let stream = futures_util::stream::unfold((queue, guard), |(mut queue, guard)| async move {
                match queue.pop_front() {
                    Some(chunk) => Some((Ok::<_, std::io::Error>(Bytes::from(chunk)), (queue, guard))),
                    None => {
                        // Held open; dropping this future (the client left) drops the guard.
                        let _guard = guard;
                        std::future::pending::<()>().await;
                        None
                    }
                }
            });
            ([("content-type", "text/event-stream")], Body::from_stream(stream)).into_response()
        }
    }
}
