//! The HTTP API over a real loopback socket: API-key authentication, scope
//! checks against the descriptor, the invoke endpoint, the audit log, and
//! JSON 4xx answers for bad requests that change nothing.

use capstan::runtime::EffectClass;
use capstan_tests::api::{login, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::ledger::env;

async fn error_code(resp: reqwest::Response) -> (u16, String) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.expect("errors are JSON");
    (status, body["error"]["code"].as_str().unwrap_or_default().to_string())
}

async fn keys_scopes_invoke_and_bad_requests(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let read = capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "test").await.unwrap();
    let exec = capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "test").await.unwrap();
    let http = reqwest::Client::new();
    let invoke = |id: &str| format!("{base}/capabilities/{id}/invoke");

    // No key, a wrong key: 401 with a JSON error.
    let resp = http.post(invoke("release.inspect")).json(&json!({"input": {"name": "x"}})).send().await.unwrap();
    assert_eq!(error_code(resp).await, (401, "unauthorized".into()));
    let forged = format!("{}x", &read[..read.len() - 1]);
    let resp = http.get(format!("{base}/capabilities")).bearer_auth(&forged).send().await.unwrap();
    assert_eq!(error_code(resp).await.0, 401);

    // A read key invokes a read capability.
    let resp = http
        .post(invoke("release.inspect"))
        .bearer_auth(&read)
        .json(&json!({"input": {"name": "Heat.1995.1080p.mkv"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let inv: Value = resp.json().await.unwrap();
    assert_eq!(inv["status"], "succeeded");
    assert_eq!(inv["output"]["year"], 1995);

    // The key's scope is re-checked against the label.
    let resp = http
        .post(invoke("test.counter-safe"))
        .bearer_auth(&read)
        .json(&json!({"input": {"label": "a"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(resp).await, (403, "forbidden".into()));
    // An execute key still needs an automation grant: the call is denied and audited.
    let resp = http
        .post(invoke("test.counter-safe"))
        .bearer_auth(&exec)
        .json(&json!({"input": {"label": "a"}}))
        .send()
        .await
        .unwrap();
    let inv: Value = resp.json().await.unwrap();
    assert_eq!(inv["status"], "failed");
    assert_eq!(inv["error"]["kind"], "denied");
    assert_eq!(env.mock.writes(), 0);

    let before = env.app.audit().list(0, 1000).await.unwrap().len();
    let bad: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (
            http.post(invoke("release.inspect"))
                .bearer_auth(&read)
                .header("content-type", "application/json")
                .body("{nope"),
            400,
            "malformed_json",
        ),
        (
            http.post(invoke("release.inspect")).bearer_auth(&read).json(&json!({"input": {}, "surprise": 1})),
            422,
            "invalid_body",
        ),
        (
            http.post(invoke("release.inspect")).bearer_auth(&read).json(&json!({"input": {}, "requestId": 7})),
            422,
            "invalid_body",
        ),
        (http.post(invoke("release.inspect")).bearer_auth(&read).body("{\"input\":{}}"), 415, "content_type"),
        (
            // Refused while it is still being sent: the connection is not
            // one to send the next request on.
            http.post(invoke("release.inspect"))
                .bearer_auth(&read)
                .header("connection", "close")
                .json(&json!({"input": {"name": "y".repeat(2 << 20)}})),
            413,
            "too_large",
        ),
        (http.post(invoke("no.such")).bearer_auth(&read).json(&json!({"input": {}})), 404, "not_found"),
        (http.get(format!("{base}/nowhere")).bearer_auth(&read), 404, "not_found"),
        (http.get(format!("{base}/audit?limit=0")).bearer_auth(&read), 400, "invalid_query"),
        (http.get(format!("{base}/audit?latest=0")).bearer_auth(&read), 400, "invalid_query"),
        (http.get(format!("{base}/audit?latest=1001")).bearer_auth(&read), 400, "invalid_query"),
        (http.get(format!("{base}/audit?limit=ten")).bearer_auth(&read), 400, "invalid_query"),
        (http.get(format!("{base}/audit?bogus=1")).bearer_auth(&read), 400, "invalid_query"),
        (http.post(invoke("%FF")).bearer_auth(&read).json(&json!({"input": {}})), 400, "invalid_path"),
        (http.post(invoke("release.inspect")).bearer_auth(&read).json(&json!([{"name": "x"}])), 422, "invalid_body"),
        (http.put(format!("{base}/audit")).bearer_auth(&read), 405, "method_not_allowed"),
        (http.delete(format!("{base}/capabilities")).bearer_auth(&read), 405, "method_not_allowed"),
    ];
    for (request, status, code) in bad {
        let resp = request.send().await.unwrap();
        assert_eq!(error_code(resp).await, (status, code.to_string()));
    }
    // A wrong method says which ones the endpoint takes.
    let resp = http.put(format!("{base}/audit")).bearer_auth(&read).send().await.unwrap();
    assert_eq!(resp.headers().get("allow").and_then(|v| v.to_str().ok()), Some("GET,HEAD"));
    assert_eq!(env.app.audit().list(0, 1000).await.unwrap().len(), before, "bad requests wrote nothing");

    // The audit log pages by sequence number.
    let page: Value = http
        .get(format!("{base}/audit?after=0&limit=2"))
        .bearer_auth(&read)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page["events"].as_array().unwrap().len(), 2);
    let next = page["next"].as_i64().unwrap();
    let rest: Value = http
        .get(format!("{base}/audit?after={next}&limit=1000"))
        .bearer_auth(&read)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rest["events"][0]["seq"].as_i64().unwrap(), next + 1);

    // The newest events, oldest of them first, and the chain checked.
    let all = env.app.audit().list(0, 1000).await.unwrap();
    let latest: Value =
        http.get(format!("{base}/audit?latest=2")).bearer_auth(&read).send().await.unwrap().json().await.unwrap();
    let seqs: Vec<i64> = latest["events"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, [all[all.len() - 2].seq, all[all.len() - 1].seq]);
    let newest = &latest["events"][1];
    assert!(newest["actorKind"].is_string() && newest["prevHash"].is_string(), "camelCase fields: {newest}");
    let verdict: Value =
        http.get(format!("{base}/audit/verify")).bearer_auth(&read).send().await.unwrap().json().await.unwrap();
    assert_eq!(verdict["Intact"], json!({"events": all.len()}), "{verdict}");
    assert_eq!(verdict["checked"], json!(all.len()), "the first check reads the whole chain: {verdict}");
}

both_backends!(keys_scopes_invoke_and_bad_requests);

async fn console_sessions_need_csrf_for_writes(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let short = capstan::http::session::set_password(&env.db, "admin", "short").await;
    assert!(short.is_err(), "short passwords are refused");
    capstan::http::session::set_password(&env.db, "admin", "correct horse battery").await.unwrap();
    let http = reqwest::Client::new();

    let wrong = http
        .post(format!("{base}/session"))
        .json(&json!({"name": "admin", "password": "nope nope nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(wrong).await.0, 401);
    let resp = http
        .post(format!("{base}/session"))
        .json(&json!({"name": "admin", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let set_cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    for attribute in ["HttpOnly", "SameSite=Strict"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    // Plain HTTP from a client that is no trusted proxy: a browser would
    // drop a Secure cookie here (tests/e2e/lan.rs covers the proxy case).
    assert!(!set_cookie.contains("Secure"), "{set_cookie}");
    let cookie = set_cookie.split(';').next().unwrap().to_string();
    let csrf = resp.json::<Value>().await.unwrap()["csrfToken"].as_str().unwrap().to_string();
    let invoke = format!("{base}/capabilities/test.counter-safe/invoke");

    // A cookie alone cannot write: another site could send it.
    let resp =
        http.post(&invoke).header("cookie", &cookie).json(&json!({"input": {"label": "a"}})).send().await.unwrap();
    assert_eq!(error_code(resp).await, (403, "forbidden".into()));
    assert_eq!(env.mock.writes(), 0);
    // With the token, the administrator's own execute call needs no grant.
    let resp = http
        .post(&invoke)
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({"input": {"label": "a"}}))
        .send()
        .await
        .unwrap();
    let inv: Value = resp.json().await.unwrap();
    assert_eq!(inv["status"], "succeeded", "{inv}");
    assert_eq!(env.mock.writes(), 1);
    // Reads need no token.
    let list = http.get(format!("{base}/capabilities")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(list.status().as_u16(), 200);

    let out = http
        .delete(format!("{base}/session"))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status().as_u16(), 204);
    let after = http.get(format!("{base}/capabilities")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(error_code(after).await.0, 401, "the session is gone");
}

both_backends!(console_sessions_need_csrf_for_writes);

async fn grants_are_managed_from_the_console_and_never_widened(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let http = reqwest::Client::new();
    let (cookie, csrf) = login(&env.db, &http, &base, "admin").await;
    let key = capstan::http::keys::create(&env.db, "automation", &[EffectClass::Execute], "test").await.unwrap();
    let grants = format!("{base}/automation-grants");
    let expires = capstan::store::now_ms() + 3_600_000;
    let body =
        json!({"action": "test.counter-safe", "dailyInvocations": 3, "dailyBytes": 100000, "expiresAt": expires});

    // An API key cannot grant itself anything.
    let resp = http.post(&grants).bearer_auth(&key).json(&body).send().await.unwrap();
    assert_eq!(error_code(resp).await.0, 403);
    let resp = http
        .post(&grants)
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({"action": "", "dailyInvocations": 1, "dailyBytes": 1, "expiresAt": expires}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(resp).await, (422, "invalid_body".into()), "the document says an action is not blank");
    // A capability that is not loaded is a typo nothing would use; a read
    // capability needs no grant; budgets and expiry are bounded. Each
    // refusal names the field at fault.
    let year = 365 * 86_400_000;
    let with = |change: Value| {
        let mut bad = body.clone();
        bad.as_object_mut().unwrap().extend(change.as_object().unwrap().clone());
        bad
    };
    for (bad, field) in [
        (with(json!({"action": "test.counter-sfae"})), Some("action")),
        (with(json!({"action": "release.inspect"})), Some("action")),
        (with(json!({"dailyInvocations": 100_001})), Some("dailyInvocations")),
        (with(json!({"dailyBytes": 0})), Some("dailyBytes")),
        (with(json!({"expiresAt": capstan::store::now_ms() + year + 3_600_000})), Some("expiresAt")),
    ] {
        let resp =
            http.post(&grants).header("cookie", &cookie).header("x-csrf-token", &csrf).json(&bad).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 422, "{bad}");
        let answer: Value = resp.json().await.unwrap();
        // The document's bounds refuse some; the grant's own checks the rest.
        assert!(matches!(answer["error"]["code"].as_str(), Some("invalid_grant" | "invalid_body")), "{answer}");
        assert_eq!(answer["error"]["field"].as_str(), field, "{answer}");
    }
    assert!(env.svc.authz.grants().await.unwrap().is_empty(), "no grant was stored");
    let listed: Value = http.get(&grants).header("cookie", &cookie).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["limits"]["expiresInDays"]["maximum"], 365, "the bounds are there for a form: {listed}");
    let resp =
        http.post(&grants).header("cookie", &cookie).header("x-csrf-token", &csrf).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let grant: Value = resp.json().await.unwrap();
    let id = grant["id"].as_str().unwrap().to_string();

    // The grant lets the automated key run the capability.
    let invoke = format!("{base}/capabilities/test.counter-safe/invoke");
    let inv: Value = http
        .post(&invoke)
        .bearer_auth(&key)
        .json(&json!({"input": {"label": "g"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(inv["status"], "succeeded", "{inv}");

    // Widening is refused and changes nothing; shortening and revoking work.
    let patch = |change: Value| {
        http.patch(format!("{grants}/{id}"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
            .json(&change)
            .send()
    };
    let resp = patch(json!({"expiresAt": expires + 1})).await.unwrap();
    assert_eq!(error_code(resp).await.0, 422);
    let resp = patch(json!({"dailyInvocations": 10})).await.unwrap();
    assert_eq!(error_code(resp).await.0, 422);
    let shortened: Value = patch(json!({"dailyInvocations": 2})).await.unwrap().json().await.unwrap();
    assert_eq!(shortened["dailyInvocations"], 2);
    assert_eq!(shortened["expiresAt"].as_i64().unwrap(), expires);
    let revoked: Value = patch(json!({"revoke": true})).await.unwrap().json().await.unwrap();
    assert!(revoked["revokedAt"].is_i64());
    // Revoking again, or shortening a revoked grant, is a conflict that
    // changes nothing (and is not audited as done).
    let resp = patch(json!({"revoke": true})).await.unwrap();
    assert_eq!(error_code(resp).await.0, 409);
    let resp = patch(json!({"dailyInvocations": 1})).await.unwrap();
    assert_eq!(error_code(resp).await.0, 409);
    let again = env.svc.authz.grant(&id).await.unwrap().unwrap();
    assert_eq!((again.revoked_at, again.daily_invocations), (revoked["revokedAt"].as_i64(), 2));
    let revokes = env.app.audit().list(0, 1000).await.unwrap();
    assert_eq!(revokes.iter().filter(|e| e.event.action == "grant.revoke").count(), 1);
    let inv: Value = http
        .post(&invoke)
        .bearer_auth(&key)
        .json(&json!({"input": {"label": "h"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(inv["error"]["kind"], "denied");
    assert_eq!(env.mock.writes(), 1);
    let listed: Value = http.get(&grants).header("cookie", &cookie).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["grants"].as_array().unwrap().len(), 1);
}

both_backends!(grants_are_managed_from_the_console_and_never_widened);

/// The OpenAPI document lists every endpoint the router serves, and every
/// operation it lists is answered by a handler rather than the fallback.
/// Each `api("METHOD", "/literal...` call in the console's scripts: the
/// method and the path's literal start (dynamic parts follow it).
fn console_calls() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src/http/console");
    let mut calls = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "js") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for call in text.split("api(\"").skip(1) {
            let Some((method, rest)) = call.split_once("\", \"") else { continue };
            let literal = rest.split('"').next().unwrap_or_default();
            calls.push((method.to_string(), literal.split('?').next().unwrap_or_default().to_string()));
        }
    }
    assert!(calls.len() > 30, "found only {} console calls", calls.len());
    calls
}

/// Whether a path starting with `literal` can be one `template` describes:
/// `{x}` segments take anything, and the literal's last segment may be cut
/// short where the console appends an id.
fn template_fits(literal: &str, template: &str) -> bool {
    let given: Vec<&str> = literal.split('/').collect();
    let wanted: Vec<&str> = template.split('/').collect();
    let last = given.len() - 1;
    given.len() <= wanted.len()
        && given
            .iter()
            .zip(&wanted)
            .enumerate()
            .all(|(i, (g, w))| w.starts_with('{') || if i == last { w.starts_with(g) } else { g == w })
}

async fn the_openapi_document_describes_the_routes_that_exist(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let http = reqwest::Client::new();
    let doc: Value = http.get(format!("{base}/openapi.json")).send().await.unwrap().json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{}", doc["openapi"]);
    let paths = doc["paths"].as_object().unwrap();
    for expected in [
        "/api/v1/capabilities/{id}/invoke",
        "/api/v1/automation-grants/{id}",
        "/api/v1/approvals/{id}",
        "/api/v1/settings",
        "/api/v1/audit",
        "/api/v1/session",
    ] {
        assert!(paths.contains_key(expected), "{expected} is missing from the document");
    }
    assert!(paths["/api/v1/settings"].get("patch").is_some());
    // Every call the console makes is documented, with the method it uses.
    for (method, literal) in console_calls() {
        let documented = paths.iter().any(|(path, item)| {
            item.get(method.to_lowercase()).is_some() && template_fits(&format!("/api/v1{literal}"), path)
        });
        assert!(documented, "the console calls {method} {literal}..., which the document does not list");
    }
    // The shared answers: a body's 400/413/415/422, a secured one's 401.
    let start_run = &paths["/api/v1/agent/runs"]["post"]["responses"];
    for status in ["400", "401", "413", "415", "422"] {
        assert!(start_run.get(status).is_some(), "POST /agent/runs lists no {status}: {start_run}");
    }
    // Bounds the server enforces are in the document.
    let audit = paths["/api/v1/audit"]["get"]["parameters"].as_array().unwrap();
    let latest = audit.iter().find(|p| p["name"] == "latest").unwrap();
    assert_eq!((latest["schema"]["minimum"].as_i64(), latest["schema"]["maximum"].as_i64()), (Some(1), Some(1000)));
    let message = &doc["components"]["schemas"]["SendMessage"]["properties"]["text"];
    assert!(message["pattern"].is_string(), "a message may not be blank: {message}");
    let invoke_body = &doc["components"]["schemas"]["InvokeBody"];
    assert!(invoke_body["required"].as_array().unwrap().contains(&json!("input")), "{invoke_body}");
    assert!(doc["components"]["securitySchemes"]["apiKey"].is_object());
    // A decision's lifecycle and what it carries are in the document.
    let decision = &doc["components"]["schemas"]["Decision"];
    assert!(decision["description"].as_str().unwrap().contains("open → investigating → awaiting_user"), "{decision}");
    for field in ["kind", "status", "options", "evidence", "resolution", "dedupeKey", "resolvedBy", "openedBy"] {
        assert!(decision["properties"].get(field).is_some(), "Decision has no {field}: {decision}");
    }
    let page = &paths["/api/v1/decisions"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    assert_eq!(page["$ref"], "#/components/schemas/DecisionPage", "{page}");

    let mut operations = 0;
    for (path, item) in paths {
        for method in ["get", "post", "patch", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            operations += 1;
            let url = format!("{}{}", base.trim_end_matches("/api/v1"), path.replace("{id}", "x"));
            let req = http.request(method.to_uppercase().parse().unwrap(), &url).json(&json!({}));
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap();
            assert!(!text.contains("no such endpoint"), "{method} {path} is documented but not routed ({status})");
        }
    }
    assert!(operations >= 15, "only {operations} operations documented");
    // And the fallback is what an undocumented path gets.
    let resp = http.get(format!("{base}/no-such-thing")).send().await.unwrap();
    assert!(resp.text().await.unwrap().contains("no such endpoint"));
}

both_backends!(the_openapi_document_describes_the_routes_that_exist);
