//! An agent run with the operator's commands: it runs and watches one
//! through `system.command` and `system.command-output` with the scripted
//! model, and reads its archived output with `read_tool_result`; aborting
//! the run while a command runs stops its whole process group and leaves
//! the call `result unknown`; a command the run started is stopped when
//! the run ends, and one a cancelled task runs when the task is dropped;
//! over HTTP a key needs the execute scope (and a grant) to run one; the
//! same command asked for twice in one request runs twice.

use std::sync::Arc;
use std::time::Duration;

use capstan::runtime::EffectClass;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::api::{Api, serve};
use serde_json::{Value, json};

use super::runs::{ended, events_of, set, wait_run};
use crate::sandbox::commands::{env, processes_with, until};

const SCRIPT: &str = r#"{"scripts": [
  {"match": ["check"], "steps": [
     {"tools": [{"name": "system.command", "input": {"action": "start", "command": "hello"}}]},
     {"tools": [{"name": "system.command-output", "input": {"action": "wait", "handle": "{{system.command.handle}}", "timeout_ms": 20000}}]},
     {"tools": [{"name": "read_tool_result", "input": {"result_id": "{{system.command.output_file}}", "offset": 1}}]}],
   "finalText": "It said: {{system.command-output.output}}, from its second byte {{read_tool_result.text}}"},
  {"match": ["linger"], "steps": [
     {"tools": [{"name": "system.command", "input": {"action": "start", "command": "stubborn"}}]}],
   "finalText": "Started {{system.command.handle}}."},
  {"match": ["twice"], "steps": [
     {"tools": [{"name": "system.command", "input": {"action": "run", "command": "hello"}}]},
     {"tools": [{"name": "system.command", "input": {"action": "run", "command": "hello"}}]}],
   "finalText": "Ran it twice."},
  {"match": ["block"], "steps": [
     {"tools": [{"name": "system.command", "input": {"action": "run", "command": "stubborn"}}]}],
   "finalText": "Done."}
]}"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_runs_and_watches_commands_and_nothing_it_started_outlives_it() {
    let env = env(3142).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    set(&env.app, &[("model.script", json!(SCRIPT))]).await;
    // Calls may wait for a command up to a minute.
    let base = serve(env.app.clone()).await;
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(5), concurrency: 4 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "commands".into(), config);
    let agent = Arc::new(env.app.new_agent());
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    let invoke = Arc::new(capstan::pipeline::InvokeCapability(env.caps.clone()));
    worker.handle(capstan::pipeline::INVOKE_CAPABILITY, invoke);
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    let key = capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "admin:test").await.unwrap();
    let api = Api::new(&base).with_key(&key);

    // Started, then watched to its end, with the scripted model.
    let (_, run) = api.post("/agent/runs", json!({"goal": "check the machine"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    assert_eq!(body["run"]["finalText"], "It said: hello\n, from its second byte ello\n");

    // The same diagnostic asked for twice in one request runs twice: a
    // command keeps nothing in the domain, so each tool call is its own
    // execution, not a replay of the first.
    let (_, run) = api.post("/agent/runs", json!({"goal": "run it twice"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    let rows = capstan::ledger::for_run(&env.db, &id).await.unwrap();
    let ran: Vec<_> = rows.iter().filter(|r| r.capability_id == "system.command").collect();
    assert_eq!(ran.len(), 2, "two executions: {rows:?}");
    assert!(ran.iter().all(|r| r.status == capstan::ledger::LedgerStatus::Succeeded), "{rows:?}");
    assert_ne!(ran[0].idempotency_key, ran[1].idempotency_key);
    let replayed = events_of(&body, "agent.tool_call").iter().any(|e| e["payload"]["replayed"] == true);
    assert!(!replayed, "neither call was a replay: {body}");

    // A command the run started stops when the run ends.
    let (_, run) = api.post("/agent/runs", json!({"goal": "linger a while"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    wait_run(&api, &id, "ended", ended).await;
    until("the run's command is stopped with it", || processes_with("sleep 3142") == 0).await;

    // Aborted while a command runs: the group is stopped, the call is
    // `result unknown` (it may have done its work), nothing is replayed.
    let (_, run) = api.post("/agent/runs", json!({"goal": "block on it"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    until("the command runs", || processes_with("sleep 3142") == 2).await;
    let (status, _) = api.post(&format!("/agent/runs/{id}/abort"), json!({"reason": "enough"})).await;
    assert_eq!(status, 200);
    let body = wait_run(&api, &id, "cancelled", ended).await;
    assert_eq!(body["run"]["status"], "cancelled", "{body}");
    until("its group is gone", || processes_with("sleep 3142") == 0).await;
    let calls: Vec<&Value> = events_of(&body, "agent.snapshot").iter().map(|e| &e["payload"]["calls"][0]).collect();
    assert_eq!(calls[0]["state"], "result_unknown", "{body}");
    let rows = capstan::ledger::for_run(&env.db, &id).await.unwrap();
    assert_eq!(rows[0].status, capstan::ledger::LedgerStatus::Unknown, "{rows:?}");

    // Over HTTP: the execute scope (and the grant) run one; a read key not.
    let (status, inv) =
        api.post("/capabilities/system.command/invoke", json!({"input": {"action": "run", "command": "hello"}})).await;
    assert_eq!((status, inv["status"].as_str()), (200, Some("succeeded")), "{inv}");
    assert_eq!(inv["output"]["output"], "hello\n");
    let reader = capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "admin:test").await.unwrap();
    let (status, _) = api
        .with_key(&reader)
        .post("/capabilities/system.command/invoke", json!({"input": {"action": "run", "command": "hello"}}))
        .await;
    assert_eq!(status, 403);

    // A task running a command, cancelled: its worker drops it at the next
    // lease renewal, and the process group goes with it.
    let tasks = Tasks::new(env.db.clone());
    let (task, _) = tasks
        .enqueue(&capstan::tasks::NewTask {
            kind: capstan::pipeline::INVOKE_CAPABILITY.into(),
            subject: None,
            payload: json!({"capability": "system.command", "input": {"action": "run", "command": "stubborn"}}),
            dedupe_key: None,
            max_attempts: 1,
            created_by: "admin:test".into(),
        })
        .await
        .unwrap();
    until("the task's command runs", || processes_with("sleep 3142") == 2).await;
    tasks.cancel(&task.id).await.unwrap();
    until("the cancelled task's command is stopped", || processes_with("sleep 3142") == 0).await;
}
