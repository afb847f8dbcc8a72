//! The HTTP API on a loopback port for the suites, and a console login.

use std::sync::Arc;

use capstan::pipeline::Capabilities;
use serde_json::{Value, json};

/// Serves the API for `caps` on a free loopback port; returns `http://.../api/v1`.
pub async fn serve(caps: Arc<Capabilities>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(capstan::http::serve(listener, caps, std::future::pending()));
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
