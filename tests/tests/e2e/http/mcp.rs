//! `/mcp` against a client nobody here wrote: the Model Context Protocol's
//! Python SDK (PyPI `mcp`, installed by `scripts/setup.sh --tests` into
//! `target/test-tools/mcp`) runs `tests/mcp/client.py`, with the initialize
//! handshake of the older revisions and with the current one's discovery.
//! An execute key sees every loaded capability as a tool whose annotations
//! follow its label; a read key sees the read ones only and cannot call
//! the rest; a read key reads the decisions waiting, the library and the
//! audit verdict as resources; a read call answers structured content; an execute call
//! without a grant is an error result saying it was denied and which
//! grant would allow it, and nothing is written; one on a plan opens that
//! plan's approval request for an administrator; with a grant it runs once, recorded as the key's over MCP;
//! a call the client gives up on is stopped and recorded `unknown` once
//! its effect ran; a session of the older revision, and a
//! `subscriptions/listen` stream of the current one, are told when a hot
//! reload changes the tools they can see. Over plain HTTP: no key is 401 with a Bearer
//! challenge, another site's page or another Host is 403, malformed
//! or batched JSON-RPC changes nothing, and a key's sessions past 16 end
//! oldest first.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use capstan::config::{Auth, ServiceConfig};
use capstan::ledger::{LedgerStatus, by_capability};
use capstan::runtime::EffectClass;
use capstan::store::Db;
use capstan_tests::components;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::mock_service::MockService;
use serde_json::{Value, json};

fn python() -> PathBuf {
    let bin = capstan_tests::host::target_dir().join("test-tools/mcp/bin/python");
    assert!(bin.exists(), "{} is missing: run scripts/setup.sh --tests", bin.display());
    bin
}

/// Runs the SDK's client for one step and returns what it printed.
async fn client(url: &str, mode: &str, key: &str, step: &str, args: Value) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp/client.py");
    let out = tokio::process::Command::new(python())
        .args([script, url, mode, key, step, &args.to_string()])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client.py {step} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("client.py printed {stdout:?}: {e}"))
}

fn names(listed: &Value) -> Vec<String> {
    listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

fn tool<'a>(listed: &'a Value, name: &str) -> &'a Value {
    listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_people_run_reach_capstans_tools_through_mcp_under_its_authority() {
    let mut host = TestHost::new();
    let mock = MockService::start().await;
    let service = ServiceConfig {
        base_url: mock.base_url(),
        auth: Auth::None,
        operations: Vec::new(),
        timeout_ms: 5_000,
        response_cap_bytes: 1 << 20,
    };
    host.config.services.insert("counter".into(), service);
    // A call long enough to be given up on.
    let probe = capstan::config::CapabilityConfig { deadline_ms: Some(60_000), ..Default::default() };
    host.config.capabilities.insert("test.probe".into(), probe);
    let library = host.dir.path().join("library");
    std::fs::create_dir_all(&library).unwrap();
    host.config.roots.insert("library".into(), library.clone());
    host.drop_plugin(components::COUNTER_SAFE, "safe.wasm");
    host.drop_plugin(components::PROBE, "probe.wasm");
    // Acts on plans: held until the operator accepts it, which nobody does.
    host.drop_plugin(components::PLAN_STEP, "plan-step.wasm");
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let runtime = app.caps().runtime().clone();
    host.accept(&runtime, "test.counter-safe").await;
    let caps = app.caps().clone();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();
    let api = capstan_tests::api::serve(app.clone()).await;
    let url = api.replace("/api/v1", "/mcp");
    let execute =
        capstan::http::keys::create(&db, "desktop agent", &[EffectClass::Execute], "admin:test").await.unwrap();
    let read = capstan::http::keys::create(&db, "reader", &[EffectClass::Read], "admin:test").await.unwrap();

    for (mode, protocol) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        // Every loaded capability, annotated from its label.
        let listed = client(&url, mode, &execute, "list", json!({})).await;
        assert_eq!((listed["protocol"].as_str(), listed["server"].as_str()), (Some(protocol), Some("capstan")));
        let all = names(&listed);
        for id in ["release.inspect", "download.submit", "test.counter-safe", "test.probe"] {
            assert!(all.contains(&id.to_string()), "{mode}: {id} is not listed: {all:?}");
        }
        assert!(caps.runtime().snapshot().held.contains_key("test.plan-step"));
        assert!(!all.contains(&"test.plan-step".to_string()), "a held component is offered to nobody");
        assert!(listed["tools"].as_array().unwrap().iter().all(|t| t["inputType"] == "object"), "{listed}");
        let inspect = tool(&listed, "release.inspect");
        assert_eq!(inspect["annotations"]["readOnlyHint"], true, "{inspect}");
        let counter = tool(&listed, "test.counter-safe");
        assert_eq!(
            (&counter["annotations"]["readOnlyHint"], &counter["annotations"]["destructiveHint"]),
            (&json!(false), &json!(true)),
            "{counter}"
        );
        assert_eq!(counter["annotations"]["idempotentHint"], true, "its replay policy is safe: {counter}");

        // A read key sees the read capabilities only, and cannot call the rest.
        let reader = names(&client(&url, mode, &read, "list", json!({})).await);
        assert!(reader.contains(&"release.inspect".to_string()), "{reader:?}");
        for id in ["download.submit", "test.counter-safe", "test.probe", "organize.execute"] {
            assert!(!reader.contains(&id.to_string()), "{mode}: a read key sees {id}");
        }
        let hidden = json!({"name": "test.counter-safe", "arguments": {"label": "v"}});
        let refused = client(&url, mode, &read, "call", hidden).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("unknown tool"), "{refused}");

        // A read: structured content, succeeded.
        let name = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX";
        let call = json!({"name": "release.inspect", "arguments": {"name": name}});
        let answered = client(&url, mode, &read, "call", call).await;
        let result = &answered["result"];
        assert_eq!((&result["isError"], &result["meta"]["capstan/status"]), (&json!(false), &json!("succeeded")));
        assert!(result["structured"].is_object() && result["text"].as_str().unwrap().contains("2160p"), "{result}");
        // Input the capability's schema refuses: an error result, not a crash.
        let wrong = json!({"name": "release.inspect", "arguments": {"title": 7}});
        let result = client(&url, mode, &read, "call", wrong).await["result"].clone();
        assert_eq!(result["isError"], true, "{result}");

        // Read-only resources: decisions waiting, the library, the audit verdict.
        let missing = json!({"missing": "capstan://nothing"});
        let read_back = client(&url, mode, &read, "resources", missing).await;
        let resources = &read_back["resources"];
        assert!(resources["capstan://decisions/awaiting"]["decisions"].is_array(), "{read_back}");
        assert!(resources["capstan://library"]["items"].is_array(), "{read_back}");
        assert!(resources["capstan://audit/verdict"]["Intact"].is_object(), "{read_back}");
        // Resource-not-found is -32002 through 2025-11-25, and -32602 since.
        let not_found = if mode == "legacy" { -32002 } else { -32602 };
        assert_eq!(read_back["missing"]["code"], not_found, "{read_back}");

        // An execute call without a grant: denied, nothing written.
        let count = json!({"name": "test.counter-safe", "arguments": {"label": mode}});
        let result = client(&url, mode, &execute, "call", count).await["result"].clone();
        let meta = &result["meta"];
        assert_eq!((&result["isError"], &meta["capstan/status"]), (&json!(true), &json!("failed")), "{result}");
        assert_eq!(meta["capstan/errorKind"], "denied", "{result}");
        assert!(result["text"].as_str().unwrap().contains("grant"), "it says what would allow it: {result}");
        assert_eq!(mock.writes(), 0);
    }

    // A client whose model refuses dots asks for plain names, and calls by them.
    let plain = format!("{url}?names=plain");
    let listed = names(&client(&plain, "legacy", &read, "list", json!({})).await);
    assert!(listed.contains(&"release_inspect".to_string()) && !listed.iter().any(|n| n.contains('.')), "{listed:?}");
    let call = json!({"name": "release_inspect", "arguments": {"name": "Heat.1995.1080p.BluRay.x264-GRP"}});
    let result = client(&plain, "legacy", &read, "call", call).await["result"].clone();
    assert_eq!(result["meta"]["capstan/status"], "succeeded", "{result}");

    // A denied call on a plan asks an administrator to approve that plan.
    let domain = &svc.domain;
    let (slot, release) = crate::storage::domain::wanted_movie(domain, &"d".repeat(40)).await;
    domain
        .match_identity(&release.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let sweep = capstan::domain::Author::new("task:evaluateAcquisition");
    let new = capstan::domain::NewPlan { slot_id: slot.id, source_release_id: release.id, note: None };
    let plan = domain.draft_plan(&sweep, &new).await.unwrap();
    let submit = json!({"name": "download.submit", "arguments": {"planId": plan.id}});
    let result = client(&url, "legacy", &execute, "call", submit).await["result"].clone();
    assert_eq!(result["isError"], true, "{result}");
    let approval_id = result["meta"]["capstan/approvalId"].as_str().unwrap_or_else(|| panic!("{result}")).to_string();
    assert!(result["text"].as_str().unwrap().contains("Approvals tab"), "{result}");
    let pending = svc.authz.approvals(Some(capstan::authz::ApprovalStatus::Pending)).await.unwrap();
    let key_id = execute.strip_prefix("cap_").unwrap().split('_').next().unwrap();
    assert_eq!(
        pending.iter().map(|a| (a.id.as_str(), a.plan_id.as_str(), a.requested_by.clone())).collect::<Vec<_>>(),
        [(approval_id.as_str(), plan.id.as_str(), format!("mcp:{key_id}"))]
    );
    assert_eq!(
        domain.plan(&plan.id).await.unwrap().status,
        capstan::domain::PlanStatus::Draft,
        "nothing was submitted"
    );

    // With a grant the call runs once, recorded as the key's over MCP.
    capstan_tests::grants::allow_everything(&svc).await;
    let count = json!({"name": "test.counter-safe", "arguments": {"label": "granted"}});
    let result = client(&url, "legacy", &execute, "call", count).await["result"].clone();
    assert_eq!((&result["isError"], &result["meta"]["capstan/status"]), (&json!(false), &json!("succeeded")));
    assert_eq!(mock.writes(), 1);
    // The same call named twice (a client or model retrying) changes once.
    for _ in 0..2 {
        let named = json!({"name": "test.counter-safe", "arguments": {"label": "named"},
            "meta": {"capstan/requestId": "retry-1"}});
        let result = client(&url, "legacy", &execute, "call", named).await["result"].clone();
        assert_eq!(result["meta"]["capstan/status"], "succeeded", "{result}");
    }
    assert_eq!(mock.writes(), 2, "the second call with the same requestId is the recorded answer");
    let rows = by_capability(&db, "test.counter-safe").await.unwrap();
    assert!(rows.len() == 2 && rows.iter().all(|r| r.principal == format!("mcp:{key_id}")), "{rows:?}");

    // A call the client gives up on stops, and its effect makes it unknown.
    let spin = json!({"action": "mkdir-then-spin", "root": "library", "path": "Half"});
    let cancel = json!({"name": "test.probe", "arguments": spin});
    let gave_up = client(&url, "legacy", &execute, "cancel", cancel).await;
    assert_eq!(gave_up["cancelled"], true, "{gave_up}");
    let started = Instant::now();
    loop {
        let rows = by_capability(&db, "test.probe").await.unwrap();
        if rows.first().is_some_and(|r| r.status == LedgerStatus::Unknown) {
            break;
        }
        let statuses: Vec<_> = rows.iter().map(|r| r.status).collect();
        assert!(started.elapsed() < Duration::from_secs(30), "the call was never stopped: {statuses:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(library.join("Half").is_dir(), "the effect ran before the stop");

    plain_http_is_refused_before_the_protocol(&url, &execute).await;
    let many = capstan::http::keys::create(&db, "many sessions", &[EffectClass::Read], "admin:test").await.unwrap();
    a_key_holds_a_bounded_number_of_sessions(&url, &many).await;
    a_session_is_told_when_the_tools_change(&url, &read, &host, &caps).await;
}

/// The SDK's client watching for tool changes in `mode`, once it has
/// listed them (and, in auto mode, opened its listen stream): the first
/// list, and the lines it prints after.
async fn watching(
    url: &str,
    mode: &str,
    key: &str,
) -> (tokio::process::Child, tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>, Value) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp/client.py");
    let mut child = tokio::process::Command::new(python())
        .args([script, url, mode, key, "watch"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    (child, lines, first)
}

/// A read key's session of the older revision lists its tools; the probe
/// is replaced by a read-labelled one and accepted; the session is told,
/// and lists it. Then a listen stream of the current revision is told
/// when the probe is removed.
async fn a_session_is_told_when_the_tools_change(
    url: &str,
    key: &str,
    host: &TestHost,
    caps: &capstan::pipeline::Capabilities,
) {
    let (mut child, mut lines, first) = watching(url, "legacy", key).await;
    assert!(!first["listed"].as_array().unwrap().contains(&json!("test.probe")), "{first}");
    host.drop_plugin(components::PROBE_LITE, "probe.wasm");
    // Its replay policy changes, so it is held until the operator accepts
    // it; held, it is offered to nobody.
    caps.runtime().rescan(false).await.unwrap();
    assert!(caps.runtime().snapshot().held.contains_key("test.probe"));
    host.accept(caps.runtime(), "test.probe").await;
    let last = lines.next_line().await.unwrap().unwrap_or_else(|| panic!("the client printed nothing more"));
    let last: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last["changed"], true, "{last}");
    assert!(last["tools"].as_array().unwrap().contains(&json!("test.probe")), "{last}");
    assert!(child.wait().await.unwrap().success());

    let (mut child, mut lines, first) = watching(url, "auto", key).await;
    assert!(first["listed"].as_array().unwrap().contains(&json!("test.probe")), "{first}");
    std::fs::remove_file(host.plugins().join("probe.wasm")).unwrap();
    caps.runtime().rescan(false).await.unwrap();
    let last = lines.next_line().await.unwrap().unwrap_or_else(|| panic!("the listening client printed nothing more"));
    let last: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last["changed"], true, "{last}");
    assert!(!last["tools"].as_array().unwrap().contains(&json!("test.probe")), "{last}");
    assert!(child.wait().await.unwrap().success());
}

/// What never reaches a tool: no key, another site's page, another Host,
/// malformed and batched JSON-RPC.
async fn plain_http_is_refused_before_the_protocol(url: &str, key: &str) {
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let post = |body: String| {
        http.post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
    };
    let answer = post(initialize.to_string()).send().await.unwrap();
    assert_eq!(answer.status(), 401);
    let challenge = answer.headers()["www-authenticate"].to_str().unwrap().to_string();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    let wrong = post(initialize.to_string()).bearer_auth("cap_nope_nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let foreign = post(initialize.to_string()).bearer_auth(key).header("origin", "https://evil.example");
    let answer = foreign.send().await.unwrap();
    assert_eq!(answer.status(), 403);
    let said: Value = answer.json().await.unwrap();
    assert!(said["error"]["message"].as_str().unwrap().contains("allowed_origins"), "{said}");
    let rebound = post(initialize.to_string()).bearer_auth(key).header("host", "attacker.example:4380");
    assert_eq!(rebound.send().await.unwrap().status(), 403);
    let local = post(initialize.to_string()).bearer_auth(key).header("origin", "http://localhost:6274");
    assert!(local.send().await.unwrap().status().is_success(), "a loopback page may call it");
    for bad in ["{not json", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]", "{\"jsonrpc\":\"2.0\"}"] {
        let status = post(bad.to_string()).bearer_auth(key).send().await.unwrap().status();
        assert!(status.is_client_error(), "{bad}: {status}");
    }
    // A body over 1 MiB is refused before it is parsed.
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(2 << 20)
    );
    assert_eq!(post(huge).bearer_auth(key).send().await.unwrap().status(), 413);
}

/// A key keeps at most 16 sessions of the older revision: opening another
/// ends its oldest, which then answers 404 (the protocol's word for a
/// session gone), while the newest answers.
async fn a_key_holds_a_bounded_number_of_sessions(url: &str, key: &str) {
    use capstan::http::mcp::sessions::MAX_SESSIONS_PER_KEY;
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let post = |body: &Value, session: Option<&str>| {
        let request = http
            .post(url)
            .bearer_auth(key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        match session {
            Some(id) => request.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25"),
            None => request,
        }
        .send()
    };
    let mut sessions = Vec::new();
    for _ in 0..=MAX_SESSIONS_PER_KEY {
        let answer = post(&initialize, None).await.unwrap();
        assert!(answer.status().is_success(), "{}", answer.status());
        sessions.push(answer.headers()["mcp-session-id"].to_str().unwrap().to_string());
    }
    let oldest = post(&ping, Some(&sessions[0])).await.unwrap();
    assert_eq!(oldest.status(), 404, "the oldest session was ended to make room");
    let newest = post(&ping, Some(sessions.last().unwrap())).await.unwrap();
    assert!(newest.status().is_success(), "{}", newest.status());
}
