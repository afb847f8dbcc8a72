//! A loopback HTTP proxy in front of a real server: it forwards every
//! request as it came (method, path, query, headers, body) and streams the
//! answer back as it goes, counts requests by path, and can withhold the
//! answer to one path — the server has acted, the caller never hears back,
//! which is how a process dies between an effect and its record — or
//! refuse a path: its open answers end and new requests get 502 without
//! reaching the server, as a proxy that drops long-lived streams does.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

struct Shared {
    upstream: String,
    client: reqwest::Client,
    counts: Mutex<BTreeMap<String, usize>>,
    /// Path whose answer is withheld while `holding` is set.
    held_path: Mutex<Option<String>>,
    holding: AtomicBool,
    /// Paths refused now; answers to them in flight end when they are.
    refused: tokio::sync::watch::Sender<BTreeSet<String>>,
    /// Headers added to every request (a client that cannot send them).
    added: Vec<(String, String)>,
    /// Whether `Host`, `Origin` and `Referer` go through as the client sent them.
    as_sent: bool,
}

pub struct Proxy {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Proxy {
    pub async fn start(upstream: &str) -> Proxy {
        Proxy::start_with(upstream, Vec::new(), false).await
    }

    /// A proxy that adds `added` to every request, and with `as_sent`
    /// passes `Host`, `Origin` and `Referer` on as the client sent them —
    /// for a third-party client that has no way to send a key.
    pub async fn start_with(upstream: &str, added: Vec<(String, String)>, as_sent: bool) -> Proxy {
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            client: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
            counts: Mutex::new(BTreeMap::new()),
            held_path: Mutex::new(None),
            holding: AtomicBool::new(false),
            refused: tokio::sync::watch::Sender::new(BTreeSet::new()),
            added,
            as_sent,
        });
        let app = Router::new().route("/", any(forward)).route("/{*path}", any(forward)).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Proxy { addr, shared }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests to `path` so far (forwarded, whether answered or not).
    pub fn count(&self, path: &str) -> usize {
        self.shared.counts.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// From now on, requests to `path` reach the server but get no answer.
    pub fn withhold(&self, path: &str) {
        *self.shared.held_path.lock().unwrap() = Some(path.to_string());
        self.shared.holding.store(true, Ordering::SeqCst);
    }

    /// Answers flow again.
    pub fn release(&self) {
        self.shared.holding.store(false, Ordering::SeqCst);
    }

    /// From now on, answers to `path` in flight end where they are, and
    /// requests to it get 502 without reaching the server.
    pub fn refuse(&self, path: &str) {
        self.shared.refused.send_modify(|paths| {
            paths.insert(path.to_string());
        });
    }

    /// Requests to `path` are forwarded again.
    pub fn admit(&self, path: &str) {
        self.shared.refused.send_modify(|paths| {
            paths.remove(path);
        });
    }
}

async fn forward(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    if shared.refused.borrow().contains(&path) {
        *shared.counts.lock().unwrap().entry(path).or_default() += 1;
        return (StatusCode::BAD_GATEWAY, "refused by the proxy").into_response();
    }
    let url = format!("{}{}", shared.upstream, uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
    let mut request = shared.client.request(method, url).body(body);
    // The server sees a request for itself: qBittorrent refuses a login whose
    // Origin or Referer names another host.
    let own = |n: &str| match n {
        "content-length" => true,
        "host" | "origin" | "referer" => !shared.as_sent,
        _ => false,
    };
    for (name, value) in headers.iter().filter(|(n, _)| !own(n.as_str())) {
        request = request.header(name, value);
    }
    for (name, value) in &shared.added {
        request = request.header(name, value);
    }
    let answer = request.send().await;
    *shared.counts.lock().unwrap().entry(path.clone()).or_default() += 1;
    let held =
        shared.holding.load(Ordering::SeqCst) && shared.held_path.lock().unwrap().as_deref() == Some(path.as_str());
    if held {
        std::future::pending::<()>().await;
    }
    match answer {
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
        Ok(resp) => {
            let status = resp.status();
            let headers = resp.headers().clone();
            let mut out = Response::builder().status(status);
            for (name, value) in
                headers.iter().filter(|(n, _)| !matches!(n.as_str(), "content-length" | "transfer-encoding"))
            {
                out = out.header(name, value);
            }
            // Chunk by chunk, so a stream stays one; it ends when its path is refused.
            let chunks = futures_util::stream::unfold(resp, |mut resp| async move {
                match resp.chunk().await {
                    Ok(Some(chunk)) => Some((Ok::<Bytes, std::io::Error>(chunk), resp)),
                    _ => None,
                }
            });
            let mut refused = shared.refused.subscribe();
            let cut = async move {
                let _ = refused.wait_for(|paths| paths.contains(&path)).await;
            };
            out.body(Body::from_stream(futures_util::StreamExt::take_until(chunks, Box::pin(cut)))).unwrap()
        }
    }
}
