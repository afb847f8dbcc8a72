//! Outbound services: a component names a service and a path; the host adds
//! credentials (masked out of what comes back), classes the operation,
//! applies timeouts and caps, and denies anything undeclared or above the
//! grant. The service is a real HTTP server on loopback; `outbound_edges`
//! has the hostile variants.

use std::sync::Arc;

use capstan::Runtime;
use capstan::config::{Auth, OperationRule, SecretRef, ServiceConfig};
use capstan::runtime::{CallOutcome, CallReport, EffectClass, Status};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use capstan_tests::mock_service::MockService;
use serde_json::{Value, json};

use crate::grant;

fn service(base_url: String, auth: Auth) -> ServiceConfig {
    ServiceConfig { base_url, auth, operations: Vec::new(), timeout_ms: 2_000, response_cap_bytes: 4 << 20 }
}

async fn start(echo: Option<ServiceConfig>) -> (TestHost, Arc<Runtime>) {
    let mut host = TestHost::new();
    if let Some(echo) = echo {
        host.config.services.insert("echo".into(), echo);
    }
    host.drop_plugin(components::PROBE, "probe.wasm");
    let runtime = host.start().await.unwrap();
    (host, runtime)
}

async fn call(runtime: &Runtime, input: Value, class: EffectClass) -> CallReport {
    runtime.call("test.probe", &input.to_string(), grant(class)).await.unwrap()
}

/// The JSON body the echo endpoint returned, as the component saw it.
fn echoed(report: &CallReport) -> Value {
    let CallOutcome::Succeeded { output } = &report.outcome else { panic!("{:?}", report.outcome) };
    serde_json::from_str(output["result"]["body"].as_str().unwrap()).unwrap()
}

fn failure(report: &CallReport) -> (String, String) {
    match &report.outcome {
        CallOutcome::Failed { failure } => (failure.kind.clone(), failure.message.clone()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_are_injected_by_header_query_or_basic_auth() {
    let mock = MockService::start().await;
    let header = Auth::Header {
        name: "X-Api-Key".into(),
        value: SecretRef("tok-123".into()),
        prefix: String::new(),
        suffix: String::new(),
    };
    let (_h, runtime) = start(Some(service(mock.base_url(), header))).await;
    let report = call(
        &runtime,
        json!({"action": "read", "service": "echo", "path": "/echo", "query": [["q", "dune"]]}),
        EffectClass::Read,
    )
    .await;
    // The service got the key; what it echoed back is masked.
    let seen = echoed(&report);
    assert_eq!(seen["headers"]["x-api-key"], "[redacted]");
    assert_eq!(seen["query"]["q"], "dune");
    assert_eq!(seen["method"], "GET");

    let query = Auth::Query { name: "api_key".into(), value: SecretRef("qs-456".into()) };
    let (_h, runtime) = start(Some(service(mock.base_url(), query))).await;
    let seen =
        echoed(&call(&runtime, json!({"action": "read", "service": "echo", "path": "/echo"}), EffectClass::Read).await);
    assert_eq!(seen["query"]["api_key"], "[redacted]");

    let basic = Auth::Basic { username: "user".into(), password: SecretRef("pw".into()) };
    let (_h, runtime) = start(Some(service(mock.base_url(), basic))).await;
    let seen =
        echoed(&call(&runtime, json!({"action": "read", "service": "echo", "path": "/echo"}), EffectClass::Read).await);
    assert_eq!(seen["headers"]["authorization"], "[redacted]");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_path_credential_is_segments_the_component_never_sees() {
    let mock = MockService::start().await;
    let seen_by_server = || mock.counters.paths.lock().unwrap().last().cloned().unwrap_or_default();
    // A Telegram bot's token: `/bot<token>/<method>`.
    let bot = Auth::Path { value: SecretRef("123456:AAH-secret_token".into()), prefix: "bot".into() };
    let (_h, runtime) = start(Some(service(format!("{}/tg", mock.base_url()), bot))).await;
    let seen = echoed(
        &call(&runtime, json!({"action": "read", "service": "echo", "path": "/getMe"}), EffectClass::Read).await,
    );
    assert_eq!(seen_by_server(), "/tg/bot123456:AAH-secret_token/getMe");
    let shown = seen["path"].as_str().unwrap();
    assert!(shown.ends_with("/getMe") && !shown.contains("secret_token"), "the echo is masked: {shown}");

    // A Discord webhook: the secret is the URL's last two segments, and
    // `/` is that URL itself.
    let hook = Auth::Path { value: SecretRef("1234567890/webhook-token-abc".into()), prefix: String::new() };
    let (_h, runtime) = start(Some(service(format!("{}/api/webhooks/", mock.base_url()), hook))).await;
    let report = call(
        &runtime,
        json!({"action": "write", "service": "echo", "method": "POST", "path": "/"}),
        EffectClass::Execute,
    )
    .await;
    assert_eq!(report.status(), Status::Succeeded, "{:?}", report.outcome);
    assert_eq!(seen_by_server(), "/api/webhooks/1234567890/webhook-token-abc");

    // A secret that would reshape the path is not sent, and the reason
    // does not quote it.
    let before = mock.counters.requests.load(std::sync::atomic::Ordering::SeqCst);
    for bad in ["../admin-token", "a b", "tok%2e", "x//y", "q?x=1"] {
        let auth = Auth::Path { value: SecretRef(bad.into()), prefix: String::new() };
        let (_h, runtime) = start(Some(service(mock.base_url(), auth))).await;
        let report =
            call(&runtime, json!({"action": "read", "service": "echo", "path": "/echo"}), EffectClass::Read).await;
        let (_, message) = failure(&report);
        assert!(message.contains("cannot be part of a URL path") && !message.contains(bad), "{message}");
    }
    assert_eq!(mock.counters.requests.load(std::sync::atomic::Ordering::SeqCst), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn undeclared_and_unconfigured_services_are_refused() {
    let mock = MockService::start().await;
    let (_h, runtime) = start(Some(service(mock.base_url(), Auth::None))).await;
    let report = call(&runtime, json!({"action": "read", "service": "tmdb", "path": "/echo"}), EffectClass::Read).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, "denied");
    assert!(message.contains("not declared"), "{message}");
    assert_eq!(report.denials.len(), 1);

    let (_h, runtime) = start(None).await;
    let report = call(&runtime, json!({"action": "read", "service": "echo", "path": "/echo"}), EffectClass::Read).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, "not-found");
    assert!(message.contains("not configured"), "{message}");
    assert_eq!(mock.counters.requests.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_need_the_write_import_and_an_execute_grant() {
    let mock = MockService::start().await;
    let (_h, runtime) = start(Some(service(mock.base_url(), Auth::None))).await;
    let write = json!({"action": "write", "service": "echo", "method": "POST", "path": "/count"});

    let report = call(&runtime, write.clone(), EffectClass::Read).await;
    assert_eq!(failure(&report).0, "denied");
    assert_eq!(mock.writes(), 0);
    assert!(!report.effect_started);

    let report = call(&runtime, write, EffectClass::Execute).await;
    assert_eq!(report.status(), Status::Succeeded, "{:?}", report.outcome);
    assert_eq!(mock.writes(), 1);
    assert!(report.effect_started);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operation_table_decides_what_is_a_read() {
    let mock = MockService::start().await;
    let mut config = service(mock.base_url(), Auth::None);
    config.operations.push(OperationRule::new("GET", "/echo*", "write"));
    let (_h, runtime) = start(Some(config)).await;
    let report =
        call(&runtime, json!({"action": "read", "service": "echo", "path": "/echo"}), EffectClass::Execute).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, "denied");
    assert!(message.contains("write operation"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn form_login_keeps_a_session_cookie_the_component_never_sees() {
    let mock = MockService::start().await;
    let auth = Auth::FormLogin {
        path: "/login".into(),
        username: "admin".into(),
        password: SecretRef("secret".into()),
        username_field: "username".into(),
        password_field: "password".into(),
    };
    let (_h, runtime) = start(Some(service(mock.base_url(), auth))).await;
    for _ in 0..3 {
        let report =
            call(&runtime, json!({"action": "read", "service": "echo", "path": "/protected"}), EffectClass::Read).await;
        let CallOutcome::Succeeded { output } = &report.outcome else { panic!("{:?}", report.outcome) };
        assert_eq!(output["result"]["status"], 200);
        assert_eq!(output["result"]["body"], "inside");
    }
    assert_eq!(mock.logins(), 1, "one login serves later calls");
}

#[tokio::test(flavor = "multi_thread")]
async fn timeouts_caps_and_bad_paths_are_clear_errors() {
    let mock = MockService::start().await;
    let mut config = service(mock.base_url(), Auth::None);
    config.timeout_ms = 300;
    config.response_cap_bytes = 10_000;
    let (_h, runtime) = start(Some(config)).await;

    let slow = call(&runtime, json!({"action": "read", "service": "echo", "path": "/slow"}), EffectClass::Read).await;
    let (kind, message) = failure(&slow);
    assert_eq!(kind, "unavailable");
    assert!(message.contains("timed out"), "{message}");

    let big = call(
        &runtime,
        json!({"action": "read", "service": "echo", "path": "/big", "query": [["bytes", "20000"]]}),
        EffectClass::Read,
    )
    .await;
    let (_, message) = failure(&big);
    assert!(message.contains("exceeds 10000 bytes"), "{message}");

    let escape =
        call(&runtime, json!({"action": "read", "service": "echo", "path": "/../../etc"}), EffectClass::Read).await;
    assert_eq!(failure(&escape).0, "invalid-input");
    let host =
        call(&runtime, json!({"action": "read", "service": "echo", "path": "//evil.example/x"}), EffectClass::Read)
            .await;
    assert_eq!(failure(&host).0, "invalid-input");
}
