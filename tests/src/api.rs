//! The HTTP API on a loopback port for the suites, and a console login.

use std::sync::Arc;

use capstan::app::App;
use serde_json::{Value, json};

/// Serves the API for `app` on a free loopback port; returns `http://.../api/v1`.
pub async fn serve(app: Arc<App>) -> String {
    serve_with(app, Default::default()).await
}

/// [`serve`] with these options (trusted proxies, public origins).
pub async fn serve_with(app: Arc<App>, options: capstan::http::HttpOptions) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(capstan::http::serve(listener, app, options, std::future::pending()));
    format!("http://{addr}/api/v1")
}

/// Sets administrator `name`'s password, logs in, and returns the session
/// cookie and its CSRF token.
pub async fn login(db: &capstan::store::Db, http: &reqwest::Client, base: &str, name: &str) -> (String, String) {
    capstan::http::session::set_password(db, name, "correct horse battery").await.unwrap();
    let resp = http
        .post(format!("{base}/session"))
        .json(&json!({"name": name, "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let csrf = resp.json::<Value>().await.unwrap()["csrfToken"].as_str().unwrap().to_string();
    (cookie, csrf)
}

/// The API under one base address, as a caller with one key (or none):
/// the one HTTP client of the suites. Each call answers the status and the
/// JSON body (`null` when there is none).
#[derive(Clone)]
pub struct Api {
    /// `http://127.0.0.1:<port>/api/v1`
    pub base: String,
    http: reqwest::Client,
    key: Option<String>,
    /// A console session: its cookie and CSRF token.
    session: Option<(String, String)>,
}

impl Api {
    /// The API at `base`, called without a key.
    pub fn new(base: &str) -> Api {
        Api { base: base.to_string(), http: reqwest::Client::new(), key: None, session: None }
    }

    /// The same API called by administrator `name`, signed in to the
    /// console (their password set first): the session cookie on every
    /// call, the CSRF token too.
    pub async fn signed_in(&self, db: &capstan::store::Db, name: &str) -> Api {
        let session = login(db, &self.http, &self.base, name).await;
        Api { key: None, session: Some(session), ..self.clone() }
    }

    /// The same API called with `key`.
    pub fn with_key(&self, key: &str) -> Api {
        Api { key: Some(key.to_string()), ..self.clone() }
    }

    /// A request to `path`, with the key, for what the helpers below do not
    /// cover (headers, other bodies).
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        if let Some((cookie, csrf)) = &self.session {
            request = request.header("cookie", cookie).header("x-csrf-token", csrf);
        }
        request
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.answer(self.request(reqwest::Method::GET, path)).await
    }

    /// The body of a GET that must answer 200.
    pub async fn json(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// A POST with `body` as JSON; `Value::Null` sends no body at all.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, body).await
    }

    /// `method` with `body` as JSON; `Value::Null` sends no body at all.
    pub async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        let request = self.request(method, path);
        self.answer(if body.is_null() { request } else { request.json(&body) }).await
    }

    /// `PUT` of raw `bytes` sent as `content_type` (a plugin upload).
    pub async fn put_bytes(&self, path: &str, content_type: &str, bytes: Vec<u8>) -> (u16, Value) {
        let request = self.request(reqwest::Method::PUT, path).header("content-type", content_type).body(bytes);
        self.answer(request).await
    }

    /// Sends `request` and holds its answer to the OpenAPI document.
    async fn answer(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let request = request.build().unwrap();
        let (method, url) = (request.method().to_string(), request.url().clone());
        let resp = self.http.execute(request).await.unwrap();
        let status = resp.status().as_u16();
        let body = resp.json().await.unwrap_or(Value::Null);
        let origin = url.origin().ascii_serialization();
        let document = crate::openapi::Document::of(&origin).await;
        if let Some(mismatch) = document.mismatch(&method, url.path(), status, &body) {
            panic!("{mismatch}\nthe body: {body}");
        }
        (status, body)
    }
}
