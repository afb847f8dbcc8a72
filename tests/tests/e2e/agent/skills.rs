//! Skills in runs: every request lists them, `read_skill` returns a
//! skill's steps and makes its tools discoverable, and a skill never
//! widens what a run may call — not past a plan-only run's ceiling, not
//! past an allowlist, not past a subagent's read-only grant. Each read is
//! an `agent.skill_read` event and an audit row.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan::agent::AgentRuntime;
use capstan::agent::providers::ModelRequest;
use capstan::agent::providers::scripted::Scripted;
use capstan::agent::runs::{NewRun, Run, RunEvent, RunMode};
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use super::context::{Recording, run, settings};
use crate::storage::ledger::{Env, env};

/// A skill dropped into the skills folder that leads to an execute
/// capability and a read one.
const GRAB_IT: &str = "---\nname: grab-it\ndescription: \"Fetch a title straight away.\"\n\
tools: [inventory.query, download.submit, task.inspect]\n---\n# Grab it\n\n1. Submit the plan with download.submit.\n";

fn drop_skill(env: &Env, folder: &str, text: &str) {
    let dir = env.app.caps().runtime().config().skills_dir().join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
}

fn offered(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

async fn events(agent: &AgentRuntime, run: &Run) -> Vec<RunEvent> {
    agent.runs().run_events(&run.id, 0, 1000).await.unwrap()
}

/// The finished `agent.tool_call` events of `name`: (actor, status).
fn finished(events: &[RunEvent], name: &str) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e.kind == "agent.tool_call" && e.payload["name"] == name && e.payload["phase"] != "started")
        .map(|e| (e.payload["actor"].as_str().unwrap().into(), e.payload["status"].as_str().unwrap().into()))
        .collect()
}

fn skill_reads(events: &[RunEvent]) -> Vec<Value> {
    events.iter().filter(|e| e.kind == "agent.skill_read").map(|e| e.payload.clone()).collect()
}

fn closed_reason(read: &Value, tool: &str) -> String {
    let closed = read["closed"].as_array().unwrap();
    let found = closed.iter().find(|c| c["tool"] == tool);
    found.map(|c| c["reason"].as_str().unwrap().to_string()).unwrap_or_default()
}

/// An agent answering with `recording`'s model on an in-process worker.
fn agent_with(env: &Env, recording: &Arc<Recording>) -> Arc<AgentRuntime> {
    let agent = Arc::new(env.app.new_agent().with_provider(recording.clone()));
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(10), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "skills-test".into(), config);
    capstan::agent::task::register(&mut worker, &agent);
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    agent
}

/// Run `id` once it has ended.
async fn ended(agent: &AgentRuntime, id: &str) -> Run {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = agent.runs().get(id).await.unwrap();
        if run.status.is_final() {
            return run;
        }
        assert!(Instant::now() < deadline, "the run did not end: {run:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_sees_the_skills_reads_one_and_gets_its_tools() {
    let env = env(Backend::Sqlite).await;
    settings(&env, &[("agent.max_tools", json!(1))]).await;
    let script = r#"{"scripts": [{"steps": [
        {"tools": [{"name": "read_skill", "input": {"name": "download-not-in-library"}}]},
        {"tools": [{"name": "task.inspect", "input": {"subjectId": "dl-1"}}]}
      ], "finalText": "Looked: {{task.inspect.items.length}} tasks."}]}"#;
    let (run, recording, front) = run(&env, script, "why is Dune not in my library?", None).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    let seen = recording.seen.lock().unwrap().clone();

    // Every request lists the skills by name and description.
    for skill in ["download-not-in-library", "failed-import", "wanted-not-fetched"] {
        assert!(seen[0].system.contains(&format!("- {skill}: ")), "{skill} is listed: {}", seen[0].system);
    }
    assert!(offered(&seen[0]).contains(&"read_skill".to_string()));
    assert!(
        !offered(&seen[0]).contains(&"task.inspect".to_string()),
        "one tool to start with: {:?}",
        offered(&seen[0])
    );

    // Reading the skill gave its steps and enabled its tools.
    let session = front.sessions().lines(&run.id).await.unwrap().join("\n");
    assert!(session.contains("Check these four places in this order"), "the model was given the steps");
    for tool in ["download.status", "task.inspect", "organize.plan"] {
        assert!(offered(&seen[1]).contains(&tool.to_string()), "{tool} enabled: {:?}", offered(&seen[1]));
    }
    assert!(seen[1].system.contains("Tools enabled by your search or skill"), "{}", seen[1].system);
    let events = events(&front, &run).await;
    assert_eq!(finished(&events, "task.inspect"), [("agent".to_string(), "succeeded".to_string())]);

    // The read is in the run's events and in the audit log.
    let reads = skill_reads(&events);
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0]["skill"], "download-not-in-library");
    assert_eq!(reads[0]["actor"], "agent");
    assert_eq!(reads[0]["closed"], json!([]), "a plan-only run may call every tool this skill lists");
    let audit = env.app.audit().list(0, 10_000).await.unwrap();
    let row = audit.iter().find(|r| r.event.action == "agent.skill_read").expect("an audit row");
    assert_eq!(row.event.subject, "download-not-in-library");
    assert_eq!(row.event.principal, format!("agent:{}", run.id));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_never_opens_what_the_run_may_not_call() {
    let env = env(Backend::Sqlite).await;
    drop_skill(&env, "grab-it", GRAB_IT);
    let script = r#"{"scripts": [{"steps": [
        {"tools": [{"name": "read_skill", "input": {"name": "grab-it"}}]},
        {"tools": [{"name": "download.submit", "input": {"planId": "plan-1"}},
                   {"name": "task.inspect", "input": {"subjectId": "dl-1"}}]}
      ], "finalText": "Done."}]}"#;

    // A plan-only run: the execute capability stays out of reach.
    let (run1, recording, front) = run(&env, script, "grab Dune now", None).await;
    let events1 = events(&front, &run1).await;
    let read = &skill_reads(&events1)[0];
    assert!(closed_reason(read, "download.submit").contains("plan-only run stops at propose"), "{read}");
    assert_eq!(read["callable"], json!(["inventory.query", "task.inspect"]));
    let seen = recording.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|r| !offered(r).contains(&"download.submit".to_string())), "never offered");
    assert_eq!(finished(&events1, "download.submit"), [("agent".to_string(), "denied".to_string())]);

    // An allowlist: a read capability the skill lists stays outside it.
    let allow = Some(vec!["inventory.query".to_string()]);
    let (run2, _, front) = run(&env, script, "grab Dune now", allow).await;
    let events2 = events(&front, &run2).await;
    let read = &skill_reads(&events2)[0];
    assert!(closed_reason(read, "task.inspect").contains("outside this run's allowlist"), "{read}");
    assert_eq!(read["callable"], json!(["inventory.query"]));
    assert_eq!(finished(&events2, "task.inspect"), [("agent".to_string(), "denied".to_string())]);
    let rejected = events2.iter().any(|e| e.payload["name"] == "task.inspect" && e.payload["phase"] == "rejected");
    assert!(rejected, "refused by the allowlist, not run");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subagent_that_reads_a_skill_stays_read_only() {
    let env = env(Backend::Sqlite).await;
    drop_skill(&env, "grab-it", GRAB_IT);
    let script = r#"{"scripts": [
        {"match": ["hand"], "steps": [{"tools": [{"name": "delegate", "input": {"goal": "use the playbook"}}]}],
         "finalText": "Subtask said: {{delegate.findings}}"},
        {"match": ["playbook"], "steps": [
            {"tools": [{"name": "read_skill", "input": {"name": "grab-it"}}]},
            {"tools": [{"name": "download.submit", "input": {"planId": "plan-1"}}]}
        ], "finalText": "tried"}
    ]}"#;
    let recording = Arc::new(Recording { model: Scripted::from_json(script).unwrap(), seen: Mutex::new(Vec::new()) });
    let agent = agent_with(&env, &recording);
    let new = NewRun {
        goal: "hand this to a helper".into(),
        mode: RunMode::Execute,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let started = agent.start(new).await.unwrap();
    let run = ended(&agent, &started.id).await;
    assert_eq!(run.final_text.as_deref(), Some("Subtask said: tried"), "{run:?}");
    let events = events(&agent, &run).await;
    let read = &skill_reads(&events)[0];
    assert_eq!(read["actor"], "subagent");
    assert!(closed_reason(read, "download.submit").contains("a subagent may only read and preview"), "{read}");
    assert_eq!(finished(&events, "download.submit"), [("subagent".to_string(), "denied".to_string())]);
    let audit = env.app.audit().list(0, 10_000).await.unwrap();
    let row = audit.iter().find(|r| r.event.action == "agent.skill_read").expect("an audit row");
    assert_eq!(
        (row.event.actor_kind.as_str(), row.event.principal.clone()),
        ("subagent", format!("subagent:{}", run.id))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_started_with_a_skill_carries_its_steps_in_every_request() {
    let env = env(Backend::Sqlite).await;
    settings(&env, &[("agent.max_tools", json!(1))]).await;
    let script = r#"{"scripts": [{"steps": [
        {"tools": [{"name": "download.status", "input": {"downloadTaskId": "dl-1"}}]}
      ], "finalText": "Checked."}]}"#;
    let recording = Arc::new(Recording { model: Scripted::from_json(script).unwrap(), seen: Mutex::new(Vec::new()) });
    let agent = agent_with(&env, &recording);
    let new = |skill: &str| NewRun {
        goal: "is my Dune download stuck?".into(),
        mode: RunMode::PlanOnly,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: Some(skill.into()),
    };

    // A skill that does not exist refuses the start, and nothing is made.
    let refused = agent.start(new("no-such-skill")).await.unwrap_err();
    assert_eq!(refused.to_string(), "no skill is named no-such-skill");
    assert!(agent.runs().list(10).await.unwrap().is_empty());

    let started = agent.start(new("stuck-download")).await.unwrap();
    let run = ended(&agent, &started.id).await;
    assert_eq!(run.skill.as_deref(), Some("stuck-download"));
    let seen = recording.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "the model's own step and its answer: no turn made up for it");
    for request in &seen {
        assert!(request.system.contains("This run started with the skill stuck-download read"), "{}", request.system);
        assert!(request.system.contains("# A download that stalled or failed"), "its steps are there");
        assert!(request.system.contains("download.recheck (it is labelled execute"), "{}", request.system);
        // Its callable tools are offered from the first request, whatever
        // the request's words pick.
        assert!(offered(request).contains(&"download.status".to_string()), "{:?}", offered(request));
        assert!(!offered(request).contains(&"download.recheck".to_string()));
    }
    let reads = skill_reads(&events(&agent, &run).await);
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0]["startedWith"], true);
}
