//! The ledger rules, through the one invoke path, on SQLite and on
//! PostgreSQL. Effects are counted by a loopback test server that the
//! counter components write to.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use capstan::audit::Verdict;
use capstan::config::{Auth, ServiceConfig};
use capstan::ledger::{ClaimRequest, Ledger, LedgerError, LedgerStatus, by_id};
use capstan::pipeline::{Capabilities, Invocation, Origin};
use capstan::runtime::{EffectClass, Status};
use capstan::store::Db;
use capstan_tests::both_backends;
use capstan_tests::components;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::mock_service::MockService;
use serde_json::json;

pub struct Env {
    /// Keeps the temporary data directory alive for the test.
    pub _host: TestHost,
    pub mock: MockService,
    pub db: Db,
    /// What `capstan serve` builds; `caps` is its invoke path.
    pub app: Arc<capstan::app::App>,
    pub caps: Arc<Capabilities>,
    pub svc: capstan::pipeline::Services,
}

pub async fn env(backend: Backend) -> Env {
    let mock = MockService::start().await;
    let host = TestHost::new();
    let url = fresh_url(backend, host.dir.path()).await;
    let (host, db, app) = node(host, &mock.base_url(), &url).await;
    let caps = app.caps().clone();
    let svc = app.services().clone();
    Env { _host: host, mock, db, app, caps, svc }
}

/// Another process over `env`'s database, with a data folder of its own
/// (nothing shared with the first but the database and the counted
/// service), as a second node of a cluster is.
pub async fn another_node(env: &Env) -> (TestHost, Arc<capstan::app::App>) {
    let (host, _, app) = node(TestHost::new(), &env.mock.base_url(), &env.db.url).await;
    (host, app)
}

/// `host` started as the ledger suites use it, over the database at `url`,
/// its services at `service_url`, the test plugins accepted.
async fn node(mut host: TestHost, service_url: &str, url: &str) -> (TestHost, Db, Arc<capstan::app::App>) {
    let service = ServiceConfig {
        base_url: service_url.to_string(),
        auth: Auth::None,
        operations: Vec::new(),
        timeout_ms: 5_000,
        response_cap_bytes: 1 << 20,
    };
    host.config.services.insert("echo".into(), service.clone());
    host.config.services.insert("counter".into(), service);
    let probe = capstan::config::CapabilityConfig { deadline_ms: Some(1_000), ..Default::default() };
    host.config.capabilities.insert("test.probe".into(), probe);
    for (component, file) in [
        (components::COUNTER_SAFE, "safe.wasm"),
        (components::COUNTER_VERIFY, "verify.wasm"),
        (components::COUNTER_NEVER, "never.wasm"),
        (components::PROBE, "probe.wasm"),
        (components::PLAN_STEP, "plan-step.wasm"),
    ] {
        host.drop_plugin(component, file);
    }
    let db = Db::open(url).await.unwrap();
    // Plugins acting on plans or under a policy wait for the operator.
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    for id in ["test.plan-step", "test.counter-safe", "test.counter-verify", "test.counter-never"] {
        host.accept(app.caps().runtime(), id).await;
    }
    app.flush_component_events().await.unwrap();
    app.services().ledger.heartbeat().await.unwrap();
    (host, db, app)
}

fn operator() -> Origin {
    Origin::cli(EffectClass::Execute)
}

async fn count(env: &Env, id: &str, origin: &Origin, label: &str) -> Invocation {
    env.caps.invoke(origin, id, &json!({ "label": label })).await.unwrap()
}

async fn recorded_success_is_returned_without_calling(backend: Backend) {
    let env = env(backend).await;
    let origin = operator();
    let first = count(&env, "test.counter-safe", &origin, "a").await;
    assert_eq!(first.status, Status::Succeeded, "{:?}", first.error);
    assert!(!first.replayed);
    let again = count(&env, "test.counter-safe", &origin, "a").await;
    assert_eq!(again.status, Status::Succeeded);
    assert!(again.replayed);
    assert_eq!(again.output, first.output);
    assert_eq!(env.mock.writes(), 1, "the recorded result was returned without calling");
    // A new explicit request may run a completed operation again.
    let fresh = count(&env, "test.counter-safe", &operator(), "a").await;
    assert!(!fresh.replayed);
    assert_eq!(env.mock.writes(), 2);
}

async fn same_tool_call_with_other_input_is_a_conflict(backend: Backend) {
    let env = env(backend).await;
    let mut origin = operator();
    origin.run_id = Some("run-1".into());
    origin.tool_call_id = Some("call-1".into());
    assert_eq!(count(&env, "test.counter-safe", &origin, "a").await.status, Status::Succeeded);
    let clash = count(&env, "test.counter-safe", &origin, "b").await;
    assert_eq!(clash.status, Status::Failed);
    assert_eq!(clash.error.unwrap().kind, "conflict");
    assert_eq!(env.mock.writes(), 1, "nothing ran for the conflicting call");
}

async fn sixteen_identical_calls_run_once(backend: Backend) {
    let env = env(backend).await;
    let origin = operator();
    let mut calls = Vec::new();
    for _ in 0..16 {
        let caps = env.caps.clone();
        let origin = origin.clone();
        calls.push(tokio::spawn(async move {
            caps.invoke(&origin, "test.counter-safe", &json!({"label": "same"})).await.unwrap()
        }));
    }
    let mut outputs = Vec::new();
    for call in calls {
        let inv = call.await.unwrap();
        assert_eq!(inv.status, Status::Succeeded, "{:?}", inv.error);
        outputs.push(inv.output.unwrap());
    }
    assert_eq!(env.mock.writes(), 1, "exactly one component call");
    assert!(outputs.iter().all(|o| *o == outputs[0]), "all 16 got the same result: {outputs:?}");
}

async fn stale_finish_is_rejected_and_orphans_become_unknown(backend: Backend) {
    let env = env(backend).await;
    let dead = Ledger::new(env.db.clone(), "process-that-died".into());
    let req = ClaimRequest {
        key: "test.counter-safe:v1:req:x:digest".into(),
        capability_id: "test.counter-safe".into(),
        capability_version: 1,
        actor_kind: "cli".into(),
        principal: "cli:test".into(),
        run_id: None,
        task_id: None,
        tool_call_id: None,
        input_digest: "digest".into(),
    };
    let capstan::ledger::Claim::Claimed { id, token } = dead.claim(&req).await.unwrap() else { panic!("first claim") };
    // The new process starts: the dead owner never sent a heartbeat.
    let recovered = env.svc.ledger.recover_orphans().await.unwrap();
    assert_eq!(recovered, 1);
    let row = by_id(&env.db, &id).await.unwrap().unwrap();
    assert_eq!(row.status, LedgerStatus::Unknown);
    assert_ne!(row.claim_token, token, "recovery gives the row a new token");
    let late = dead.finish(&id, &token, LedgerStatus::Succeeded, Some("{}"), None, true).await;
    assert!(matches!(late, Err(LedgerError::StaleToken(_))), "{late:?}");
    assert_eq!(
        by_id(&env.db, &id).await.unwrap().unwrap().status,
        LedgerStatus::Unknown,
        "the late finish changed nothing"
    );
    // Nothing is replayed merely because time passed: recovery again is a no-op.
    assert_eq!(env.svc.ledger.recover_orphans().await.unwrap(), 0);
}

/// Makes the next call crash after its effect, leaving an `unknown` row.
async fn crash_once(env: &Env, id: &str, origin: &Origin) -> Invocation {
    env.mock.counters.crash_next.store(true, Ordering::SeqCst);
    let inv = count(env, id, origin, "replay").await;
    assert_eq!(inv.status, Status::Unknown, "a trap after the effect is unknown: {:?}", inv.error);
    assert_eq!(env.mock.writes(), 1);
    let row = by_id(&env.db, inv.invocation_id.as_deref().unwrap()).await.unwrap().unwrap();
    assert_eq!(row.status, LedgerStatus::Unknown);
    assert!(row.effect_started);
    inv
}

async fn replay_safe_runs_again(backend: Backend) {
    let env = env(backend).await;
    let origin = operator();
    let first = crash_once(&env, "test.counter-safe", &origin).await;
    let again = count(&env, "test.counter-safe", &origin, "replay").await;
    assert_eq!(again.status, Status::Succeeded);
    assert_eq!(again.invocation_id, first.invocation_id, "the same ledger row");
    assert_eq!(env.mock.writes(), 2, "safe: re-run with the same key");
}

async fn replay_verify_asks_first(backend: Backend) {
    let env = env(backend).await;
    let origin = operator();
    crash_once(&env, "test.counter-verify", &origin).await;
    let again = count(&env, "test.counter-verify", &origin, "replay").await;
    assert_eq!(again.status, Status::Succeeded, "{:?}", again.error);
    assert!(again.replayed);
    assert_eq!(env.mock.writes(), 1, "verify found the effect had happened; nothing re-ran");
}

async fn replay_never_leaves_it_unknown(backend: Backend) {
    let env = env(backend).await;
    let origin = operator();
    crash_once(&env, "test.counter-never", &origin).await;
    let again = count(&env, "test.counter-never", &origin, "replay").await;
    assert_eq!(again.status, Status::Unknown);
    assert_eq!(env.mock.writes(), 1, "never: left for a human");
}

async fn bad_input_never_reaches_the_ledger(backend: Backend) {
    let env = env(backend).await;
    let inv = env.caps.invoke(&operator(), "test.counter-safe", &json!({"label": 5})).await.unwrap();
    assert_eq!(inv.status, Status::Failed);
    assert_eq!(inv.error.unwrap().kind, "invalid-input");
    assert!(inv.invocation_id.is_none(), "bad input never reaches the ledger");
    assert_eq!(env.mock.writes(), 0);
}

async fn a_trap_before_any_effect_is_failed(backend: Backend) {
    let env = env(backend).await;
    let inv = env.caps.invoke(&operator(), "test.probe", &json!({"action": "spin"})).await.unwrap();
    assert_eq!(inv.status, Status::Failed);
    assert_eq!(inv.error.as_ref().unwrap().kind, "deadline");
    let row = by_id(&env.db, inv.invocation_id.as_deref().unwrap()).await.unwrap().unwrap();
    assert_eq!(row.status, LedgerStatus::Failed);
    assert!(!row.effect_started);
}

async fn retention_keeps_running_and_unknown(backend: Backend) {
    let env = env(backend).await;
    let ok = count(&env, "test.counter-safe", &operator(), "kept?").await;
    let unknown = crash_once_label(&env).await;
    let running = Ledger::new(env.db.clone(), "someone".into());
    let req = ClaimRequest {
        key: "k-running".into(),
        capability_id: "test.counter-safe".into(),
        capability_version: 1,
        actor_kind: "cli".into(),
        principal: "cli:test".into(),
        run_id: None,
        task_id: None,
        tool_call_id: None,
        input_digest: "d".into(),
    };
    let capstan::ledger::Claim::Claimed { id: running_id, .. } = running.claim(&req).await.unwrap() else { panic!() };
    sqlx::query("UPDATE capability_invocation SET updated_at = 0").execute(&env.db.pool).await.unwrap();
    let removed = env.svc.ledger.prune(std::time::Duration::from_secs(1)).await.unwrap();
    assert_eq!(removed, 1);
    assert!(by_id(&env.db, ok.invocation_id.as_deref().unwrap()).await.unwrap().is_none());
    assert!(by_id(&env.db, unknown.invocation_id.as_deref().unwrap()).await.unwrap().is_some());
    assert!(by_id(&env.db, &running_id).await.unwrap().is_some());
}

async fn crash_once_label(env: &Env) -> Invocation {
    env.mock.counters.crash_next.store(true, Ordering::SeqCst);
    let inv = count(env, "test.counter-never", &operator(), "crash").await;
    assert_eq!(inv.status, Status::Unknown);
    inv
}

async fn automated_callers_and_plan_only_runs_are_gated(backend: Backend) {
    let env = env(backend).await;
    let mut agent = operator();
    agent.actor = capstan::runtime::Actor::Agent;
    let denied = count(&env, "test.counter-safe", &agent, "x").await;
    assert_eq!(denied.status, Status::Failed);
    assert!(denied.error.unwrap().message.contains("needs an approval or an automation grant"));
    let mut plan = operator();
    plan.mode = capstan::runtime::Mode::PlanOnly;
    let gated = count(&env, "test.counter-safe", &plan, "x").await;
    assert!(gated.error.unwrap().message.contains("plan-only"));
    assert_eq!(env.mock.writes(), 0);
    let events = env.app.audit().list(0, 100).await.unwrap();
    assert_eq!(events.iter().filter(|e| e.event.action == "capability.denied").count(), 2);
}

async fn the_audit_chain_finds_an_altered_row(backend: Backend) {
    let env = env(backend).await;
    for label in ["a", "b", "c"] {
        count(&env, "test.counter-safe", &operator(), label).await;
    }
    let audit = env.app.audit();
    let events = audit.list(0, 100).await.unwrap();
    assert_eq!(audit.verify().await.unwrap(), capstan::audit::Verdict::Intact { events: events.len() as i64 });
    let invokes: Vec<_> = events.iter().filter(|e| e.event.action == "capability.invoke").collect();
    assert_eq!(invokes.len(), 3);
    assert!(invokes.iter().all(|e| e.event.input_summary.as_deref() == Some("{label:string(1)}")));
    let altered = invokes[1].seq;
    sqlx::query("UPDATE audit_event SET outcome = 'failed' WHERE seq = $1")
        .bind(altered)
        .execute(&env.db.pool)
        .await
        .unwrap();
    match audit.verify().await.unwrap() {
        capstan::audit::Verdict::Broken { seq, .. } => assert_eq!(seq, altered),
        other => panic!("tampering was not found: {other:?}"),
    }
}

/// The online check reads only what was appended since the last check,
/// finds a change to the event it last reached, and leaves a change further
/// back to the full walk, which finds it.
async fn the_online_check_reads_only_what_is_new(backend: Backend) {
    let env = env(backend).await;
    for label in ["a", "b", "c"] {
        count(&env, "test.counter-safe", &operator(), label).await;
    }
    let audit = env.app.audit();
    let all = audit.list(0, 1000).await.unwrap().len() as i64;
    let first = audit.verify_new().await.unwrap();
    assert_eq!(
        first,
        capstan::audit::ChainCheck { verdict: Verdict::Intact { events: all }, checked: all, since: 0, waiting: 0 }
    );
    let again = audit.verify_new().await.unwrap();
    assert_eq!((again.verdict.clone(), again.checked, again.since), (Verdict::Intact { events: all }, 0, all));
    count(&env, "test.counter-safe", &operator(), "d").await;
    let now = audit.list(0, 1000).await.unwrap().len() as i64;
    let newer = audit.verify_new().await.unwrap();
    assert_eq!((newer.verdict, newer.checked, newer.since), (Verdict::Intact { events: now }, now - all, all));

    // A change to the event the last check reached is found at once.
    sqlx::query("UPDATE audit_event SET outcome = 'failed' WHERE seq = $1")
        .bind(now)
        .execute(&env.db.pool)
        .await
        .unwrap();
    match audit.verify_new().await.unwrap().verdict {
        Verdict::Broken { seq, reason } => assert!(seq == now && reason.contains("full walk"), "{reason}"),
        other => panic!("the change was not found: {other:?}"),
    }
    // The full walk finds it too, and a change further back as well.
    sqlx::query("UPDATE audit_event SET outcome = 'failed' WHERE seq = 2").execute(&env.db.pool).await.unwrap();
    match audit.verify().await.unwrap() {
        Verdict::Broken { seq, .. } => assert_eq!(seq, 2),
        other => panic!("the change was not found: {other:?}"),
    }
}

both_backends!(
    the_online_check_reads_only_what_is_new,
    recorded_success_is_returned_without_calling,
    same_tool_call_with_other_input_is_a_conflict,
    sixteen_identical_calls_run_once,
    stale_finish_is_rejected_and_orphans_become_unknown,
    replay_safe_runs_again,
    replay_verify_asks_first,
    replay_never_leaves_it_unknown,
    bad_input_never_reaches_the_ledger,
    a_trap_before_any_effect_is_failed,
    retention_keeps_running_and_unknown,
    automated_callers_and_plan_only_runs_are_gated,
    the_audit_chain_finds_an_altered_row,
);

async fn component_changes_are_audited_once(backend: Backend) {
    let env = env(backend).await;
    std::fs::write(env._host.plugins().join("junk.wasm"), b"not wasm").unwrap();
    env.caps.runtime().rescan(false).await.unwrap();
    env.app.flush_component_events().await.unwrap();
    let events = env.app.audit().list(0, 1000).await.unwrap();
    let of = |action: &str, subject: &str| {
        events.iter().filter(|e| e.event.action == action && e.event.subject.ends_with(subject)).count()
    };
    assert_eq!(of("component.loaded", "release.inspect"), 1);
    assert_eq!(of("component.loaded", "test.counter-safe"), 1);
    assert_eq!(of("component.refused", "junk.wasm"), 1);
    // Scanning again, or another process starting on the same data, adds nothing.
    env.caps.runtime().rescan(false).await.unwrap();
    let again = capstan::app::App::start(env._host.config.clone(), env.db.clone(), "second".into()).await.unwrap();
    again.flush_component_events().await.unwrap();
    env.app.flush_component_events().await.unwrap();
    assert_eq!(env.app.audit().list(0, 1000).await.unwrap().len(), events.len());
    assert_eq!(
        env.app.audit().verify().await.unwrap(),
        capstan::audit::Verdict::Intact { events: events.len() as i64 }
    );
}

both_backends!(component_changes_are_audited_once);
