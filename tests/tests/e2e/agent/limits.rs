//! A run's limits and endings: time, token and cost budgets per run and
//! the day's cost before a run starts; an abort that closes the session
//! (the rest of an answer's calls are not made, no subtask starts); and a
//! run taken over after its process died, resuming with its plan and
//! conversation from the session log.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan::agent::providers::scripted::Scripted;
use capstan::agent::providers::{Block, CompletionFuture, ModelRequest, Provider, Role, StreamEvent};
use capstan::agent::runs::{NewRun, Run, RunMode};
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::db::Backend;
use serde_json::json;
use tokio::sync::mpsc;

use crate::agent::context::{Recording, long_script, run_with, settings};
use crate::storage::ledger::env;

/// The scripted model, taking `delay` over every answer.
struct Slow {
    model: Scripted,
    delay: Duration,
    asked: std::sync::atomic::AtomicUsize,
}

impl Provider for Slow {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        Box::pin(async move {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(self.delay).await;
            self.model.complete(request, events).await
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn time_token_and_cost_budgets_end_a_run_and_the_days_cost_stops_the_next() {
    let env = env(Backend::Sqlite).await;
    let reading = long_script(4);
    let slow = |delay_ms: u64| {
        Arc::new(Slow {
            model: Scripted::from_json(&reading).unwrap(),
            delay: Duration::from_millis(delay_ms),
            asked: Default::default(),
        })
    };
    let over_budget = |run: &Run, says: &str| {
        assert_eq!(run.status.as_str(), "budget_exceeded", "{run:?}");
        let error = run.error.as_deref().unwrap_or_default();
        assert!(error.contains(says), "{error} should say {says}");
    };
    let decision_for = |id: String| {
        let svc = env.svc.clone();
        async move {
            let open = svc.domain.decisions(Some(capstan::domain::DecisionStatus::Open), 100).await.unwrap();
            assert!(open.iter().any(|d| d.kind == "agent_budget" && d.subject.as_deref() == Some(id.as_str())));
        }
    };

    settings(&env, &[("agent.max_tokens_per_run", json!(1))]).await;
    let model = slow(0);
    let (run, _) = run_with(&env, model.clone(), "Tell me about my library", None).await;
    over_budget(&run, "tokens");
    assert_eq!(model.asked.load(std::sync::atomic::Ordering::SeqCst), 1, "nothing after the budget was spent");
    assert_eq!(run.tool_calls, 0, "the answer's calls were not run");
    decision_for(run.id.clone()).await;

    settings(
        &env,
        &[
            ("agent.max_tokens_per_run", json!(500_000)),
            ("model.price_input_usd_per_mtok", json!(1000.0)),
            ("agent.max_cost_usd_per_run", json!(0.01)),
        ],
    )
    .await;
    let (run, _) = run_with(&env, slow(0), "Tell me about my library", None).await;
    over_budget(&run, "cost");
    assert!(run.cost_usd > 0.01, "{run:?}");
    decision_for(run.id.clone()).await;

    settings(
        &env,
        &[
            ("model.price_input_usd_per_mtok", json!(0.0)),
            ("agent.max_cost_usd_per_run", json!(5.0)),
            ("agent.max_duration_sec", json!(1)),
        ],
    )
    .await;
    let model = slow(700);
    let (run, _) = run_with(&env, model.clone(), "Tell me about my library", None).await;
    over_budget(&run, "longer than 1 s");
    assert!(model.asked.load(std::sync::atomic::Ordering::SeqCst) < 5, "the run stopped before its last step");
    decision_for(run.id.clone()).await;

    // Today's runs already cost more than the day allows: the next never starts.
    settings(&env, &[("agent.max_duration_sec", json!(1800)), ("budget.max_cost_usd_per_day", json!(0.01))]).await;
    let model = slow(0);
    let (run, _) = run_with(&env, model.clone(), "Tell me about my library", None).await;
    over_budget(&run, "daily limit");
    assert!(run.started_at.is_none(), "{run:?}");
    assert_eq!(model.asked.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// The scripted model, but a user's abort arrives while it writes its
/// first answer.
struct AbortWhileAnswering {
    model: Scripted,
    runs: capstan::agent::runs::Runs,
    run_id: Mutex<Option<String>>,
    asked: std::sync::atomic::AtomicUsize,
}

impl Provider for AbortWhileAnswering {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        Box::pin(async move {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let id = loop {
                if let Some(id) = self.run_id.lock().unwrap().clone() {
                    break id;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            self.runs.request_abort(&id, "the user changed their mind").await.unwrap();
            self.model.complete(request, events).await
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_session_starts_no_subtask_and_runs_no_further_call() {
    let env = env(Backend::Sqlite).await;
    let script = json!({"scripts": [{"steps": [{"tools": [
        {"name": "inventory.query", "input": {}},
        {"name": "delegate", "input": {"goal": "look around"}}]}], "finalText": "done"}]})
    .to_string();
    let front = env.app.new_agent();
    let model = Arc::new(AbortWhileAnswering {
        model: Scripted::from_json(&script).unwrap(),
        runs: front.runs().clone(),
        run_id: Mutex::new(None),
        asked: Default::default(),
    });
    let agent = Arc::new(env.app.new_agent().with_provider(model.clone()));
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(10), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "closed-test".into(), config);
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    let handle = tokio::spawn(Arc::new(worker).run(std::future::pending()));
    let new = NewRun {
        goal: "look".into(),
        mode: RunMode::Execute,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let run = front.start(new).await.unwrap();
    *model.run_id.lock().unwrap() = Some(run.id.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    let run = loop {
        let run = front.runs().get(&run.id).await.unwrap();
        if run.status.is_final() {
            break run;
        }
        assert!(Instant::now() < deadline, "the run did not end: {run:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    handle.abort();
    assert_eq!(run.status.as_str(), "cancelled", "{run:?}");
    assert_eq!(model.asked.load(std::sync::atomic::Ordering::SeqCst), 1, "no subagent asked the model anything");
    assert_eq!(run.tool_calls, 0, "neither call ran");
    let session = front.sessions().read(&run.id).await.unwrap();
    let answers: Vec<&String> = session
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::ToolResult { content, .. } => Some(content),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers[0].contains("not run: the session is closed (the user changed their mind)"), "{answers:?}");
    assert!(answers[1].contains("no new subtasks"), "{answers:?}");
    let events = front.runs().run_events(&run.id, 0, 1000).await.unwrap();
    assert!(events.iter().all(|e| e.kind != "agent.tool_call"), "no call started: {events:?}");
}

/// The scripted model for the first answer; from the second request on it
/// never answers, as a process that dies while the model writes.
struct DiesOnSecondRequest {
    model: Scripted,
    asked: std::sync::atomic::AtomicUsize,
    second_asked: tokio::sync::Notify,
}

impl Provider for DiesOnSecondRequest {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        Box::pin(async move {
            if self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                return self.model.complete(request, events).await;
            }
            self.second_asked.notify_one();
            std::future::pending().await
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plan_and_the_conversation_survive_a_restart() {
    let env = env(Backend::Sqlite).await;
    let script = long_script(2);
    let front = env.app.new_agent();
    let new = NewRun {
        goal: "Tell me about my library".into(),
        mode: RunMode::PlanOnly,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let run = front.start(new).await.unwrap();

    // The first process answers one step, then dies while the model writes.
    let dying = Arc::new(DiesOnSecondRequest {
        model: Scripted::from_json(&script).unwrap(),
        asked: Default::default(),
        second_asked: tokio::sync::Notify::new(),
    });
    let first = Arc::new(env.app.new_agent().with_provider(dying.clone()));
    let driving = {
        let (first, id) = (first.clone(), run.id.clone());
        tokio::spawn(async move { first.drive(&id).await })
    };
    tokio::time::timeout(Duration::from_secs(30), dying.second_asked.notified()).await.expect("the second request");
    driving.abort();
    let _ = driving.await;
    drop(first);

    // A new process (nothing shared in memory) takes the run over.
    let recording = Arc::new(Recording { model: Scripted::from_json(&script).unwrap(), seen: Mutex::new(Vec::new()) });
    let second = env.app.new_agent().with_provider(recording.clone());
    second.drive(&run.id).await.unwrap();
    let run = front.runs().get(&run.id).await.unwrap();
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    let seen = recording.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "the second step and the final answer; the first was not asked again");
    assert!(seen[0].system.contains("Current plan — goal: Know the library"), "{}", seen[0].system);
    assert!(seen[0].system.contains("read the inventory"), "the plan's steps came back too");
    let answered_before = seen[0].messages.iter().filter(|m| m.role == Role::Assistant).count();
    assert_eq!(answered_before, 1, "the first answer came back from the session log");
    assert_eq!(run.final_text.as_deref(), Some("Read it; it tracks 0 titles."));
}
