//! Agent runs through the API, driven by a worker: a run is queued, runs
//! its scripted model through the one invoke path, streams events, and ends
//! with a report built from the business tables. Identical writes in one
//! user request run once; a later request may repeat them. Without a grant
//! an execute call is denied (audited, no ledger row); messages wake a
//! finished run; an abort cuts a model stream in flight; budgets end runs
//! `budget_exceeded` with a decision. On SQLite and on PostgreSQL.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use capstan::agent::runs::{RunMode, RunStatus};
use capstan::runtime::EffectClass;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::mock_llm::{MockLlm, Reply, sse};
use serde_json::{Map, Value, json};

use capstan::app::App;
use capstan_tests::api::Api;

use crate::storage::ledger::{Env, env};

/// Polls run `id` until `cond` holds.
pub async fn wait_run(api: &Api, id: &str, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let body = api.json(&format!("/agent/runs/{id}?limit=1000")).await;
        // The run is read after its events: a status written between the
        // two reads is in the run, not yet in the events. Wait for a body
        // in which they agree, so what is asserted of the events holds.
        let told = events_of(&body, "agent.run_status").last().map(|e| e["payload"]["status"].clone());
        let agrees = !ended(&body["run"]) || told.as_ref() == Some(&body["run"]["status"]);
        if cond(&body["run"]) && agrees {
            return body;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let task = api.get(&format!("/tasks/{}", body["run"]["taskId"].as_str().unwrap_or("-"))).await.1;
            panic!("run never {what}: {body}\ntask: {task}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) fn ended(run: &Value) -> bool {
    matches!(run["status"].as_str(), Some("succeeded" | "failed" | "cancelled" | "budget_exceeded" | "nothing_done"))
}

pub(crate) async fn set(app: &App, pairs: &[(&str, Value)]) {
    let mut change = Map::new();
    for (k, v) in pairs {
        change.insert(k.to_string(), v.clone());
    }
    app.settings().update(&change).await.unwrap();
}

/// Points the model settings at the Anthropic mock `llm`.
pub(crate) async fn use_mock_anthropic(app: &App, llm: &MockLlm) {
    let settings = [
        ("model.provider", json!("anthropic")),
        ("model.model", json!("claude-test")),
        ("model.base_url", json!(llm.base_url())),
        ("model.api_key", json!("sk-test")),
    ];
    set(app, &settings).await;
}

/// The API on loopback, a worker that runs agent tasks, and an execute key.
pub async fn start(env: &Env) -> Api {
    let base = capstan_tests::api::serve(env.app.clone()).await;
    start_worker(env);
    let key = capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "admin:test").await.unwrap();
    Api::new(&base).with_key(&key)
}

/// A worker that runs agent tasks, from now on.
pub fn start_worker(env: &Env) {
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(5), concurrency: 4 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "agent-test".into(), config);
    let agent = Arc::new(env.app.new_agent());
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
}

/// A run of `mode` recorded straight in the store, not queued, moved
/// through `statuses` (no worker takes it unless it is woken).
pub(crate) async fn stored_run(
    agent: &capstan::agent::AgentRuntime,
    mode: capstan::agent::runs::RunMode,
    statuses: &[capstan::agent::runs::RunStatus],
) -> capstan::agent::runs::Run {
    let new = capstan::agent::runs::NewRun {
        goal: "What does my library hold?".into(),
        mode,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let run = agent.runs().create(&new).await.unwrap();
    for status in statuses {
        agent.runs().set_status(&run.id, *status, None).await.unwrap();
    }
    agent.runs().get(&run.id).await.unwrap()
}

pub(crate) fn events_of<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["events"].as_array().unwrap().iter().filter(|e| e["kind"] == kind).collect()
}

pub(crate) fn report(body: &Value) -> &Value {
    &body["report"]["body"]
}

/// Counts with the counter capability twice in one response and once more
/// in the next: one effect per user request.
const COUNTING: &str = r#"{"scripts": [{
  "match": ["count"],
  "steps": [
    {"text": "Counting.", "tools": [
      {"name": "test.counter-safe", "input": {"label": "once"}},
      {"name": "test.counter-safe", "input": {"label": "once"}}]},
    {"tools": [{"name": "test.counter-safe", "input": {"label": "once"}}]}
  ],
  "finalText": "Counted to {{test.counter-safe.count}}."
}]}"#;

async fn a_demo_run_reads_streams_and_reports(backend: Backend) {
    let env = env(backend).await;
    let api = start(&env).await;
    let (status, run) =
        api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "queued");
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");

    let statuses: Vec<&str> =
        events_of(&body, "agent.run_status").iter().map(|e| e["payload"]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["running", "succeeded"]);
    let calls = events_of(&body, "agent.tool_call");
    assert_eq!(calls.len(), 2, "started and finished");
    assert_eq!(
        (calls[1]["payload"]["name"].as_str(), calls[1]["payload"]["status"].as_str()),
        (Some("inventory.query"), Some("succeeded"))
    );
    let streamed: String =
        events_of(&body, "agent.text_delta").iter().map(|e| e["payload"]["text"].as_str().unwrap()).collect();
    assert!(streamed.contains("The library holds 0 title(s): none."), "{streamed}");
    let seqs: Vec<i64> = body["events"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "run seqs are dense: {seqs:?}");

    // The read's audit row was committed with the step's writes, in the
    // chain like any other.
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    let read = audit.iter().find(|e| e.event.action == "capability.invoke" && e.event.subject == "inventory.query");
    assert_eq!(read.map(|e| e.event.principal.clone()), Some(format!("agent:{id}")), "{audit:?}");
    assert!(matches!(env.app.audit().verify().await.unwrap(), capstan::audit::Verdict::Intact { .. }));

    let report = report(&body);
    assert_eq!(report["type"], "AgentGoalReport");
    assert_eq!(report["status"], "succeeded");
    assert_eq!(report["verified"]["plans"], json!([]), "nothing was planned");
    assert_eq!(report["modelFinalText"]["verified"], false);
    assert!(report["modelFinalText"]["text"].as_str().unwrap().contains("nothing was changed"));

    // The same events reached the global log, tagged with the run.
    let global = api.json("/events?after=0&limit=1000").await;
    let tagged = global["events"].as_array().unwrap().iter().filter(|e| e["payload"]["runId"] == id.as_str()).count();
    assert_eq!(tagged, seqs.len());
    // The session log holds the conversation.
    let log = env.app.new_agent().sessions().lines(&id).await.unwrap().join("\n");
    assert!(log.lines().count() >= 4 && log.contains("inventory.query"), "{log}");
    let listed = api.json("/agent/runs").await;
    assert_eq!(listed["items"][0]["id"], id.as_str());
}

/// What `docs/agent-runs.md` says `POST /agent/runs` answers when the
/// allowlist names a capability that is not loaded: the test holds the
/// code to the page.
fn documented_status_of_an_unknown_allowlist_entry() -> u16 {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/agent-runs.md")).unwrap();
    let row =
        page.lines().find(|l| l.starts_with("| `POST /agent/runs` |")).expect("the page has a POST /agent/runs row");
    let said = row.split("not loaded, is ").nth(1).expect("the row says what a capability that is not loaded answers");
    said[..3].parse().unwrap()
}

async fn bad_run_requests_are_refused(backend: Backend) {
    let env = env(backend).await;
    let api = start(&env).await;
    let unknown = documented_status_of_an_unknown_allowlist_entry();
    // A well-formed body naming what is not there: not found, as invoking
    // that capability is (a 422 would call a schema-valid body malformed).
    assert_eq!(unknown, 404);
    for (body, code, says) in [
        (json!({"goal": "x", "mode": "plan_only", "capabilityAllowlist": ["test.counter-safe"]}), 422, "plan_only"),
        (json!({"goal": "x", "capabilityAllowlist": ["no.such"]}), unknown, "not loaded"),
        (json!({"goal": "  "}), 422, "goal"),
        (json!({"goal": "x", "mode": "sideways"}), 422, ""),
        (json!({"goal": "x", "extra": 1}), 422, ""),
    ] {
        let (status, answer) = api.post("/agent/runs", body.clone()).await;
        assert_eq!(status, code, "{body} → {answer}");
        assert!(answer["error"]["message"].as_str().unwrap_or_default().contains(says), "{answer}");
    }
    assert_eq!(api.json("/agent/runs").await["items"], json!([]), "nothing was created");
    let reader = capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "admin:test").await.unwrap();
    assert_eq!(api.with_key(&reader).post("/agent/runs", json!({"goal": "x"})).await.0, 403);
    let (status, _) = api.post("/agent/runs/nope/messages", json!({"text": "hi"})).await;
    assert_eq!(status, 404);
}

async fn identical_writes_in_one_request_run_once(backend: Backend) {
    let env = env(backend).await;
    set(&env.app, &[("model.script", json!(COUNTING))]).await;
    let api = start(&env).await;

    // Without a grant the write is denied: audited, no ledger row, no effect.
    let (_, run) = api.post("/agent/runs", json!({"goal": "count once"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    let finished: Vec<&Value> =
        events_of(&body, "agent.tool_call").into_iter().filter(|e| e["payload"]["phase"] == "denied").collect();
    assert_eq!(finished.len(), 3, "{body}");
    assert_eq!(env.mock.counters.writes.load(Ordering::SeqCst), 0);
    assert!(capstan::ledger::for_run(&env.db, &id).await.unwrap().is_empty());
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    assert!(audit.iter().any(|e| e.event.action == "capability.denied" && e.event.principal == format!("agent:{id}")));
    assert!(report(&body)["modelFinalText"]["text"].as_str().unwrap().contains("(unknown)"), "no figure is invented");

    // With a grant: three identical calls in one request, one effect.
    capstan_tests::grants::allow_everything(&env.svc).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "count once"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    assert_eq!(env.mock.counters.writes.load(Ordering::SeqCst), 1, "one effect for the request");
    let done: Vec<&Value> =
        events_of(&body, "agent.tool_call").into_iter().filter(|e| e["payload"]["phase"] == "finished").collect();
    let replayed: Vec<bool> = done.iter().map(|e| e["payload"]["replayed"].as_bool().unwrap()).collect();
    assert_eq!(replayed, [false, true, true]);
    let rows = capstan::ledger::for_run(&env.db, &id).await.unwrap();
    assert_eq!(rows.len(), 1);
    // The ledger row names the run, the agent and the tool call of this request.
    assert_eq!(
        (rows[0].principal.as_str(), rows[0].run_id.as_deref()),
        (format!("agent:{id}").as_str(), Some(id.as_str()))
    );
    let call = rows[0].tool_call_id.as_deref().unwrap();
    assert!(call.ends_with("/call_0_0"), "<request>/<tool call>: {call}");
    assert_eq!(done[0]["payload"]["invocationId"], json!(rows[0].id));

    // A new task is a new request: it may count again.
    let (status, again) =
        api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "count once more", "newTask": true})).await;
    assert_eq!(status, 200, "{again}");
    let body = wait_run(&api, &id, "ended again", |r| ended(r) && r["toolCalls"].as_i64() == Some(6)).await;
    assert_eq!(body["run"]["status"], "succeeded");
    assert_eq!(env.mock.counters.writes.load(Ordering::SeqCst), 2);
    assert!(body["messages"].as_array().unwrap().iter().all(|m| m["consumed"] == true), "{body}");
}

async fn budgets_end_runs_with_a_decision(backend: Backend) {
    let env = env(backend).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    set(&env.app, &[("model.script", json!(COUNTING)), ("agent.max_tool_calls", json!(1))]).await;
    let api = start(&env).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "count"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "budget_exceeded", "{body}");
    assert!(body["run"]["error"].as_str().unwrap().contains("tool calls"));
    let decisions = env.svc.domain.decisions(Some(capstan::domain::DecisionStatus::Open), 10).await.unwrap();
    assert!(
        decisions.iter().any(|d| d.kind == "agent_budget" && d.subject.as_deref() == Some(id.as_str())),
        "{decisions:?}"
    );
    assert_eq!(report(&body)["status"], "budget_exceeded");

    // Raise the budget and send the run a message: it goes on.
    set(&env.app, &[("agent.max_tool_calls", json!(50))]).await;
    let (status, _) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "count again"})).await;
    assert_eq!(status, 200);
    let body = wait_run(&api, &id, "ended again", |r| ended(r) && r["status"] != "budget_exceeded").await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    assert_eq!(body["run"]["error"], Value::Null, "the old reason is gone");
    let statuses: Vec<&str> =
        events_of(&body, "agent.run_status").iter().map(|e| e["payload"]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["running", "budget_exceeded", "queued", "running", "succeeded"]);

    // The day's run budget is checked before a run starts.
    set(&env.app, &[("budget.max_runs_per_day", json!(1))]).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "count"})).await;
    let body = wait_run(&api, run["id"].as_str().unwrap(), "ended", ended).await;
    assert_eq!(body["run"]["status"], "budget_exceeded");
    assert!(body["run"]["error"].as_str().unwrap().contains("daily limit"), "{body}");
    assert_eq!(body["run"]["startedAt"], Value::Null, "it never started");
}

async fn an_abort_cuts_the_model_stream(backend: Backend) {
    let env = env(backend).await;
    let llm = MockLlm::start(vec![Reply::Hang(vec![sse(&[
        ("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})),
        ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})),
        ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Thinking about it"}})),
    ])])])
    .await;
    use_mock_anthropic(&env.app, &llm).await;
    let api = start(&env).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "take your time"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    wait_run(&api, &id, "streamed", |r| r["status"] == "running").await;
    let started = Instant::now();
    while llm.requests().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(20), "the model was never asked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _) = api.post(&format!("/agent/runs/{id}/abort"), json!({"reason": "changed my mind"})).await;
    assert_eq!(status, 200);
    let body = wait_run(&api, &id, "cancelled", ended).await;
    assert_eq!(body["run"]["status"], "cancelled");
    assert_eq!(body["run"]["error"], "changed my mind");
    let started = Instant::now();
    while llm.disconnects() == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "the stream was never dropped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _) = api.post(&format!("/agent/runs/{id}/abort"), json!({})).await;
    assert_eq!(status, 409, "an ended run cannot be aborted");
}

async fn run_events_stream_and_resume_without_gap_or_duplicate(backend: Backend) {
    let env = env(backend).await;
    set(&env.app, &[("model.script", json!(COUNTING))]).await;
    let api = start(&env).await;
    let head = env.svc.events.head().await.unwrap();
    let open = |last: i64| {
        api.request(reqwest::Method::GET, &format!("/events?after={head}"))
            .header("accept", "text/event-stream")
            .header("last-event-id", last.to_string())
            .send()
    };
    let mut reader = crate::http::events::SseReader { resp: open(head).await.unwrap(), buffer: String::new() };
    let (_, run) = api.post("/agent/runs", json!({"goal": "count once"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let mut seen: Vec<(i64, i64)> = Vec::new(); // (global seq, run seq)
    let mut last = head;
    while seen.len() < 3 {
        let (seq, kind, data) = reader.next().await;
        last = seq;
        if kind.starts_with("agent.") && data["payload"]["runId"] == id.as_str() {
            seen.push((seq, data["payload"]["runSeq"].as_i64().unwrap()));
        }
    }
    drop(reader); // the client goes away mid-run
    let body = wait_run(&api, &id, "ended", ended).await;
    let mut reader = crate::http::events::SseReader { resp: open(last).await.unwrap(), buffer: String::new() };
    loop {
        let (seq, kind, data) = reader.next().await;
        if kind.starts_with("agent.") && data["payload"]["runId"] == id.as_str() {
            seen.push((seq, data["payload"]["runSeq"].as_i64().unwrap()));
            if kind == "agent.run_status" && ended(&json!({"status": data["payload"]["status"]})) {
                break;
            }
        }
    }
    let global: Vec<i64> = seen.iter().map(|s| s.0).collect();
    assert!(global.windows(2).all(|w| w[0] < w[1]), "in order, no duplicate: {global:?}");
    let run_seqs: Vec<i64> = seen.iter().map(|s| s.1).collect();
    let stored: Vec<i64> = body["events"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(run_seqs, stored, "every run event, once, across the reconnect");
}

async fn a_message_wakes_a_waiting_run(backend: Backend) {
    let env = env(backend).await;
    let agent = env.app.new_agent();
    // A run waiting for something to settle, not due to look again for an hour.
    let waiting = [RunStatus::Running, RunStatus::Waiting];
    let run = stored_run(&agent, RunMode::Execute, &waiting).await;
    agent.runs().mark_consumed(&run.id, 1).await.unwrap();
    let later = capstan::store::now_ms() + 3_600_000;
    agent.runs().schedule_wake(&run.id, later, later).await.unwrap();
    let api = start(&env).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(api.json(&format!("/agent/runs/{}", run.id)).await["run"]["status"], "waiting", "not due yet");

    let (status, _) = api.post(&format!("/agent/runs/{}/messages", run.id), json!({"text": "and now?"})).await;
    assert_eq!(status, 200);
    let body = wait_run(&api, &run.id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    let statuses: Vec<&str> =
        events_of(&body, "agent.run_status").iter().map(|e| e["payload"]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["running", "waiting", "running", "succeeded"]);
    assert!(body["messages"].as_array().unwrap().iter().all(|m| m["consumed"] == true), "{body}");

    // An abort reaches a waiting run without waiting for its next look.
    let run = stored_run(&agent, RunMode::Execute, &waiting).await;
    agent.runs().mark_consumed(&run.id, 1).await.unwrap();
    agent.runs().schedule_wake(&run.id, later, later).await.unwrap();
    let (status, _) = api.post(&format!("/agent/runs/{}/abort", run.id), json!({"reason": "enough"})).await;
    assert_eq!(status, 200);
    let body = wait_run(&api, &run.id, "cancelled", ended).await;
    assert_eq!((body["run"]["status"].as_str(), body["run"]["error"].as_str()), (Some("cancelled"), Some("enough")));
}

/// A read then a write in one answer: the read's audit row, which the run
/// commits with its step, is in the log before the write's, as they ran.
async fn a_read_before_a_write_is_audited_first(backend: Backend) {
    let env = env(backend).await;
    let script = json!({"scripts": [{"steps": [{"tools": [
        {"name": "inventory.query", "input": {}},
        {"name": "test.counter-safe", "input": {"label": "after the read"}}]}], "finalText": "done"}]});
    set(&env.app, &[("model.script", json!(script.to_string()))]).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let api = start(&env).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "read then count"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    let seq_of = |subject: &str| {
        audit.iter().find(|e| e.event.action == "capability.invoke" && e.event.subject == subject).map(|e| e.seq)
    };
    let (read, write) = (seq_of("inventory.query"), seq_of("test.counter-safe"));
    assert!(read.is_some() && write.is_some() && read < write, "read {read:?}, write {write:?}: {audit:?}");
    assert!(matches!(env.app.audit().verify().await.unwrap(), capstan::audit::Verdict::Intact { .. }));
}

both_backends!(
    a_read_before_a_write_is_audited_first,
    a_message_wakes_a_waiting_run,
    run_events_stream_and_resume_without_gap_or_duplicate,
    a_demo_run_reads_streams_and_reports,
    bad_run_requests_are_refused,
    identical_writes_in_one_request_run_once,
    budgets_end_runs_with_a_decision,
    an_abort_cuts_the_model_stream,
);
