//! A hostile component against outbound services. The service is a real
//! loopback server that routes as common servers do (decoding twice,
//! resolving dot segments, `\` as `/`, `;` parameters, merged slashes) and
//! records what reached it; every answer reflects the request back in some
//! encoding. Whatever path the component sends, the server never routes a
//! read-granted call to a write path or anywhere outside the base URL, and
//! no injected credential ever comes back to the component.

use std::sync::Arc;

use base64::Engine;
use capstan::Runtime;
use capstan::config::{Auth, OperationRule, SecretRef, ServiceConfig};
use capstan::runtime::{CallOutcome, CallReport, EffectClass};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use capstan_tests::mock_router::{MockRouter, SESSION, USER};
use serde_json::{Value, json};

use crate::grant;

pub(super) const KEY: &str = "Kq7+zX/9f&Lm2=Pw";
pub(super) const PASSWORD: &str = "hunter2-Correct+Horse";

pub(super) fn rule(method: &str, path: &str, class: &str) -> OperationRule {
    OperationRule::new(method, path, class)
}

fn service(router: &MockRouter, auth: Auth) -> ServiceConfig {
    let mut rpc = rule("POST", "/rpc*", "read");
    rpc.rpc_methods = vec!["torrent-get".into(), "session-get".into()];
    ServiceConfig {
        base_url: router.base_url(),
        auth,
        operations: vec![
            rule("*", "/admin/*", "write"),
            rule("GET", "/danger", "write"),
            rule("POST", "/search*", "read"),
            rpc,
        ],
        timeout_ms: 5_000,
        response_cap_bytes: 1 << 20,
    }
}

pub(super) async fn start(router: &MockRouter, auth: Auth) -> (TestHost, Arc<Runtime>) {
    let mut host = TestHost::new();
    host.config.services.insert("echo".into(), service(router, auth));
    host.drop_plugin(components::PROBE, "probe.wasm");
    let runtime = host.start().await.unwrap();
    (host, runtime)
}

fn form_login(password: &str) -> Auth {
    Auth::FormLogin {
        path: "/login".into(),
        username: USER.into(),
        password: SecretRef(password.into()),
        username_field: "username".into(),
        password_field: "password".into(),
    }
}

pub(super) async fn send(runtime: &Runtime, class: EffectClass, request: Value) -> CallReport {
    let mut input = json!({"action": "send", "import": "read", "service": "echo", "method": "GET"});
    input.as_object_mut().unwrap().extend(request.as_object().unwrap().clone());
    runtime.call("test.probe", &input.to_string(), grant(class)).await.unwrap()
}

/// The failure kind, or `ok` with everything the component got back.
pub(super) fn answer(report: &CallReport) -> (String, String) {
    match &report.outcome {
        CallOutcome::Succeeded { output } => ("ok".into(), output["result"].to_string()),
        CallOutcome::Failed { failure } => (failure.kind.clone(), failure.message.clone()),
        other => panic!("{other:?}"),
    }
}

/// What an attacker reads out of `text` that was reflected as `how`: the
/// text, and each piece between masks decoded (at every alignment).
fn readings(how: &str, text: &str) -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = vec![text.to_string()];
    for piece in text.split("[redacted]") {
        match how {
            "base64" => {
                for skip in 0..4.min(piece.len() + 1) {
                    let p = &piece[skip..];
                    if let Ok(bytes) = b64.decode(&p[..p.len() - p.len() % 4]) {
                        out.push(String::from_utf8_lossy(&bytes).into_owned());
                    }
                }
            }
            "hex" => {
                for skip in 0..2.min(piece.len() + 1) {
                    let p = &piece[skip..];
                    if let Ok(bytes) = hex::decode(&p[..p.len() - p.len() % 2]) {
                        out.push(String::from_utf8_lossy(&bytes).into_owned());
                    }
                }
            }
            "url" | "form" => out
                .push(percent_encoding::percent_decode_str(&piece.replace('+', " ")).decode_utf8_lossy().into_owned()),
            "json" => out.push(piece.replace("\\/", "/").replace("\\\"", "\"")),
            "html" => {
                out.push(piece.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
            }
            _ => {}
        }
    }
    out
}

/// Whether `text` holds `secret` in any form a test can think of.
pub(super) fn leaks(text: &str, secret: &str) -> bool {
    let b64 = base64::engine::general_purpose::STANDARD;
    let forms = [
        secret.to_string(),
        secret.to_lowercase(),
        form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
        percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC).to_string(),
        hex::encode(secret),
        b64.encode(secret).trim_end_matches('=').to_string(),
        b64.encode(format!("{USER}:{secret}")).trim_end_matches('=').to_string(),
    ];
    let text = text.to_lowercase();
    forms.iter().any(|f| text.contains(&f.to_lowercase()))
}

#[tokio::test(flavor = "multi_thread")]
async fn encoded_paths_never_reach_a_write_path_or_leave_the_base() {
    let router = MockRouter::start(PASSWORD).await;
    let (_h, runtime) = start(&router, Auth::Query { name: "api_key".into(), value: SecretRef(KEY.into()) }).await;
    let attacks: &[(&str, &str)] = &[
        ("GET", "/items/%2e%2e/admin/delete"),
        ("GET", "/items/%2E%2E/%2E%2E/other"),
        ("GET", "/%2e%2e/outside"),
        ("GET", "/items/.%2e/admin/x"),
        ("GET", "/%2e/admin/x"),
        ("GET", "/%61dmin/delete"),
        ("GET", "/ADMIN/delete"),
        ("GET", "/Admin/Delete"),
        ("GET", "/danger/"),
        ("GET", "/DANGER"),
        ("GET", "/d%61nger"),
        ("HEAD", "/danger"),
        ("GET", "/items/../admin/x"),
        ("GET", "/items/./x"),
        ("GET", "/items//admin/x"),
        ("GET", "/admin%2fdelete"),
        ("GET", "/items%5c..%5cadmin"),
        ("GET", "/items\\..\\admin"),
        ("GET", "/items;x=1/../admin"),
        ("GET", "/items%3b/../admin"),
        ("GET", "/items/%252e%252e/admin/x"),
        ("GET", "/items/%c0%ae%c0%ae/admin"),
        ("GET", "/items/%00/admin"),
        ("GET", "/items%0d%0aX-Injected:%201"),
        ("GET", "/ａdmin/delete"),
        ("GET", "/%EF%BD%81dmin/delete"),
        ("GET", "/items\u{2215}..\u{2215}admin"),
        ("GET", "//evil.example/x"),
        ("GET", "/http://evil.example/"),
        ("POST", "/search/%2e%2e/admin/add"),
        ("POST", "/search/../admin/add"),
        ("POST", "/search/%2e%2e%2fadmin"),
        ("POST", "/SEARCH/..;/admin"),
        ("POST", "/admin/add"),
        ("DELETE", "/search"),
    ];
    for (method, path) in attacks {
        let report = send(&runtime, EffectClass::Read, json!({"method": method, "path": path})).await;
        let (kind, message) = answer(&report);
        assert!(kind == "invalid-input" || kind == "denied", "{method} {path} got through: {kind} {message}");
    }
    for seen in router.seen() {
        let routed = seen.routed.to_lowercase();
        let outside = !routed.starts_with("/svc/") || routed.starts_with("/svc/admin") || routed == "/svc/danger";
        assert!(!outside, "the server routed {} {} to {}", seen.method, seen.raw_path, seen.routed);
    }
    assert!(router.seen().is_empty(), "nothing was sent: {:?}", router.seen());

    // What is allowed still works, decoded as the server decodes it.
    for (method, path, routed) in [
        ("GET", "/items/1", "/svc/items/1"),
        ("POST", "/search/dune", "/svc/search/dune"),
        ("GET", "/t/Am%C3%A9lie", "/svc/t/Amélie"),
    ] {
        let report = send(&runtime, EffectClass::Read, json!({"method": method, "path": path})).await;
        assert_eq!(answer(&report).0, "ok", "{method} {path}: {:?}", report.outcome);
        assert_eq!(router.seen().last().unwrap().routed, routed);
    }
    // A write, with the write import and grant, reaches the write path.
    let report =
        send(&runtime, EffectClass::Execute, json!({"import": "write", "method": "POST", "path": "/admin/add"})).await;
    assert_eq!(answer(&report).0, "ok", "{:?}", report.outcome);
    assert_eq!(router.seen().last().unwrap().routed, "/svc/admin/add");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_rpc_read_is_only_a_listed_method_named_once() {
    let router = MockRouter::start(PASSWORD).await;
    let (_h, runtime) = start(&router, Auth::None).await;
    let call = |body: &str| json!({"method": "POST", "path": "/rpc", "body": body});
    for write in [
        r#"{"method": "torrent-remove", "arguments": {"ids": [1], "delete-local-data": true}}"#,
        r#"{"method": "torrent-get", "method": "torrent-remove"}"#,
        r#"{"method": "torrent-remove", "m\u0065thod": "torrent-get"}"#,
        r#"{"method": "torrent-get"} {"method": "torrent-remove"}"#,
        r#"{"method": "torrent-get", "_method": "DELETE"}"#,
    ] {
        let report = send(&runtime, EffectClass::Read, call(write)).await;
        let kind = answer(&report).0;
        assert!(kind == "denied" || kind == "invalid-input", "{write} got through a read: {:?}", report.outcome);
    }
    assert!(router.seen().is_empty(), "nothing was sent: {:?}", router.seen());
    let report = send(&runtime, EffectClass::Read, call(r#"{"method": "torrent-get", "arguments": {}}"#)).await;
    assert_eq!(answer(&report).0, "ok", "{:?}", report.outcome);
    assert_eq!(router.seen().last().unwrap().routed, "/svc/rpc");
    // With the write import and grant, any method is sent.
    let removal =
        json!({"import": "write", "method": "POST", "path": "/rpc", "body": r#"{"method": "torrent-remove"}"#});
    assert_eq!(answer(&send(&runtime, EffectClass::Execute, removal).await).0, "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_credentials_names_and_the_hosts_headers_are_reserved() {
    let router = MockRouter::start(PASSWORD).await;
    let header = Auth::Header {
        name: "X-Api-Key".into(),
        value: SecretRef(KEY.into()),
        prefix: String::new(),
        suffix: String::new(),
    };
    let (_h, runtime) = start(&router, header).await;
    for headers in [
        json!([["x-api-key", "mine"]]),
        json!([["X-API-KEY", "mine"]]),
        json!([["Authorization", "Bearer mine"]]),
        json!([["Cookie", "SID=mine"]]),
        json!([["Accept-Encoding", "gzip"]]),
        json!([["X-HTTP-Method-Override", "DELETE"]]),
        json!([["X-Original-URL", "/admin/delete"]]),
        json!([["Proxy-Anything", "x"]]),
        json!([["X_Api_Key", "mine"]]),
        json!([["X_HTTP_Method_Override", "DELETE"]]),
        json!([["Bad Name", "x"]]),
        json!([["X-Fine", "line\r\nX-Injected: 1"]]),
    ] {
        let report = send(&runtime, EffectClass::Read, json!({"path": "/echo", "headers": headers})).await;
        assert_eq!(answer(&report).0, "invalid-input", "{headers}: {:?}", report.outcome);
    }
    let (_h, runtime) = start(&router, Auth::Query { name: "api_key".into(), value: SecretRef(KEY.into()) }).await;
    for name in ["api_key", "API_KEY", "Api_Key", "_method"] {
        let report = send(&runtime, EffectClass::Read, json!({"path": "/echo", "query": [[name, "mine"]]})).await;
        assert_eq!(answer(&report).0, "invalid-input", "{name}: {:?}", report.outcome);
    }
    // A POST the table calls a read may not carry a method override.
    for body in ["_method=DELETE&q=1", "{\"_method\": \"DELETE\"}"] {
        let report =
            send(&runtime, EffectClass::Read, json!({"method": "POST", "path": "/search/x", "body": body})).await;
        assert_eq!(answer(&report).0, "invalid-input", "{body}: {:?}", report.outcome);
    }
    // The form login's path is the host's.
    let (_h, runtime) = start(&router, form_login(PASSWORD)).await;
    for path in ["/login", "/LOGIN/"] {
        let report =
            send(&runtime, EffectClass::Execute, json!({"import": "write", "method": "POST", "path": path})).await;
        assert_eq!(answer(&report).0, "invalid-input", "{path}: {:?}", report.outcome);
    }
    assert!(router.seen().is_empty(), "nothing was sent: {:?}", router.seen());
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_credentials_never_come_back_to_the_component() {
    let router = MockRouter::start(PASSWORD).await;
    let auths = [
        (Auth::Query { name: "api_key".into(), value: SecretRef(KEY.into()) }, KEY),
        (
            Auth::Header {
                name: "X-Api-Key".into(),
                value: SecretRef(KEY.into()),
                prefix: "Token ".into(),
                suffix: String::new(),
            },
            KEY,
        ),
        (Auth::Basic { username: USER.into(), password: SecretRef(PASSWORD.into()) }, PASSWORD),
        (form_login(PASSWORD), SESSION),
    ];
    for (auth, secret) in auths {
        let (_h, runtime) = start(&router, auth.clone()).await;
        for how in ["plain", "json", "base64", "hex", "url", "form", "upper", "html"] {
            router.clear();
            let report =
                send(&runtime, EffectClass::Read, json!({"path": format!("/reflect/{how}"), "query": [["q", "x"]]}))
                    .await;
            let CallOutcome::Succeeded { output } = &report.outcome else {
                panic!("{auth:?} {how}: {:?}", report.outcome)
            };
            let body = output["result"]["body"].as_str().unwrap();
            let headers = output["result"]["headers"].to_string();
            for reading in readings(how, body).iter().chain([&headers]) {
                assert!(!leaks(reading, secret), "{auth:?} reflected as {how} came back: {reading}");
                assert!(!leaks(reading, PASSWORD), "{auth:?} reflected as {how} gave the password: {reading}");
            }
            // The service did get the credential.
            let seen = router.seen();
            let sent = seen.iter().rev().find(|s| s.routed.starts_with("/svc/reflect")).unwrap();
            assert!(leaks(&format!("{}{:?}", sent.query, sent.headers), secret), "{auth:?}: {sent:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_components_cookies_never_join_the_login_session() {
    let router = MockRouter::start(PASSWORD).await;
    let (_h, runtime) = start(&router, form_login(PASSWORD)).await;
    let report = send(&runtime, EffectClass::Read, json!({"path": "/set-cookie"})).await;
    let (kind, got) = answer(&report);
    assert_eq!(kind, "ok");
    assert!(!got.contains("attacker-chosen") && !got.to_lowercase().contains("set-cookie"), "{got}");
    router.clear();
    let report = send(&runtime, EffectClass::Read, json!({"path": "/echo"})).await;
    assert_eq!(answer(&report).0, "ok");
    let seen = router.seen();
    let cookies: Vec<&String> = seen[0].headers.iter().filter(|(k, _)| k == "cookie").map(|(_, v)| v).collect();
    assert_eq!(cookies, [&format!("SID={SESSION}")], "only the login's session cookie is sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_login_and_a_compressed_answer_say_why_without_the_password() {
    let router = MockRouter::start(PASSWORD).await;
    let wrong = "wrong-Pass+word/9";
    let (_h, runtime) = start(&router, form_login(wrong)).await;
    let report = send(&runtime, EffectClass::Read, json!({"path": "/echo"})).await;
    let (kind, message) = answer(&report);
    assert_eq!(kind, "denied", "{message}");
    assert!(message.contains("login was not accepted"), "{message}");
    assert!(!leaks(&message, wrong), "the refusal quoted the password: {message}");
    assert!(router.seen().iter().any(|s| s.body.contains("wrong-Pass")), "the server did see it");

    let (_h, runtime) = start(&router, Auth::Query { name: "api_key".into(), value: SecretRef(KEY.into()) }).await;
    let report = send(&runtime, EffectClass::Read, json!({"path": "/gzip"})).await;
    let (kind, message) = answer(&report);
    assert_eq!(kind, "unavailable", "{message}");
    assert!(message.contains("compressed"), "{message}");
}
