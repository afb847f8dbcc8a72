//! How a run goes about its work, with the scripted model: a question is
//! answered without a plan while a job of several steps keeps one (the
//! system prompt says when a plan is worth keeping), and the first
//! request's tools are picked from the request's words in English and in
//! unsegmented Chinese alike.

use capstan::agent::providers::ModelRequest;
use capstan_tests::db::Backend;
use serde_json::json;

use super::context::{run, settings};
use crate::storage::ledger::env;

fn capabilities(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).filter(|n| n.contains('.')).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_is_answered_without_a_plan_and_a_job_of_steps_keeps_one() {
    let env = env(Backend::Sqlite).await;
    let question = r#"{"scripts": [{"steps": [{"tools": [{"name": "inventory.query", "input": {}}]}],
        "finalText": "The library tracks {{inventory.query.items.length}} titles."}]}"#;
    let (run1, recording, front) = run(&env, question, "how many titles does my library track?", None).await;
    assert_eq!(run1.status.as_str(), "succeeded", "{run1:?}");
    assert_eq!(run1.final_text.as_deref(), Some("The library tracks 0 titles."));
    assert!(run1.plan.is_none(), "no plan for one question");
    let events = front.runs().run_events(&run1.id, 0, 1000).await.unwrap();
    assert!(events.iter().all(|e| e.kind != "agent.plan"), "{events:?}");
    let system = recording.seen.lock().unwrap()[0].system.clone();
    assert!(system.contains("A plan is for work of several steps"), "{system}");
    assert!(system.contains("needs no plan"), "{system}");

    let job = r#"{"scripts": [{"steps": [
        {"tools": [{"name": "update_plan", "input": {"goal": "Check the library and the queue",
            "steps": [{"title": "read the library", "status": "in_progress"}, {"title": "read the tasks", "status": "pending"}]}},
          {"name": "inventory.query", "input": {}}]},
        {"tools": [{"name": "update_plan", "input": {"goal": "Check the library and the queue",
            "steps": [{"title": "read the library", "status": "completed", "evidence": "inventory.query answered"}, {"title": "read the tasks", "status": "in_progress"}]}},
          {"name": "task.inspect", "input": {"limit": 5}}]}
      ], "finalText": "Both read."}]}"#;
    let (run2, _, _) = run(&env, job, "check the library, then the task queue, and tell me what is stuck", None).await;
    assert_eq!(run2.status.as_str(), "succeeded", "{run2:?}");
    let plan = serde_json::to_value(run2.plan.expect("a job of steps keeps a plan")).unwrap();
    assert_eq!(plan["goal"], "Check the library and the queue");
    assert_eq!(plan["steps"][0]["status"], "completed", "{plan}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_tools_are_picked_from_the_request_in_either_language() {
    let env = env(Backend::Sqlite).await;
    settings(&env, &[("agent.max_tools", json!(2))]).await;
    let script = r#"{"scripts": [{"steps": [], "finalText": "Looked."}]}"#;
    for goal in ["帮我整理下载", "please organize my downloads"] {
        let (_, recording, _) = run(&env, script, goal, None).await;
        let first = capabilities(&recording.seen.lock().unwrap()[0]);
        assert_eq!(first.len(), 2, "{goal}: {first:?}");
        assert!(first.contains(&"organize.plan".to_string()), "{goal} picks the organize tools: {first:?}");
    }
    let (_, recording, _) = run(&env, script, "帮我看看下载状态", None).await;
    let first = capabilities(&recording.seen.lock().unwrap()[0]);
    assert!(first.contains(&"download.status".to_string()), "{first:?}");
}

/// A model that never answers: the run waits on it until it is aborted.
struct Silent;

impl capstan::agent::providers::Provider for Silent {
    fn complete<'a>(
        &'a self,
        _request: &'a ModelRequest,
        _events: tokio::sync::mpsc::UnboundedSender<capstan::agent::providers::StreamEvent>,
    ) -> capstan::agent::providers::CompletionFuture<'a> {
        Box::pin(std::future::pending())
    }
}

/// Everything the host logs.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_that_is_slow_or_fails_does_not_hold_the_run_back() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use capstan::agent::runs::{NewRun, RunMode, RunStatus};
    use capstan::tasks::{Tasks, Worker, WorkerConfig};

    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    tracing::subscriber::set_global_default(subscriber).expect("this test's process logs to the capture");
    let env = env(Backend::Sqlite).await;
    let agent = Arc::new(env.app.new_agent().with_provider(Arc::new(Silent)));
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(10), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "snapshot-test".into(), config);
    capstan::agent::task::register(&mut worker, &agent);
    tokio::spawn(Arc::new(worker).run(std::future::pending()));

    // Its session log swapped for something that cannot be read as one: a
    // FIFO nobody writes (reading it waits for ever), then a folder
    // (reading it fails at once).
    for (broken, said) in [("fifo", "took too long"), ("folder", "could not be taken")] {
        let new = NewRun {
            goal: "how many titles are there?".into(),
            mode: RunMode::PlanOnly,
            allowlist: None,
            created_by: "admin:test".into(),
            investigation: None,
            skill: None,
        };
        let run = agent.start(new).await.unwrap();
        let capstan::agent::session_store::SessionStore::Files(folder) = agent.sessions() else {
            panic!("on SQLite session logs are files")
        };
        let path = folder.join(format!("{}.jsonl", run.id));
        let started = Instant::now();
        while !(agent.runs().get(&run.id).await.unwrap().status == RunStatus::Running
            && std::fs::read_to_string(&path).is_ok_and(|t| t.contains("how many titles")))
        {
            assert!(started.elapsed() < Duration::from_secs(30), "the run never asked its model");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        std::fs::remove_file(&path).unwrap();
        if broken == "fifo" {
            let made = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
            assert!(made.success());
        } else {
            std::fs::create_dir(&path).unwrap();
        }
        agent.runs().request_abort(&run.id, "enough").await.unwrap();
        let ended = loop {
            let now = agent.runs().get(&run.id).await.unwrap();
            if now.status.is_final() {
                break now;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "the run never ended: {now:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!((ended.status, ended.error.as_deref()), (RunStatus::Cancelled, Some("enough")), "{broken}");
        let events = agent.runs().run_events(&run.id, 0, 1000).await.unwrap();
        assert!(events.iter().all(|e| e.kind != "agent.snapshot"), "{broken}: no snapshot was published");
        let logged = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        assert!(logged.contains(&format!("the run's snapshot {said}")), "{broken}: {logged}");
        if broken == "fifo" {
            // Lets go of the reader still waiting on the FIFO: a writer
            // that says nothing, then a reader for the append it opens.
            let fifo = path.clone();
            std::thread::spawn(move || {
                drop(std::fs::OpenOptions::new().write(true).open(&fifo));
                drop(std::fs::File::open(&fifo));
            });
        }
    }
}
