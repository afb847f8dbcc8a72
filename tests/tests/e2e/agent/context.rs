//! What the model is shown over a long run: the plan on every request,
//! compaction at the threshold that keeps the plan, the request and the
//! latest tool transaction (and says so in the session log, so a restart
//! resumes from the compacted history), a clear failure when what must be
//! kept does not fit, tool discovery bounded by `agent.max_tools`, the
//! tokenizers, and `get_tool_execution` / `read_tool_result` from the loop.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan::agent::AgentRuntime;
use capstan::agent::compaction::MARKER;
use capstan::agent::providers::scripted::Scripted;
use capstan::agent::providers::{Block, CompletionFuture, ModelRequest, Provider, Role, StreamEvent};
use capstan::agent::runs::{NewRun, Run, RunMode};
use capstan::agent::tokens::TokenCounter;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::db::Backend;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::storage::ledger::{Env, env};

/// The scripted model, remembering every request it was sent.
pub(crate) struct Recording {
    pub(crate) model: Scripted,
    pub(crate) seen: Mutex<Vec<ModelRequest>>,
}

impl Provider for Recording {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        self.seen.lock().unwrap().push(request.clone());
        self.model.complete(request, events)
    }
}

pub(crate) async fn settings(env: &Env, pairs: &[(&str, Value)]) {
    let mut change = Map::new();
    for (k, v) in pairs {
        change.insert(k.to_string(), v.clone());
    }
    env.app.settings().update(&change).await.unwrap();
}

/// Runs `goal` to its end on an in-process worker with `script`.
pub(crate) async fn run(
    env: &Env,
    script: &str,
    goal: &str,
    allowlist: Option<Vec<String>>,
) -> (Run, Arc<Recording>, AgentRuntime) {
    let recording = Arc::new(Recording { model: Scripted::from_json(script).unwrap(), seen: Mutex::new(Vec::new()) });
    let (run, front) = run_with(env, recording.clone(), goal, allowlist).await;
    (run, recording, front)
}

/// Runs `goal` (plan only) to its end on an in-process worker with `model`.
pub(crate) async fn run_with(
    env: &Env,
    model: Arc<dyn Provider>,
    goal: &str,
    allowlist: Option<Vec<String>>,
) -> (Run, AgentRuntime) {
    let agent = Arc::new(env.app.new_agent().with_provider(model));
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(10), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "context-test".into(), config);
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    // Stopped, not aborted, when the run ends: the worker returns between claims.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(Arc::new(worker).run(async {
        let _ = stopped.await;
    }));
    let front = env.app.new_agent();
    let new = NewRun {
        goal: goal.into(),
        mode: RunMode::PlanOnly,
        allowlist,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let started = front.start(new).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let run = loop {
        let run = front.runs().get(&started.id).await.unwrap();
        if run.status.is_final() {
            break run;
        }
        assert!(Instant::now() < deadline, "the run did not end: {run:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = stop.send(());
    let _ = handle.await;
    (run, front)
}

pub(crate) fn long_script(steps: usize) -> String {
    let padding =
        "I am reading the inventory again to be thorough about every title and its wanted qualities. ".repeat(3);
    let mut list = vec![json!({"text": "Planning.", "tools": [
        {"name": "update_plan", "input": {"goal": "Know the library", "steps": [{"title": "read the inventory", "status": "in_progress"}]}},
        {"name": "inventory.query", "input": {}}]})];
    for _ in 1..steps {
        list.push(json!({"text": padding, "tools": [{"name": "inventory.query", "input": {}}]}));
    }
    json!({"scripts": [{"steps": list, "finalText": "Read it; it tracks {{inventory.query.items.length}} titles."}]})
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_keeps_the_plan_the_request_and_the_latest_transaction() {
    let env = env(Backend::Sqlite).await;
    settings(&env, &[("model.context_budget", json!(2304)), ("model.compaction.threshold_ratio", json!(0.6))]).await;
    let (run, recording, front) =
        run(&env, &long_script(12), "Tell me about my library", Some(vec!["inventory.query".into()])).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    // Every step ran once, in order, although the history was cut.
    assert_eq!(run.final_text.as_deref(), Some("Read it; it tracks 0 titles."));
    let seen = recording.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 13, "twelve steps and the final answer");
    let compacted: Vec<&ModelRequest> = seen.iter().filter(|r| first_text(r).contains(MARKER)).collect();
    assert!(!compacted.is_empty(), "the history was compacted");
    for request in &seen[1..] {
        assert!(request.system.contains("Current plan — goal: Know the library"), "the plan is shown on every request");
        assert!(first_text(request).starts_with("Tell me about my library"), "the request is kept");
    }
    assert_eq!(compacted[0].messages.len(), 3, "just compacted: the digest, then the latest tool transaction");
    for request in &compacted {
        // After the digest, whole transactions: a call and its result.
        for pair in request.messages[1..].chunks(2) {
            assert!(matches!(pair[0].content.last(), Some(Block::ToolUse { .. })), "{pair:?}");
            assert!(pair.len() == 2 && matches!(pair[1].content[0], Block::ToolResult { .. }), "{pair:?}");
        }
    }
    let events = front.runs().run_events(&run.id, 0, 1000).await.unwrap();
    let compactions: Vec<&Value> = events.iter().filter(|e| e.kind == "agent.compacted").map(|e| &e.payload).collect();
    assert!(!compactions.is_empty());
    assert!(
        compactions
            .iter()
            .all(|c| c["tokensAfter"].as_u64() < c["tokensBefore"].as_u64() && c["tokensAfter"].as_u64() <= Some(2048)),
        "{compactions:?}"
    );

    // What a worker taking the run over would rebuild: the compacted
    // history and the plan.
    let session = front.sessions().read(&run.id).await.unwrap();
    assert_eq!(session.plan.as_ref().unwrap().goal, "Know the library");
    assert!(first_text_of(&session.messages).contains(MARKER));
    assert_eq!(session.messages.last().unwrap().role, Role::Assistant);
}

fn first_text(request: &ModelRequest) -> String {
    first_text_of(&request.messages)
}

fn first_text_of(messages: &[capstan::agent::providers::Message]) -> String {
    messages[0]
        .content
        .iter()
        .find_map(|b| match b {
            Block::Text { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_cannot_fit_fails_with_the_reason() {
    let env = env(Backend::Sqlite).await;
    settings(&env, &[("model.context_budget", json!(1024))]).await;
    let (run, recording, _) = run(&env, &long_script(2), "Tell me about my library", None).await;
    assert_eq!(run.status.as_str(), "failed");
    let error = run.error.unwrap();
    assert!(error.contains("context window of 1024") && error.contains("nothing was dropped"), "{error}");
    assert!(recording.seen.lock().unwrap().is_empty(), "the model was never asked");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_compaction_off_a_run_that_outgrows_the_window_fails_saying_so() {
    let env = env(Backend::Sqlite).await;
    settings(&env, &[("model.context_budget", json!(1500)), ("model.compaction.enabled", json!(false))]).await;
    let (run, recording, _) =
        run(&env, &long_script(12), "Tell me about my library", Some(vec!["inventory.query".into()])).await;
    assert_eq!(run.status.as_str(), "failed", "{run:?}");
    let error = run.error.unwrap();
    assert!(error.contains("compaction is switched off") && error.contains("1500"), "{error}");
    let seen = recording.seen.lock().unwrap().clone();
    assert!(seen.len() > 1 && seen.len() < 13, "it ran until the window was full: {}", seen.len());
    assert!(seen.iter().all(|r| !first_text(r).contains(MARKER)), "nothing was compacted");
}

#[tokio::test(flavor = "multi_thread")]
async fn max_tools_bounds_the_first_request_and_search_enables_more() {
    let env = env(Backend::Sqlite).await;
    settings(&env, &[("agent.max_tools", json!(2))]).await;
    let script = r#"{"scripts": [{"steps": [
        {"tools": [{"name": "search_tools", "input": {"search": "release"}}]},
        {"tools": [{"name": "release.inspect", "input": {"title": "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX"}}]}
      ], "finalText": "Parsed {{release.inspect.title}}."}]}"#;
    let (run, recording, _) = run(&env, script, "what is in my inventory?", None).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    let seen = recording.seen.lock().unwrap().clone();
    let capabilities = |r: &ModelRequest| -> Vec<String> {
        r.tools.iter().map(|t| t.name.clone()).filter(|n| n.contains('.')).collect()
    };
    let first = capabilities(&seen[0]);
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first.contains(&"inventory.query".to_string()), "the request's words pick the tools: {first:?}");
    let second = capabilities(&seen[1]);
    assert!(second.contains(&"release.inspect".to_string()) && second.len() > 2, "{second:?}");
    assert!(seen[1].system.contains("Tools enabled by your search"), "the model is told");
    assert!(
        seen.iter().all(|r| r.tools.iter().all(|t| t.name != "download.submit")),
        "a plan-only run never sees execute tools"
    );
    assert!(
        seen[0].tools.iter().any(|t| t.name == "update_plan")
            && seen[0].tools.iter().all(|t| t.name != "capability.update_plan")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_tokenizer_is_exact_and_the_estimate_learns() {
    let exact = TokenCounter::for_provider("openai-compatible");
    assert!(exact.is_exact());
    assert_eq!(exact.count("hello world"), 2);
    assert_eq!(exact.count(""), 0);
    let estimate = TokenCounter::for_provider("anthropic");
    assert!(!estimate.is_exact());
    let before = estimate.chars_per_token().unwrap();
    let text = "a".repeat(3600);
    let guessed = estimate.count(&text);
    for _ in 0..8 {
        // The provider keeps saying the text took twice what was guessed.
        estimate.calibrate(estimate.count(&text), (guessed * 2) as u64);
    }
    let after = estimate.chars_per_token().unwrap();
    assert!(after < before * 0.6, "{before} → {after}");
    let now = estimate.count(&text);
    assert!((now as f64 - (guessed * 2) as f64).abs() < guessed as f64 * 0.1, "{now} vs {}", guessed * 2);
}

/// Writes, then looks its own write up in the ledger and pages through a
/// large result; a second request starts without the first one's plan.
const SESSION_TOOLS: &str = r#"{"scripts": [
  {"match": ["count"], "steps": [
    {"tools": [
      {"name": "update_plan", "input": {"goal": "Count", "steps": [{"title": "count", "status": "in_progress"}]}},
      {"name": "test.counter-safe", "input": {"label": "x"}},
      {"name": "test.probe", "input": {"action": "big", "bytes": 9000}}]},
    {"tools": [
      {"name": "get_tool_execution", "input": {"invocation_id": "{{test.counter-safe.invocation_id}}"}},
      {"name": "read_tool_result", "input": {"result_id": "{{test.probe.result_id}}", "offset": 4000, "limit": 100}}]}
  ], "finalText": "Counted to {{test.counter-safe.count}}, recorded {{get_tool_execution.status}}; read to {{read_tool_result.next_offset}} of {{read_tool_result.total_chars}}."},
  {"match": ["else"], "steps": [], "finalText": "Nothing to do."}
]}"#;

#[tokio::test(flavor = "multi_thread")]
async fn session_tools_answer_from_the_run_and_a_new_request_drops_the_plan() {
    let env = env(Backend::Sqlite).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let recording =
        Arc::new(Recording { model: Scripted::from_json(SESSION_TOOLS).unwrap(), seen: Mutex::new(Vec::new()) });
    let agent = Arc::new(env.app.new_agent().with_provider(recording.clone()));
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(10), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "tools-test".into(), config);
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    let new = NewRun {
        goal: "count for me".into(),
        mode: RunMode::Execute,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let run = agent.start(new).await.unwrap();
    let ended = |id: String, calls: i64| {
        let agent = agent.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let run = agent.runs().get(&id).await.unwrap();
                if run.status.is_final() && run.tool_calls >= calls {
                    return run;
                }
                assert!(Instant::now() < deadline, "{run:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let done = ended(run.id.clone(), 5).await;
    let text = done.final_text.clone().unwrap();
    let total: usize = text
        .strip_prefix("Counted to 1, recorded succeeded; read to 4100 of ")
        .and_then(|t| t.trim_end_matches('.').parse().ok())
        .unwrap_or(0);
    assert!(total > 9000, "{text}");
    agent.message(&run.id, "now something else", "admin:test", true).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while agent.runs().get(&run.id).await.unwrap().final_text.as_deref() != Some("Nothing to do.") {
        assert!(Instant::now() < deadline, "the second request was never answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = recording.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert!(seen[1].system.contains("Current plan — goal: Count") && seen[2].system.contains("Current plan"));
    assert!(!seen[3].system.contains("Current plan"), "a new request starts without the old plan");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subagent_shares_the_budget_and_is_reclaimed_when_it_does_not_finish() {
    let env = env(Backend::Sqlite).await;
    let digging: Vec<Value> = (0..12).map(|_| json!({"tools": [{"name": "inventory.query", "input": {}}]})).collect();
    let script = json!({"scripts": [
        {"match": ["endless"], "steps": digging, "finalText": "found it"},
        {"match": ["look"], "steps": [{"tools": [{"name": "delegate", "input": {"goal": "endless digging"}}]}],
         "finalText": "The subagent said: {{delegate.findings}}"}
    ]})
    .to_string();
    let (run, recording, front) = run(&env, &script, "look deeper", None).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    assert_eq!(run.final_text.as_deref(), Some("The subagent said: (unknown)"), "no findings are invented");
    assert_eq!(recording.seen.lock().unwrap().len(), 1 + 8 + 1, "the subagent was stopped after 8 requests");
    assert_eq!(run.tool_calls, 1 + 8, "its calls count against the run's budget");
    let events = front.runs().run_events(&run.id, 0, 1000).await.unwrap();
    let delegate = events
        .iter()
        .find(|e| e.kind == "agent.tool_call" && e.payload["name"] == "delegate" && e.payload["phase"] == "finished")
        .unwrap();
    assert_eq!(delegate.payload["status"], "failed");
    let session = front.sessions().read(&run.id).await.unwrap();
    let reclaimed = session
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .any(|b| matches!(b, Block::ToolResult { content, .. } if content.contains("reclaimed")));
    assert!(reclaimed, "the parent is told the subtask was reclaimed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_script_is_refused_when_set_and_changes_nothing() {
    let env = env(Backend::Sqlite).await;
    settings(&env, &[("model.script", json!(long_script(1)))]).await;
    let before = env.app.settings().get("model.script").await.unwrap();
    for bad in [r#"{"scripts": ["#, r#"{"scripts": []}"#, r#"{"scripts": [{"steps": []}]}"#] {
        let mut change = Map::new();
        change.insert("model.script".into(), json!(bad));
        change.insert("agent.max_tools".into(), json!(3));
        let refused = env.app.settings().update(&change).await.expect_err(bad);
        assert!(refused.to_string().contains("model.script"), "{refused}");
    }
    assert_eq!(env.app.settings().get("model.script").await.unwrap(), before, "the script is unchanged");
    assert_eq!(
        env.app.settings().get("agent.max_tools").await.unwrap(),
        json!(0),
        "nothing else in the change was applied"
    );
}
