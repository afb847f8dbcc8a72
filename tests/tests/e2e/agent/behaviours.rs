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
