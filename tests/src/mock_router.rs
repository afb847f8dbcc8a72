//! A loopback server that routes the way common servers do — it decodes
//! percent-escapes (twice, as a proxy in front of an application would),
//! treats `\` as `/`, drops `;` path parameters, merges `//` and resolves
//! dot segments — and records, for every request, the raw path it was sent
//! and the path it routed to. Every answer reflects the request back
//! (headers, query, body), in the encoding the path asks for, so a test can
//! look for a credential in everything a component got back.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// One request as it reached the server.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// The path on the request line, as sent.
    pub raw_path: String,
    /// Where the server routed it.
    pub routed: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// What the login takes, and the session it hands out.
pub const USER: &str = "operator";
pub const SESSION: &str = "sess-7f3a9c1e55d2";

#[derive(Default)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    password: Mutex<String>,
}

pub struct MockRouter {
    pub addr: std::net::SocketAddr,
    shared: Arc<Shared>,
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// The path a lenient server routes `raw` to.
pub fn route(raw: &str) -> String {
    let once = decode(raw);
    let twice = decode(&once).replace('\\', "/");
    let mut out: Vec<&str> = Vec::new();
    for seg in twice.split('/') {
        let seg = seg.split(';').next().unwrap_or("");
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    format!("/{}", out.join("/"))
}

impl MockRouter {
    /// Starts the server; the login accepts `password`.
    pub async fn start(password: &str) -> MockRouter {
        let shared = Arc::new(Shared::default());
        *shared.password.lock().unwrap() = password.to_string();
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        let addr = crate::loopback::serve(app).await;
        MockRouter { addr, shared }
    }

    /// The base URL services are configured with: a path below the root,
    /// so leaving it is visible.
    pub fn base_url(&self) -> String {
        format!("http://{}/svc", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.shared.seen.lock().unwrap().clear();
    }
}

fn dump(seen: &Seen) -> String {
    let mut text = format!("{} {}?{}\n", seen.method, seen.raw_path, seen.query);
    for (k, v) in &seen.headers {
        text.push_str(&format!("{k}: {v}\n"));
    }
    text.push('\n');
    text.push_str(&seen.body);
    text
}

fn encoded(how: &str, text: &str) -> String {
    match how {
        "base64" => STANDARD.encode(text),
        "hex" => hex::encode(text),
        "url" => percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string(),
        "form" => form_urlencoded::byte_serialize(text.as_bytes()).collect(),
        "json" => serde_json::to_string(text).unwrap(),
        "upper" => text.to_uppercase(),
        "html" => text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;"),
        _ => text.to_string(),
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body: Bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let raw_path = parts.uri.path().to_string();
    let seen = Seen {
        method: parts.method.to_string(),
        routed: route(&raw_path),
        raw_path,
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    shared.seen.lock().unwrap().push(seen.clone());
    let routed = seen.routed.to_lowercase();
    let password = shared.password.lock().unwrap().clone();
    if routed == "/svc/login" {
        let form: Vec<(String, String)> = form_urlencoded::parse(&body).into_owned().collect();
        let ok = form.iter().any(|(k, v)| k == "username" && v == USER)
            && form.iter().any(|(k, v)| k == "password" && *v == password);
        return if ok {
            (StatusCode::OK, [("set-cookie", format!("SID={SESSION}; HttpOnly; Path=/"))], "Ok.").into_response()
        } else {
            // Quotes what it was sent, the password with it, as some do.
            (StatusCode::OK, format!("Fails. You sent: {}", seen.body)).into_response()
        };
    }
    if routed == "/svc/set-cookie" {
        let mut headers = HeaderMap::new();
        headers.append("set-cookie", HeaderValue::from_static("SID=attacker-chosen; Path=/"));
        headers.append("set-cookie", HeaderValue::from_static("evil=1; Path=/"));
        return (StatusCode::OK, headers, "cookies set").into_response();
    }
    if routed == "/svc/gzip" {
        return (StatusCode::OK, [("content-encoding", "gzip")], dump(&seen)).into_response();
    }
    let how = routed.strip_prefix("/svc/reflect/").unwrap_or("json");
    if how == "binary" {
        // A file that is not text (a .torrent's piece hashes), quoting the
        // request in the middle, as a tracker URL with a key inside would.
        let mut file = b"d8:announce".to_vec();
        file.extend_from_slice(&[0xff, 0xfe, 0x00]);
        file.extend_from_slice(dump(&seen).as_bytes());
        file.push(b'e');
        return (StatusCode::OK, [("content-type", "application/x-bittorrent")], file).into_response();
    }
    let mut headers = HeaderMap::new();
    for (k, v) in &seen.headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(format!("x-echo-{k}")), HeaderValue::from_str(v)) {
            headers.append(name, value);
        }
    }
    if let Ok(value) = HeaderValue::from_str(&format!("/svc/next?{}", seen.query)) {
        headers.insert("location", value);
    }
    (StatusCode::OK, headers, encoded(how, &dump(&seen))).into_response()
}
