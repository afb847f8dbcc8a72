//! The HTTP API on a loopback port for the suites, and a console login.

use std::sync::Arc;

use capstan::app::App;
use serde_json::{Value, json};

/// Serves the API for `app` on a free loopback port; returns `http://.../api/v1`.
pub async fn serve(app: Arc<App>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(capstan::http::serve(listener, app, Default::default(), std::future::pending()));
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

/// The API under one base address, called with a bearer key; each call
/// answers the status and the JSON body (`null` when there is none).
pub struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    pub fn new(base: &str) -> Api {
        Api { base: base.to_string(), http: reqwest::Client::new() }
    }

    pub async fn get(&self, key: &str, path: &str) -> (u16, Value) {
        Self::answer(self.http.get(format!("{}{path}", self.base)).bearer_auth(key)).await
    }

    /// A POST with `body` as JSON; `Value::Null` sends no body at all.
    pub async fn post(&self, key: &str, path: &str, body: Value) -> (u16, Value) {
        let request = self.http.post(format!("{}{path}", self.base)).bearer_auth(key);
        Self::answer(if body.is_null() { request } else { request.json(&body) }).await
    }

    async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
        let resp = request.send().await.unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
    }
}
