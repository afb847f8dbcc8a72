//! Authority comes before anything else about a request: every operation
//! of the served document, called by each kind of caller with a body it
//! cannot take, answers 401 or 403 to a caller without the authority the
//! document declares (`x-capstan-authority`) — never a 404 or a 422 that
//! would tell it what lies behind — and never 5xx to anyone. Bodies are
//! JSON as the document lists (`+json` and other types are 415), changes
//! a browser says come from another site are refused, and answers carry
//! the headers that keep them out of caches, frames and sniffing.

use capstan::runtime::EffectClass;
use capstan_tests::api::{Api, serve};
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::ledger::env;

const RANK: [&str; 4] = ["read", "preview", "propose", "execute"];

/// Whether a caller holding `held` ("none", a scope, "console") may call
/// an operation asking `needs`.
fn may(held: &str, needs: &str) -> bool {
    match (held, needs) {
        (_, "none") | ("console", _) => true,
        ("none", _) | (_, "console") => false,
        (scope, class) => {
            let rank = |s: &str| RANK.iter().position(|r| *r == s).unwrap();
            rank(scope) >= rank(class)
        }
    }
}

fn method(name: &str) -> reqwest::Method {
    reqwest::Method::from_bytes(name.to_ascii_uppercase().as_bytes()).unwrap()
}

#[tokio::test]
async fn every_operation_refuses_a_caller_without_authority_before_reading_its_request() {
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let anyone = Api::new(&base);
    let doc = anyone.json("/openapi.json").await;
    let console = anyone.signed_in(&env.db, "admin").await;
    let mut callers = vec![("none", anyone.clone()), ("console", console)];
    for (scope, class) in
        [("read", EffectClass::Read), ("propose", EffectClass::Propose), ("execute", EffectClass::Execute)]
    {
        let key = capstan::http::keys::create(&env.db, scope, &[class], "test").await.unwrap();
        callers.push((scope, anyone.with_key(&key)));
    }
    let mut walked = 0;
    let mut logout = None;
    for (route, item) in doc["paths"].as_object().unwrap() {
        for (verb, operation) in item.as_object().unwrap() {
            let needs = operation["x-capstan-authority"].as_str().unwrap_or_else(|| panic!("{verb} {route}"));
            let path = route.trim_start_matches("/api/v1").replace(['{', '}'], "").replace("/id", "/no-such-id");
            let path = path.replace("entityId", "no-such-entity").replace("/name", "/no-such-name");
            if route == "/metrics" {
                continue;
            }
            if (verb.as_str(), route.as_str()) == ("delete", "/api/v1/session") {
                logout = Some(path);
                continue;
            }
            let body = operation.get("requestBody").map(|_| json!({ "notAField": [1, 2] }));
            for (held, caller) in &callers {
                let (status, answer) = caller.send(method(verb), &path, body.clone().unwrap_or(Value::Null)).await;
                let what = format!("{verb} {route} as {held} (needs {needs}): {status} {answer}");
                assert!(status < 500, "{what}");
                if may(held, needs) {
                    // A key with the scope may still lack the automation
                    // grant a change needs: that 403 is the grant's, not the scope's.
                    let grant =
                        *held != "console" && answer["error"]["message"].as_str().is_some_and(|m| m.contains("grant"));
                    assert!(status != 401 && (status != 403 || grant), "{what}");
                } else if *held == "none" {
                    assert_eq!(status, 401, "{what}");
                } else {
                    assert_eq!(status, 403, "{what}");
                }
                walked += 1;
            }
        }
    }
    assert!(walked > 150, "only {walked} calls were made");
    // Logging out last: a key has no session to end.
    let logout = logout.unwrap();
    assert_eq!(callers[0].1.send(reqwest::Method::DELETE, &logout, Value::Null).await.0, 401);
    assert_eq!(callers[2].1.send(reqwest::Method::DELETE, &logout, Value::Null).await.0, 403);
    assert_eq!(callers[1].1.send(reqwest::Method::DELETE, &logout, Value::Null).await.0, 204);
}

#[tokio::test]
async fn a_capabilitys_label_is_checked_before_its_body() {
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let read = capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "test").await.unwrap();
    let api = Api::new(&base).with_key(&read);
    // test.counter-safe is labelled execute: a read key is refused whatever it sends.
    for body in [json!({ "notAField": 1 }), json!({ "input": { "label": 7 } }), json!([1])] {
        let (status, answer) = api.post("/capabilities/test.counter-safe/invoke", body).await;
        assert_eq!(status, 403, "{answer}");
    }
    let resp = api
        .request(reqwest::Method::POST, "/capabilities/test.counter-safe/invoke")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
}

#[tokio::test]
async fn only_application_json_bodies_are_taken() {
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let api = Api::new(&base).signed_in(&env.db, "admin").await;
    let doc = api.json("/openapi.json").await;
    let before = api.json("/settings").await;
    let long = "x".repeat(100_000);
    let mut checked = 0;
    for (route, item) in doc["paths"].as_object().unwrap() {
        for (verb, operation) in item.as_object().unwrap() {
            if operation.get("requestBody").is_none() || route == "/api/v1/session" {
                continue;
            }
            // Each path parameter named by itself, a season by a number.
            let path = route.trim_start_matches("/api/v1").replace("{season}", "1").replace(['{', '}'], "");
            for content_type in [
                "application/vnd.api+json",
                "application/merge-patch+json",
                "text/plain",
                "application/json; charset=latin1",
            ] {
                let resp = api
                    .request(method(verb), &path)
                    .header("content-type", content_type)
                    .body(json!({ "profile": long, "goal": long, "name": long }).to_string())
                    .send()
                    .await
                    .unwrap();
                let status = resp.status().as_u16();
                let answer: Value = resp.json().await.unwrap_or(Value::Null);
                // What the path names is looked up (and found missing) first
                // only where authority depends on it (a run's mode).
                if status == 404 && route.contains('{') {
                    continue;
                }
                assert_eq!(status, 415, "{verb} {route} with {content_type}: {answer}");
                assert_eq!(answer["error"]["code"], "content_type", "{answer}");
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "{checked}");
    assert_eq!(api.json("/settings").await, before, "a refused body changed the settings");
}

#[tokio::test]
async fn console_changes_from_another_site_are_refused() {
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let api = Api::new(&base).signed_in(&env.db, "admin").await;
    let own = base.trim_end_matches("/api/v1").to_string();
    let change = |headers: &[(&str, &str)]| {
        let mut request = api.request(reqwest::Method::POST, "/automation-grants");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.json(&json!({ "notAField": 1 }))
    };
    for headers in [
        vec![("origin", "http://evil.example")],
        vec![("origin", "null")],
        vec![("sec-fetch-site", "cross-site")],
        vec![("sec-fetch-site", "same-site"), ("origin", own.as_str())],
        vec![("origin", "https://127.0.0.1.evil.example")],
    ] {
        let resp = change(&headers).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 403, "{headers:?}");
    }
    // From the console's own page the request goes on (to its body's 422).
    let resp = change(&[("origin", own.as_str()), ("sec-fetch-site", "same-origin")]).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 422);
    // Signing in from another site's page is refused too.
    let resp = reqwest::Client::new()
        .post(format!("{base}/session"))
        .header("origin", "http://evil.example")
        .json(&json!({ "name": "admin", "password": "correct horse battery" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    // An API key is not a browser's ambient authority: its Origin is not asked.
    let key = capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "test").await.unwrap();
    let resp = Api::new(&base)
        .with_key(&key)
        .request(reqwest::Method::POST, "/tasks/no-such-task/cancel")
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);

    // Headers on what the API and the console answer.
    let resp = api.request(reqwest::Method::GET, "/settings").send().await.unwrap();
    assert_eq!(resp.headers()["cache-control"], "no-store");
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    let page = reqwest::get(format!("{own}/")).await.unwrap();
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
}
