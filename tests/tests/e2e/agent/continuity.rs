//! A conversation with a run over time: a follow-up ("how far are you?",
//! "continue", "继续") keeps the run's plan and request scope, so a write
//! the task made already is not made again; only a message that starts a
//! new task drops the plan and may write again. An aborted run lets go of
//! a call in flight as "result unknown" and of the calls after it as "not
//! run"; a message reopens it, and what it left open is checked read-only
//! before it goes on. On SQLite and PostgreSQL; on PostgreSQL another node
//! with a data folder of its own goes on with a conversation.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use capstan::agent::StartError;
use capstan::agent::runs::{RunError, RunMode, RunStatus};
use capstan::ledger::LedgerStatus;
use capstan::runtime::EffectClass;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use serde_json::{Value, json};

use capstan_tests::api::Api;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;

use super::runs::{ended, events_of, set, start, stored_run, wait_run};
use crate::storage::ledger::{Env, another_node, env};

/// A task that plans and counts once; follow-ups that count again with the
/// same arguments; and another task that counts without a plan.
const CONVERSATION: &str = r#"{"scripts": [
  {"match": ["how far", "continue", "继续"],
   "steps": [{"tools": [{"name": "test.counter-safe", "input": {"label": "once"}}]}],
   "finalText": "Still at {{test.counter-safe.count}}."},
  {"match": ["tally"],
   "steps": [{"tools": [{"name": "test.counter-safe", "input": {"label": "once"}}]}],
   "finalText": "Tallied {{test.counter-safe.count}}."},
  {"match": ["count"],
   "steps": [{"tools": [
     {"name": "update_plan", "input": {"goal": "Count once", "steps": [{"title": "count", "status": "in_progress"}]}},
     {"name": "test.counter-safe", "input": {"label": "once"}}]}],
   "finalText": "Counted to {{test.counter-safe.count}}."}
]}"#;

/// The counter calls that finished in the run, by whether they replayed.
fn counter_replays(body: &Value) -> Vec<bool> {
    events_of(body, "agent.tool_call")
        .iter()
        .filter(|e| e["payload"]["phase"] == "finished" && e["payload"]["name"] == "test.counter-safe")
        .map(|e| e["payload"]["replayed"].as_bool().unwrap())
        .collect()
}

async fn a_follow_up_keeps_the_plan_and_only_a_new_task_writes_again(backend: Backend) {
    let env = env(backend).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    set(&env.app, &[("model.script", json!(CONVERSATION))]).await;
    let api = start(&env).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "count once"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    assert_eq!(body["run"]["plan"]["goal"], "Count once", "{body}");
    assert_eq!(env.mock.writes(), 1);

    // Follow-ups go on with the task: the plan stays, and the same write
    // in the same request scope is answered from the ledger.
    let mut calls = 2;
    for text in ["how far are you?", "continue", "继续"] {
        let (status, answer) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": text})).await;
        assert_eq!(status, 200, "{answer}");
        calls += 1;
        let body = wait_run(&api, &id, "answered", |r| ended(r) && r["toolCalls"] == calls).await;
        assert_eq!(body["run"]["status"], "succeeded", "{text}: {body}");
        assert_eq!(body["run"]["plan"]["goal"], "Count once", "{text} keeps the plan: {body}");
        assert_eq!(body["run"]["finalText"], "Still at 1.", "{body}");
        assert_eq!(counter_replays(&body).last(), Some(&true), "{text}: {body}");
        assert_eq!(env.mock.writes(), 1, "{text} wrote nothing again");
    }

    // A new task drops the plan and opens a new request scope.
    let (status, _) =
        api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "tally up", "newTask": true})).await;
    assert_eq!(status, 200);
    let body = wait_run(&api, &id, "answered", |r| ended(r) && r["toolCalls"] == calls + 1).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    assert_eq!(body["run"]["plan"], Value::Null, "a new task starts without the old plan: {body}");
    assert_eq!(body["run"]["finalText"], "Tallied 2.", "{body}");
    assert_eq!(env.mock.writes(), 2, "the new task wrote again");
    let rows = capstan::ledger::for_run(&env.db, &id).await.unwrap();
    assert_eq!(rows.len(), 2, "one receipt per task: {rows:?}");
    let messages = body["messages"].as_array().unwrap();
    let new_tasks: Vec<bool> = messages.iter().map(|m| m["newTask"].as_bool().unwrap()).collect();
    assert_eq!(new_tasks, [true, false, false, false, true], "the goal starts a task; so does the last");
    let plans: Vec<&Value> = events_of(&body, "agent.plan").iter().map(|e| &e["payload"]["plan"]).collect();
    assert_eq!(plans.len(), 2, "set once, dropped once: {plans:?}");
    assert_eq!(plans[1], &Value::Null);

    // newTask must be a boolean; nothing is sent otherwise.
    let (status, _) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "x", "newTask": "yes"})).await;
    assert_eq!(status, 422);
    assert_eq!(api.json(&format!("/agent/runs/{id}")).await["messages"].as_array().unwrap().len(), 5);
}

both_backends!(a_follow_up_keeps_the_plan_and_only_a_new_task_writes_again);

/// On PostgreSQL a run's session log is in the database: a follow-up that
/// another node takes (a data folder of its own, nothing shared with the
/// first but the database) goes on with the conversation the first node
/// wrote, and neither node keeps a log file.
#[tokio::test(flavor = "multi_thread")]
async fn another_node_goes_on_with_the_conversation_the_first_wrote() {
    let env = env(Backend::Postgres).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    set(&env.app, &[("model.script", json!(CONVERSATION))]).await;
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let key = capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "admin:test").await.unwrap();
    let api = Api::new(&base).with_key(&key);
    let first = worker_of(&env.app);
    let (_, run) = api.post("/agent/runs", json!({"goal": "count once"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");

    // The first node's worker stops; a second node's takes the follow-up.
    first.abort();
    let (second_host, second) = another_node(&env).await;
    let _second_worker = worker_of(&second);
    let (status, answer) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "continue"})).await;
    assert_eq!(status, 200, "{answer}");
    let body = wait_run(&api, &id, "answered", |r| ended(r) && r["toolCalls"] == 3).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    assert_eq!(body["run"]["plan"]["goal"], "Count once", "the plan the first node wrote: {body}");
    assert_eq!(counter_replays(&body).last(), Some(&true), "the same write, answered from the ledger: {body}");
    assert_eq!(env.mock.writes(), 1);

    // The second node read the conversation the first wrote and went on
    // after it, in one log.
    let session = second.new_agent().sessions().read(&id).await.unwrap();
    let asked: Vec<String> = session
        .messages
        .iter()
        .filter(|m| m.role == capstan::agent::providers::Role::User)
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            capstan::agent::providers::Block::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(asked.first().is_some_and(|t| t == "count once"), "{asked:?}");
    assert!(asked.iter().any(|t| t == "continue"), "{asked:?}");
    let no_files = |when: &str| {
        for host in [&env._host, &second_host] {
            let folder = host.config.data_dir().join("agent-sessions");
            let files = std::fs::read_dir(&folder).map(|d| d.count()).unwrap_or(0);
            assert_eq!(files, 0, "{when}: no session log file in {}", folder.display());
        }
    };
    no_files("after the takeover");

    // A log an earlier version kept as a file (its last line torn by a
    // crash) is moved into the rows when the run is next opened.
    let lines = second.new_agent().sessions().lines(&id).await.unwrap();
    sqlx::query("DELETE FROM agent_session_entry WHERE run_id = $1").bind(&id).execute(&env.db.pool).await.unwrap();
    let folder = second_host.config.data_dir().join("agent-sessions");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(format!("{id}.jsonl")), format!("{}\n{{\"type\": \"assis", lines.join("\n"))).unwrap();
    let (status, answer) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "how far?"})).await;
    assert_eq!(status, 200, "{answer}");
    let body = wait_run(&api, &id, "answered", |r| ended(r) && r["toolCalls"] == 4).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    let now = second.new_agent().sessions().lines(&id).await.unwrap();
    assert_eq!(now[..lines.len()], lines[..], "the file's lines, the torn one left out, then the new request's");
    assert!(now[lines.len()..].iter().any(|l| l.contains("how far?")), "{now:?}");
    no_files("after the move");
}

/// A worker for agent tasks on `app`'s process; aborting the handle stops it.
fn worker_of(app: &std::sync::Arc<capstan::app::App>) -> AbortOnDrop {
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(5), concurrency: 4 };
    let mut worker = Worker::new(Tasks::new(app.services().db.clone()), capstan::store::new_id(), config);
    let agent = std::sync::Arc::new(app.new_agent());
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    let waker = tokio::spawn(capstan::agent::task::wake_due_runs(agent, Default::default()));
    AbortOnDrop(vec![waker, tokio::spawn(std::sync::Arc::new(worker).run(std::future::pending()))])
}

/// Background tasks of a test node, stopped when it is dropped.
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl AbortOnDrop {
    fn abort(&self) {
        self.0.iter().for_each(tokio::task::JoinHandle::abort);
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.abort();
    }
}

/// A task whose write is held by the service (done, not yet answered) and
/// a second write after it; then a follow-up that makes both again.
const HELD: &str = r#"{"scripts": [
  {"match": ["continue"],
   "steps": [{"tools": [
     {"name": "test.counter-verify", "input": {"label": "held"}},
     {"name": "test.counter-safe", "input": {"label": "after"}}]}],
   "finalText": "Went on."},
  {"match": ["count"],
   "steps": [{"tools": [
     {"name": "update_plan", "input": {"goal": "Count twice", "steps": [{"title": "count", "status": "in_progress"}]}},
     {"name": "test.counter-verify", "input": {"label": "held"}},
     {"name": "test.counter-safe", "input": {"label": "after"}}]}],
   "finalText": "Counted."}
]}"#;

/// Starts a run of `script` ("count slowly") whose first write the
/// service does and holds unanswered, aborts it meanwhile, and answers
/// the API, the run's id, its body once cancelled, and its one snapshot's
/// calls as (name, state).
async fn aborted_during_a_held_write(env: &Env, script: &str) -> (Api, String, Value, Vec<(String, String)>) {
    capstan_tests::grants::allow_everything(&env.svc).await;
    set(&env.app, &[("model.script", json!(script))]).await;
    let api = start(env).await;
    env.mock.counters.hold_answers.store(true, Ordering::SeqCst);
    let (_, run) = api.post("/agent/runs", json!({"goal": "count slowly"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    while env.mock.writes() < 1 {
        assert!(started.elapsed() < Duration::from_secs(60), "the held write never reached the service");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The write is done on the service's side, unanswered; the run is
    // aborted meanwhile and lets go of the call where it stands.
    let (status, _) = api.post(&format!("/agent/runs/{id}/abort"), json!({"reason": "not now"})).await;
    assert_eq!(status, 200);
    let body = wait_run(&api, &id, "cancelled", ended).await;
    assert_eq!(body["run"]["status"], "cancelled", "{body}");
    env.mock.counters.hold_answers.store(false, Ordering::SeqCst);
    let snapshot = events_of(&body, "agent.snapshot");
    assert_eq!(snapshot.len(), 1, "{body}");
    let states = snapshot[0]["payload"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), c["state"].as_str().unwrap().to_string()))
        .collect();
    (api, id, body, states)
}

async fn an_aborted_run_goes_on_after_checking_what_it_left_open(backend: Backend) {
    let env = env(backend).await;
    let (api, id, body, states) = aborted_during_a_held_write(&env, HELD).await;
    let snapshot = events_of(&body, "agent.snapshot");
    assert_eq!(
        states,
        [("update_plan", "succeeded"), ("test.counter-verify", "result_unknown"), ("test.counter-safe", "not_run")]
            .map(|(n, s)| (n.to_string(), s.to_string()))
    );
    assert_eq!(snapshot[0]["payload"]["calls"][1]["input"], "{label:string(4)}", "inputs are redacted");
    assert_eq!(snapshot[0]["payload"]["plan"]["goal"], "Count twice");
    let rows = capstan::ledger::for_run(&env.db, &id).await.unwrap();
    assert_eq!(rows.len(), 1, "the write that never started has no receipt: {rows:?}");
    assert_eq!(rows[0].status, LedgerStatus::Unknown, "stopped after its effect: unknown, not failed");
    assert_eq!(env.mock.writes(), 1);

    // "continue" reopens it: the open write is checked read-only first
    // (done), then the task goes on and nothing is written twice.
    let (status, answer) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "continue"})).await;
    assert_eq!(status, 200, "a cancelled run takes a message: {answer}");
    let body = wait_run(&api, &id, "went on", |r| r["status"] == "succeeded").await;
    assert_eq!(body["run"]["finalText"], "Went on.", "{body}");
    assert_eq!(body["run"]["plan"]["goal"], "Count twice", "it goes on from its plan");
    let checked = events_of(&body, "agent.checked");
    assert_eq!(checked.len(), 1, "{body}");
    assert_eq!(checked[0]["payload"]["checks"][0]["outcome"], "done", "{body}");
    let rows = capstan::ledger::for_run(&env.db, &id).await.unwrap();
    assert!(rows.iter().all(|r| r.status == LedgerStatus::Succeeded), "{rows:?}");
    assert_eq!(env.mock.writes(), 2, "the held write was not made again; the one that never ran was");
    let statuses: Vec<&str> =
        events_of(&body, "agent.run_status").iter().map(|e| e["payload"]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["running", "cancelled", "queued", "running", "succeeded"]);
}

async fn a_message_waits_until_an_abort_is_done(backend: Backend) {
    let env = env(backend).await;
    let agent = env.app.new_agent();
    let run = stored_run(&agent, RunMode::PlanOnly, &[RunStatus::Running]).await;
    agent.runs().request_abort(&run.id, "stop").await.unwrap();
    let refused = agent.message(&run.id, "go on", "admin:test", false).await;
    assert!(
        matches!(&refused, Err(StartError::Run(RunError::WrongState(_, "running", _)))),
        "an abort under way is final: {refused:?}"
    );
    assert_eq!(agent.runs().messages(&run.id).await.unwrap().len(), 1, "nothing was added");
    agent.runs().set_status(&run.id, RunStatus::Cancelled, Some("stop")).await.unwrap();
    let reopened = agent.message(&run.id, "go on", "admin:test", false).await.unwrap();
    assert_eq!(reopened.status, RunStatus::Queued, "once it has stopped, a message reopens it");
    assert_eq!(reopened.abort_reason, None);
}

/// The same held write in an answer that sets no plan: nothing else makes
/// the answer durable before its first call acts.
const HELD_WITHOUT_A_PLAN: &str = r#"{"scripts": [
  {"match": ["count"],
   "steps": [{"tools": [
     {"name": "test.counter-verify", "input": {"label": "held"}},
     {"name": "test.counter-safe", "input": {"label": "after"}}]}],
   "finalText": "Counted."}
]}"#;

/// A run aborted during the first call of an answer snapshots that
/// answer's calls, whichever store keeps its log.
async fn an_abort_during_an_answers_first_call_snapshots_that_answer(backend: Backend) {
    let env = env(backend).await;
    let (_, _, body, states) = aborted_during_a_held_write(&env, HELD_WITHOUT_A_PLAN).await;
    let expected = [("test.counter-verify", "result_unknown"), ("test.counter-safe", "not_run")];
    assert_eq!(states, expected.map(|(n, s)| (n.to_string(), s.to_string())), "{body}");
}

both_backends!(
    an_aborted_run_goes_on_after_checking_what_it_left_open,
    a_message_waits_until_an_abort_is_done,
    an_abort_during_an_answers_first_call_snapshots_that_answer
);
