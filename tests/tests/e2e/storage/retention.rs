//! What is kept and for how long, on both backends. Deleting a run removes
//! its session log, events, messages and the receipts of its writes whose
//! outcome is known; a run with a write whose outcome is open is kept,
//! marked deleted, until that write is settled, and the `pruneData` task
//! then removes it. Receipts made outside any run are pruned by that task
//! after `data.retention_days`; cleanup switched off or a retention of 0
//! prunes nothing; `running` and `unknown` receipts and the audit log are
//! never pruned.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use capstan::audit::Verdict;
use capstan::ledger::{Claim, ClaimRequest, Ledger, LedgerStatus, by_id};
use capstan::pipeline::Origin;
use capstan::runtime::{EffectClass, Status};
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::api::Api;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::agent::runs::{ended, set, stored_run, wait_run};
use crate::storage::ledger::{Env, env};

/// The API, a worker for agent runs and `pruneData`, and an execute key.
async fn start(env: &Env) -> Api {
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(5), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "retention".into(), config);
    let agent = Arc::new(env.app.new_agent());
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    capstan::retention::register(&mut worker, &agent, env.app.settings());
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    let key = capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "admin:test").await.unwrap();
    Api::new(&base).with_key(&key)
}

/// Runs `pruneData` once and returns what it reports.
async fn prune(env: &Env) -> Value {
    let task = capstan_tests::tasks::run_to_end(&env.db, capstan::retention::PRUNE_DATA, json!({})).await;
    task.result.unwrap()
}

/// Two writes: one the echo service takes, then a count — which crashes
/// after the service counted when the test asks it to.
const TWO_WRITES: &str = r#"{"scripts": [{"match": ["count"], "steps": [
  {"tools": [{"name": "test.probe", "input": {"action": "write", "service": "echo", "method": "POST", "path": "/echo"}}]},
  {"tools": [{"name": "test.counter-never", "input": {"label": "second"}}]}
], "finalText": "Counted."}]}"#;

async fn run_to_its_end(api: &Api) -> String {
    let (_, run) = api.post("/agent/runs", json!({"goal": "count twice"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    wait_run(api, &id, "ended", ended).await;
    id
}

async fn rows_of(env: &Env, table: &str, run: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE run_id = $1"))
        .bind(run)
        .fetch_one(&env.db.pool)
        .await
        .unwrap()
}

async fn deleting_a_run_removes_it_and_keeps_what_has_an_open_outcome(backend: Backend) {
    let env = env(backend).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    set(&env.app, &[("model.script", json!(TWO_WRITES))]).await;
    let api = start(&env).await;
    let agent = env.app.new_agent();

    // A run whose writes all settled goes whole.
    let gone = run_to_its_end(&api).await;
    assert!(!agent.sessions().lines(&gone).await.unwrap().is_empty());
    let (status, answer) = api.send(reqwest::Method::DELETE, &format!("/agent/runs/{gone}"), Value::Null).await;
    assert_eq!((status, answer["deleted"].as_str()), (200, Some("gone")), "{answer}");
    assert_eq!(api.get(&format!("/agent/runs/{gone}")).await.0, 404);
    assert!(agent.sessions().lines(&gone).await.unwrap().is_empty(), "the session log went");
    for table in ["agent_run_event", "agent_run_message", "capability_invocation"] {
        assert_eq!(rows_of(&env, table, &gone).await, 0, "{table}");
    }
    // Its own events left the global log too (what the invoke path logged
    // of its calls, like the audit log, stays).
    let global = api.json("/events?after=0&limit=1000").await;
    let own = global["events"].as_array().unwrap().iter().filter(|e| {
        e["kind"].as_str().is_some_and(|k| k.starts_with("agent.")) && e["payload"]["runId"] == gone.as_str()
    });
    assert_eq!(own.count(), 0, "{global}");

    // A run with a write whose outcome is open is kept, marked deleted:
    // its count crashes after its effect.
    env.mock.counters.crash_next.store(true, Ordering::SeqCst);
    let kept = run_to_its_end(&api).await;
    let receipts = capstan::ledger::for_run(&env.db, &kept).await.unwrap();
    let open: Vec<_> = receipts.iter().filter(|r| r.status == LedgerStatus::Unknown).collect();
    assert_eq!((receipts.len(), open.len()), (2, 1), "{receipts:?}");
    let (status, answer) = api.send(reqwest::Method::DELETE, &format!("/agent/runs/{kept}"), Value::Null).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!((answer["deleted"].as_str(), answer["openWrites"].as_i64()), (Some("kept"), Some(1)));
    let shown = api.json(&format!("/agent/runs/{kept}")).await;
    assert!(shown["run"]["deletedAt"].is_i64(), "{shown}");
    assert_eq!(shown["events"], json!([]));
    assert!(!api.json("/agent/runs").await.to_string().contains(&kept), "a deleted run is not listed");
    let left = capstan::ledger::for_run(&env.db, &kept).await.unwrap();
    assert_eq!(left.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [open[0].id.as_str()], "only the open one");
    assert!(agent.sessions().lines(&kept).await.unwrap().is_empty());
    let (status, _) = api.post(&format!("/agent/runs/{kept}/messages"), json!({"text": "go on"})).await;
    assert_eq!(status, 409, "a deleted run takes no message");
    assert_eq!(prune(&env).await["runsRemoved"], 0, "still open: still kept");
    assert!(by_id(&env.db, &open[0].id).await.unwrap().is_some());

    // Once the write is settled, the task removes the rest.
    let operator = Origin::cli(EffectClass::Execute);
    let checked = env.caps.check_open(&operator, &left[0], &json!({"label": "second"})).await.unwrap();
    assert!(matches!(checked, capstan::pipeline::ReplayCheck::Done(_)), "{checked:?}");
    assert_eq!(prune(&env).await["runsRemoved"], 1);
    assert_eq!(api.get(&format!("/agent/runs/{kept}")).await.0, 404);
    assert!(capstan::ledger::for_run(&env.db, &kept).await.unwrap().is_empty());

    // Refusals change nothing; the deletions are audited and the chain holds.
    let left = run_to_its_end(&api).await;
    let reader = capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "admin:test").await.unwrap();
    let (status, _) =
        api.with_key(&reader).send(reqwest::Method::DELETE, &format!("/agent/runs/{left}"), Value::Null).await;
    assert_eq!(status, 403);
    assert_eq!(api.get(&format!("/agent/runs/{left}")).await.0, 200, "still there");
    assert_eq!(api.send(reqwest::Method::DELETE, "/agent/runs/nope", Value::Null).await.0, 404);
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    let deletions: Vec<&str> =
        audit.iter().filter(|e| e.event.action == "agent_run.delete").map(|e| e.event.subject.as_str()).collect();
    assert_eq!(deletions, [gone.as_str(), kept.as_str()]);
    assert!(matches!(env.app.audit().verify().await.unwrap(), Verdict::Intact { .. }));
}

async fn a_running_run_is_not_deleted(backend: Backend) {
    let env = env(backend).await;
    let agent = env.app.new_agent();
    let running = [capstan::agent::runs::RunStatus::Running];
    let run = stored_run(&agent, capstan::agent::runs::RunMode::PlanOnly, &running).await;
    let api = start(&env).await;
    let (status, answer) = api.send(reqwest::Method::DELETE, &format!("/agent/runs/{}", run.id), Value::Null).await;
    assert_eq!(status, 409, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("abort it"), "{answer}");
    assert_eq!(api.json(&format!("/agent/runs/{}", run.id)).await["messages"].as_array().unwrap().len(), 1);
}

/// A receipt of a call outside any run, `days` old.
async fn age(env: &Env, id: &str, days: i64) {
    sqlx::query("UPDATE capability_invocation SET updated_at = $2 WHERE id = $1")
        .bind(id)
        .bind(capstan::store::now_ms() - days * 86_400_000)
        .execute(&env.db.pool)
        .await
        .unwrap();
}

async fn receipts_outside_runs_are_pruned_after_the_retention(backend: Backend) {
    let env = env(backend).await;
    start(&env).await;
    let operator = Origin::cli(EffectClass::Execute);
    let count = |label: &'static str| {
        let caps = env.caps.clone();
        let operator = operator.clone();
        async move { caps.invoke(&operator, "test.counter-never", &json!({"label": label})).await.unwrap() }
    };
    let old = count("old").await;
    let recent = count("recent").await;
    env.mock.counters.crash_next.store(true, Ordering::SeqCst);
    let unknown = count("unknown").await;
    assert_eq!(unknown.status, Status::Unknown);
    let dead = Ledger::new(env.db.clone(), "gone".into());
    let request = ClaimRequest {
        key: "test.counter-never:v1:req:old:x".into(),
        capability_id: "test.counter-never".into(),
        capability_version: 1,
        actor_kind: "cli".into(),
        principal: "cli:someone".into(),
        run_id: None,
        task_id: None,
        tool_call_id: None,
        input_digest: "x".into(),
    };
    let Claim::Claimed { id: running, .. } = dead.claim(&request).await.unwrap() else { panic!() };
    let ids = |inv: &capstan::pipeline::Invocation| inv.invocation_id.clone().unwrap();
    for id in [ids(&old), ids(&unknown), running.clone()] {
        age(&env, &id, 40).await;
    }
    age(&env, &ids(&recent), 10).await;
    let audit_before = env.app.audit().list(0, 10_000).await.unwrap().len();

    // Off, or kept for ever: nothing goes.
    set(&env.app, &[("data.cleanup_enabled", json!(false))]).await;
    assert_eq!(prune(&env).await["pruning"], "off");
    set(&env.app, &[("data.cleanup_enabled", json!(true)), ("data.retention_days", json!(0))]).await;
    assert_eq!(prune(&env).await["pruning"], "off");
    assert!(by_id(&env.db, &ids(&old)).await.unwrap().is_some());

    // 30 days: the old settled receipt goes; the recent one, the unknown
    // one and the running one stay.
    set(&env.app, &[("data.retention_days", json!(30))]).await;
    let report = prune(&env).await;
    assert_eq!((report["receiptsRemoved"].as_u64(), report["retentionDays"].as_u64()), (Some(1), Some(30)), "{report}");
    assert!(by_id(&env.db, &ids(&old)).await.unwrap().is_none());
    for kept in [ids(&recent), ids(&unknown), running] {
        assert!(by_id(&env.db, &kept).await.unwrap().is_some(), "{kept} was kept");
    }
    let audit = env.app.audit().list(0, 10_000).await.unwrap();
    assert!(audit.len() >= audit_before, "the audit log is never pruned");
    assert!(matches!(env.app.audit().verify().await.unwrap(), Verdict::Intact { .. }));

    // Bad settings are refused and change nothing.
    let mut bad = serde_json::Map::new();
    bad.insert("data.retention_days".into(), json!(-1));
    assert!(env.app.settings().update(&bad).await.is_err());
    assert_eq!(env.app.settings().get("data.retention_days").await.unwrap(), json!(30));
}

both_backends!(
    deleting_a_run_removes_it_and_keeps_what_has_an_open_outcome,
    a_running_run_is_not_deleted,
    receipts_outside_runs_are_pruned_after_the_retention
);
