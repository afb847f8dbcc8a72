//! What a run's results and subagents may reach. A large result is shown
//! to the model as a preview with a `result_id`; only the identity that
//! made it reads on — a subagent asking for its parent's result is told
//! nothing is readable — and what the model was never shown reaches
//! neither the session log, nor the run's events, nor the host's log. A
//! run delegates in one turn, ends the turn, and delegates again in the
//! next; a subtask that does not finish within its turn is reclaimed.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan::agent::AgentRuntime;
use capstan::agent::providers::scripted::Scripted;
use capstan::agent::providers::{
    Block, Completion, CompletionFuture, ModelRequest, Provider, StopReason, StreamEvent, ToolCall, Usage,
};
use capstan::agent::runs::{NewRun, Run, RunMode};
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::db::Backend;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::storage::ledger::{Env, env};

/// The scripted model, except that a subtask "peek <result id>" tries to
/// read that result and answers with what it was told.
struct Peeker(Scripted);

fn words(m: &capstan::agent::providers::Message) -> String {
    m.content.iter().filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None }).collect()
}

impl Provider for Peeker {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        let asked = request.messages.first().map(words).unwrap_or_default();
        let Some(id) = asked.strip_prefix("peek ").map(|rest| rest.split_whitespace().next().unwrap_or("").to_string())
        else {
            return self.0.complete(request, events);
        };
        let answered = request.messages.iter().flat_map(|m| &m.content).find_map(|b| match b {
            Block::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        });
        let (text, tool_calls) = match answered {
            None => {
                let input = json!({"result_id": id, "offset": 0, "limit": 50});
                (String::new(), vec![ToolCall { id: "peek".into(), name: "read_tool_result".into(), input: Ok(input) }])
            }
            Some(content) => (format!("peeked: {content}"), Vec::new()),
        };
        let stop = if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
        let usage = Usage { input_tokens: Some(10), output_tokens: Some(10) };
        Box::pin(async move { Ok(Completion { reasoning: Vec::new(), text, tool_calls, stop, usage }) })
    }
}

/// Where the service's long answer ends: past the preview and past the
/// page the model reads, so the model is never shown it.
const TAIL: &str = capstan_tests::mock_service::LONG_TAIL;

fn script() -> String {
    json!({"scripts": [
        {"match": ["again"], "steps": [{"tools": [{"name": "delegate", "input": {"goal": "count the library"}}]}],
         "finalText": "Second subtask: {{delegate.findings}}"},
        {"match": ["library"], "steps": [{"tools": [{"name": "inventory.query", "input": {}}]}],
         "finalText": "{{inventory.query.items.length}} titles"},
        {"match": ["endless"], "steps": (0..12).map(|_| json!({"tools": [{"name": "inventory.query", "input": {}}]})).collect::<Vec<_>>(),
         "finalText": "never"},
        {"match": ["gather"], "steps": [
            {"tools": [{"name": "test.probe", "input": {"action": "read", "service": "echo", "path": "/long",
                "query": [["bytes", "6000"]]}}]},
            {"tools": [
                {"name": "read_tool_result", "input": {"result_id": "{{test.probe.result_id}}", "offset": 4000, "limit": 100}},
                {"name": "delegate", "input": {"goal": "peek {{test.probe.result_id}}"}},
                {"name": "delegate", "input": {"goal": "endless digging"}}]}
        ], "finalText": "Read to {{read_tool_result.next_offset}}; {{delegate.findings}}"}
    ]})
    .to_string()
}

/// Everything the host logs, at every level.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn until_ended(agent: &AgentRuntime, id: &str, calls: i64) -> Run {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = agent.runs().get(id).await.unwrap();
        if run.status.is_final() && run.tool_calls >= calls {
            return run;
        }
        assert!(Instant::now() < deadline, "the run did not end: {run:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn start_worker(env: &Env, agent: &Arc<AgentRuntime>) {
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(10), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "bounds-test".into(), config);
    capstan::agent::task::register(&mut worker, agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
}

#[tokio::test(flavor = "multi_thread")]
async fn results_stay_with_whoever_made_them_and_subagents_work_across_turns() {
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("this test's process logs to the capture");
    let env = env(Backend::Sqlite).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let agent = Arc::new(env.app.new_agent().with_provider(Arc::new(Peeker(Scripted::from_json(&script()).unwrap()))));
    start_worker(&env, &agent);
    let new = NewRun {
        goal: "gather what the echo says".into(),
        mode: RunMode::Execute,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let run = agent.start(new).await.unwrap();
    let ended = until_ended(&agent, &run.id, 4).await;
    assert_eq!(ended.status.as_str(), "succeeded", "{ended:?}");
    let said = ended.final_text.clone().unwrap();
    assert!(said.starts_with("Read to 4100; "), "the run read on in its own result: {said}");
    let events = agent.runs().run_events(&run.id, 0, 1000).await.unwrap();
    let sub: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e.kind == "agent.tool_call" && e.payload["actor"] == "subagent" && e.payload["phase"] == "finished")
        .map(|e| (e.payload["name"].as_str().unwrap(), e.payload["status"].as_str().unwrap()))
        .take(1)
        .collect();
    assert_eq!(sub, [("read_tool_result", "failed")], "a subagent cannot read its parent's result");
    let session = agent.sessions().lines(&run.id).await.unwrap().join("\n");
    assert!(session.contains("no result res_"), "the subagent was told so: {session}");
    let reclaimed = events.iter().any(|e| {
        e.kind == "agent.tool_call"
            && e.payload["name"] == "delegate"
            && e.payload["error"].as_str().is_some_and(|m| m.contains("reclaimed"))
    });
    assert!(reclaimed, "the subtask that did not finish within the turn was reclaimed");

    // The next turn delegates again, to a fresh subagent.
    agent.message(&run.id, "and again, please", "admin:test", false).await.unwrap();
    let ended = until_ended(&agent, &run.id, ended.tool_calls + 2).await;
    assert_eq!(ended.final_text.as_deref(), Some("Second subtask: 0 titles"), "{ended:?}");

    // What the model was shown is kept; what it was not, nowhere but in
    // the write's own receipt.
    let receipts = capstan::ledger::for_run(&env.db, &run.id).await.unwrap();
    assert!(receipts.iter().any(|r| r.result.as_deref().is_some_and(|t| t.contains(TAIL))), "{receipts:?}");
    let session = agent.sessions().lines(&run.id).await.unwrap().join("\n");
    assert!(session.contains("result_id") && session.contains(&"l".repeat(100)), "the preview is kept");
    let events = serde_json::to_string(&agent.runs().run_events(&run.id, 0, 1000).await.unwrap()).unwrap();
    let logged = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    assert!(logged.contains("INSERT INTO agent_run_event"), "the capture holds what the host logged meanwhile");
    for (place, text) in [("session log", &session), ("run events", &events), ("host log", &logged)] {
        assert!(!text.contains(TAIL), "the {place} holds what the model was never shown");
    }
    let messages: Value = serde_json::to_value(agent.runs().messages(&run.id).await.unwrap()).unwrap();
    assert!(!messages.to_string().contains(TAIL));
}
