//! Auto-investigate, on both backends, with a scripted model: with
//! `agent.auto_investigate` on, a new decision about a failed download gets
//! exactly one bounded, plan-only run created by `system:auto-investigate`
//! that may only read (and resolve identities) — a write it tries is
//! refused and never runs — and when the run ends the decision waits for a
//! human with the run's conclusion. A second trigger starts nothing;
//! with the setting off, or for a decision an agent run caused, no run
//! starts at all. An ambiguous identity found by `identity.resolve` opens
//! one decision and one investigation however often it is asked again, and
//! an investigation that resolves the identity closes it on the stored
//! fact. A recovery by `task.retry` is verified by the task succeeding.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::domain::INVESTIGATE_DECISION;
use capstan::tasks::{NewTask, TaskStatus, Tasks, Worker, WorkerConfig};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use super::runs::set;
use crate::storage::ledger::{Env, env};

const INVESTIGATING: &str = r#"{"scripts": [{
  "match": ["investigate"],
  "steps": [
    {"text": "Looking.", "tools": [{"name": "inventory.query", "input": {}}]},
    {"tools": [{"name": "test.counter-safe", "input": {"label": "fix it"}}]}
  ],
  "finalText": "The files are gone from disk; Force recheck once they are back."
}]}"#;

fn worker(env: &Env) {
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(5), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(env.db.clone()), "investigate".into(), config);
    capstan::agent::task::register(&mut worker, env.app.agent());
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(env.app.agent().clone(), Default::default()));
    capstan::recovery::register(&mut worker, env.app.agent(), env.app.settings());
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
}

async fn open(env: &Env, subject: &str, evidence: Value) -> String {
    let options = json!([{"id": "leave", "label": "Leave it", "action": "dismiss"}]);
    let key = format!("download_failed:{subject}");
    let (decision, _) =
        env.svc.domain.open_decision("download_failed", Some(subject), &options, &evidence, &key).await.unwrap();
    decision.id
}

/// The investigateDecision tasks about `decision`, once all have ended.
async fn investigations(env: &Env, decision: &str) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let tasks = Tasks::new(env.db.clone()).list(Some(decision), 100).await.unwrap();
        let ours: Vec<_> = tasks.into_iter().filter(|t| t.kind == INVESTIGATE_DECISION).collect();
        if !ours.is_empty() && ours.iter().all(|t| t.status == TaskStatus::Succeeded) {
            return ours.into_iter().map(|t| t.result.unwrap()).collect();
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the investigation tasks never ended: {ours:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until decision `id` is in one of `statuses`, and answers it.
async fn reaches(env: &Env, id: &str, statuses: &[&str]) -> capstan::domain::Decision {
    let started = Instant::now();
    loop {
        let d = env.svc.domain.decision(id).await.unwrap();
        if statuses.contains(&d.status.as_str()) {
            return d;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "decision {id} never reached {statuses:?}: {d:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn runs_for(env: &Env, decision: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT id FROM agent_run WHERE decision_id = $1")
        .bind(decision)
        .fetch_all(&env.db.pool)
        .await
        .unwrap()
}

async fn a_new_decision_gets_one_bounded_read_only_investigation(backend: Backend) {
    let env = env(backend).await;
    set(&env.app, &[("model.script", json!(INVESTIGATING)), ("agent.investigate_max_tool_calls", json!(3))]).await;
    worker(&env);

    // Off by default: the decision stays open and no run starts.
    let quiet = open(&env, "d0", json!({"problem": "qBittorrent reports the download missing"})).await;
    assert_eq!(investigations(&env, &quiet).await[0]["why"], "agent.auto_investigate is off");
    assert!(runs_for(&env, &quiet).await.is_empty());

    set(&env.app, &[("agent.auto_investigate", json!(true))]).await;
    let decision = open(&env, "d1", json!({"problem": "qBittorrent reports the download missing"})).await;
    let waiting = reaches(&env, &decision, &["awaiting_user"]).await;
    let runs = runs_for(&env, &decision).await;
    assert_eq!(runs.len(), 1, "one investigation");
    let run = env.app.agent().runs().get(&runs[0]).await.unwrap();
    assert_eq!((run.created_by.as_str(), run.mode.as_str()), ("system:auto-investigate", "plan_only"));
    let bounds = run.investigation.clone().unwrap();
    assert_eq!((bounds.max_tool_calls, bounds.max_duration_sec), (3, 600));
    // The kind's playbook is read before the first request, and the run
    // may call only what both the skill and a read-only run name.
    assert_eq!(run.skill.as_deref(), Some("stuck-download"));
    let allowed = run.capability_allowlist.clone().unwrap();
    assert_eq!(allowed, ["download.status", "inventory.query", "task.inspect"]);
    let events = env.app.agent().runs().run_events(&run.id, 0, 1000).await.unwrap();
    let read = events.iter().find(|e| e.kind == "agent.skill_read").expect("the skill's read is recorded");
    assert_eq!((&read.payload["skill"], &read.payload["startedWith"]), (&json!("stuck-download"), &json!(true)));
    assert_eq!(read.seq, 1, "before anything the run did");
    assert_eq!(read.payload["callable"], json!(["inventory.query", "download.status", "task.inspect"]));
    let closed: Vec<&str> =
        read.payload["closed"].as_array().unwrap().iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(closed, ["download.recheck", "task.retry", "download.replace"], "the skill's execute tools stay closed");
    assert_eq!(env.mock.writes(), 0, "the write the model tried never ran");
    let events = env.app.agent().runs().run_events(&run.id, 0, 1000).await.unwrap();
    let refused = events
        .iter()
        .find(|e| {
            e.kind == "agent.tool_call" && e.payload["name"] == "test.counter-safe" && e.payload["phase"] != "started"
        })
        .unwrap_or_else(|| panic!("no end of the write the model tried: {events:?}"));
    assert_eq!(
        (refused.payload["phase"].as_str(), refused.payload["status"].as_str()),
        (Some("rejected"), Some("denied"))
    );
    assert!(
        refused.payload["error"].as_str().unwrap().contains("outside this run's allowlist"),
        "{:?}",
        refused.payload
    );

    let found = &waiting.evidence["agentInvestigation"];
    assert_eq!(found["runId"], run.id.as_str());
    assert_eq!(found["conclusion"], "The files are gone from disk; Force recheck once they are back.");
    assert_eq!(waiting.evidence["problem"], "qBittorrent reports the download missing", "what it knew is kept");
    let events = env.svc.events.list(0, 1000).await.unwrap();
    let moves: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == "decision.updated" && e.payload["decisionId"] == decision.as_str())
        .map(|e| e.payload["status"].as_str().unwrap())
        .collect();
    assert_eq!(moves, ["investigating", "awaiting_user"]);

    // The same trigger again starts nothing.
    let again = NewTask {
        kind: INVESTIGATE_DECISION.into(),
        subject: Some(decision.clone()),
        payload: json!({"decisionId": decision}),
        dedupe_key: None,
        max_attempts: 1,
        created_by: "test".into(),
    };
    Tasks::new(env.db.clone()).enqueue(&again).await.unwrap();
    let results = investigations(&env, &decision).await;
    assert_eq!(results.len(), 2);
    assert!(results.iter().any(|r| r["investigated"] == false), "{results:?}");
    assert_eq!(runs_for(&env, &decision).await.len(), 1);

    // A decision an agent run caused is not investigated by another.
    let caused = open(&env, "d2", json!({"problem": "x", "openedByRun": "run-9"})).await;
    assert_eq!(investigations(&env, &caused).await[0]["why"], "an agent run caused it");
    assert!(runs_for(&env, &caused).await.is_empty());
    assert_eq!(env.svc.domain.decision(&caused).await.unwrap().status, capstan::domain::DecisionStatus::Open);
}

/// An ambiguous identity, as `identity.resolve` finds it: one decision and
/// one investigation, however often the sweep asks again.
async fn an_ambiguous_identity_is_asked_and_investigated_once(backend: Backend) {
    use capstan::domain::{NewEntity, NewRelease};
    use capstan::pipeline::Origin;
    use capstan::runtime::EffectClass;
    let env = env(backend).await;
    set(&env.app, &[("model.script", json!(INVESTIGATING)), ("agent.auto_investigate", json!(true))]).await;
    worker(&env);
    let domain = &env.svc.domain;
    for (tmdb, year) in [(8587, 1994), (420818, 2019)] {
        let lion = NewEntity {
            kind: capstan::domain::EntityKind::Movie,
            tmdb_id: Some(tmdb),
            title: "The Lion King".into(),
            original_title: None,
            year: Some(year),
            seasons: vec![],
            episodes: Vec::new(),
        };
        domain.upsert_entity(&lion).await.unwrap();
    }
    let release = NewRelease {
        indexer: "torznab".into(),
        title: "The.Lion.King.1080p.BluRay.x264-GRP".into(),
        parsed: json!({}),
        size: Some(9_000_000_000),
        infohash: Some("b".repeat(40)),
        download_url: None,
        magnet_url: None,
    };
    let release = domain.record_release(&release).await.unwrap();
    let mut opened = Vec::new();
    for _ in 0..3 {
        let origin = Origin::cli(EffectClass::Propose);
        let out = env.caps.invoke(&origin, "identity.resolve", &json!({"sourceReleaseId": release.id})).await.unwrap();
        assert_eq!(out.output.as_ref().unwrap()["status"], "ambiguous", "{out:?}");
        opened.push(out.output.unwrap()["decisionId"].as_str().unwrap().to_string());
    }
    opened.dedup();
    assert_eq!(opened.len(), 1, "one decision however often it is asked");
    let decision = &opened[0];
    let waiting = reaches(&env, decision, &["awaiting_user"]).await;
    assert_eq!(waiting.kind, "identity_ambiguous");
    assert!(waiting.evidence["agentInvestigation"]["conclusion"].is_string(), "{:?}", waiting.evidence);
    assert_eq!(investigations(&env, decision).await.len(), 1, "one trigger");
    let runs = runs_for(&env, decision).await;
    assert_eq!(runs.len(), 1, "one investigation");
    let run = env.app.agent().runs().get(&runs[0]).await.unwrap();
    assert_eq!(run.skill, None, "no skill is the playbook for an ambiguous identity");
    assert!(run.capability_allowlist.unwrap().iter().any(|c| c == "identity.resolve"));

    // An investigation that settles the identity closes the question, the
    // release's stored identity being the fact.
    let remake = NewRelease {
        indexer: "torznab".into(),
        title: "The.Lion.King.2160p.WEB-DL.x265-GRP".into(),
        parsed: json!({}),
        size: Some(9_000_000_000),
        infohash: Some("c".repeat(40)),
        download_url: None,
        magnet_url: None,
    };
    let remake = domain.record_release(&remake).await.unwrap();
    let chosen = domain
        .entities(Some(capstan::domain::EntityKind::Movie), 10)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.year == Some(2019))
        .unwrap();
    let settling = json!({"scripts": [{"match": ["investigate"], "steps": [{"tools": [{"name": "identity.resolve",
        "input": {"sourceReleaseId": remake.id, "candidates": [{"entityId": chosen.id}]}}]}],
        "finalText": "The 2019 film: the release is 2160p WEB-DL, which the 1994 film never had."}]});
    set(&env.app, &[("model.script", json!(settling.to_string()))]).await;
    let origin = Origin::cli(EffectClass::Propose);
    let out = env.caps.invoke(&origin, "identity.resolve", &json!({"sourceReleaseId": remake.id})).await.unwrap();
    let asked = out.output.unwrap()["decisionId"].as_str().unwrap().to_string();
    // Handed back, then closed once the stored identity is read: waits for
    // the end, not the moment between.
    let closed = reaches(&env, &asked, &["resolved"]).await;
    assert_eq!(
        (closed.status.as_str(), closed.resolved_by.as_deref()),
        ("resolved", Some("system:auto-investigate")),
        "{closed:?}"
    );
    let facts = &closed.resolution.as_ref().unwrap()["execution"]["facts"];
    assert_eq!(
        (facts["identityStatus"].as_str(), facts["entityId"].as_str()),
        (Some("resolved"), Some(chosen.id.as_str()))
    );
    assert_eq!(domain.release(&remake.id).await.unwrap().entity_id.as_deref(), Some(chosen.id.as_str()));
}

/// A task kind that succeeds whenever it runs.
struct Mends;

impl capstan::tasks::TaskHandler for Mends {
    fn run(&self, _task: capstan::tasks::Task) -> capstan::tasks::HandlerFuture {
        Box::pin(async { Ok(json!({"mended": true})) })
    }
}

/// A dead task of `kind` (run by `handler` when retried), recover mode on
/// with grants for its actions, a scripted model that retries the task
/// saying `said`, and a worker running it all; answers the task's id.
async fn recovering_a_dead_task(
    env: &Env,
    kind: &str,
    handler: Arc<dyn capstan::tasks::TaskHandler>,
    said: &str,
) -> String {
    use capstan_tests::grants::for_an_hour;
    let tasks = Tasks::new(env.db.clone());
    let stuck = NewTask {
        kind: kind.into(),
        subject: None,
        payload: json!({}),
        dedupe_key: None,
        max_attempts: 1,
        created_by: "test".into(),
    };
    let stuck = tasks.enqueue(&stuck).await.unwrap().0.id;
    sqlx::query("UPDATE task SET status = 'dead' WHERE id = $1").bind(&stuck).execute(&env.db.pool).await.unwrap();
    let script = json!({"scripts": [{"match": ["investigate"], "steps": [
        {"tools": [{"name": "task.retry", "input": {"taskId": stuck}}]}
    ], "finalText": said}]});
    set(
        &env.app,
        &[
            ("model.script", json!(script.to_string())),
            ("agent.auto_investigate", json!(true)),
            ("agent.auto_investigate_mode", json!("recover")),
            ("agent.goal_poll_sec", json!(1)),
            ("agent.recover_verify_sec", json!(60)),
        ],
    )
    .await;
    for action in ["download.recheck", "task.retry"] {
        env.svc.authz.create_grant(&for_an_hour(action), "admin:alice").await.unwrap();
    }
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(5), concurrency: 2 };
    let mut worker = Worker::new(tasks, "recover".into(), config);
    capstan::agent::task::register(&mut worker, env.app.agent());
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(env.app.agent().clone(), Default::default()));
    capstan::recovery::register(&mut worker, env.app.agent(), env.app.settings());
    worker.handle(kind, handler);
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    stuck
}

/// A recovery that retries a task is verified from that task's state: the
/// decision closes as `system:auto-recover` only once the retried task has
/// succeeded, with its state as the facts.
async fn a_recovery_that_retries_a_task_is_verified_by_the_task_succeeding(backend: Backend) {
    let env = env(backend).await;
    let tasks = Tasks::new(env.db.clone());
    let stuck = recovering_a_dead_task(&env, "testMend", Arc::new(Mends), "Retried the task that had died.").await;

    let decision = open(&env, "d-gone", json!({"problem": "the import task died"})).await;
    let closed = reaches(&env, &decision, &["resolved", "awaiting_user"]).await;
    assert_eq!(
        (closed.status.as_str(), closed.resolved_by.as_deref()),
        ("resolved", Some("system:auto-recover")),
        "{closed:?}"
    );
    let execution = &closed.resolution.as_ref().unwrap()["execution"];
    assert_eq!(execution["verified"], true, "{execution}");
    assert_eq!(execution["facts"]["retriedTasks"], json!([{"taskId": stuck, "status": "succeeded"}]), "{execution}");
    assert_eq!(tasks.get(&stuck).await.unwrap().unwrap().status, TaskStatus::Succeeded);
    let run = env.app.agent().runs().get(execution["runId"].as_str().unwrap()).await.unwrap();
    let may = |run: &capstan::agent::runs::Run| {
        run.capability_allowlist.clone().unwrap_or_default().iter().any(|a| a == "download.replace")
    };
    assert!(!may(&run), "giving a release up needs a grant naming download.replace");
    let said = run.final_text.unwrap();
    assert!(said.starts_with("Recovered (verified): the task it retried has succeeded."), "{said}");

    // `*` does not name it; a grant for download.replace itself does.
    let allowlist_for = |subject: &'static str| {
        let env = &env;
        async move {
            let decision = open(env, subject, json!({"problem": "the torrent is a fake"})).await;
            let started = Instant::now();
            loop {
                if let Some(run) = runs_for(env, &decision).await.pop() {
                    return env.app.agent().runs().get(&run).await.unwrap();
                }
                assert!(started.elapsed() < Duration::from_secs(60), "no run investigated {decision}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    use capstan_tests::grants::for_an_hour;
    env.svc.authz.create_grant(&for_an_hour("*"), "admin:alice").await.unwrap();
    assert!(!may(&allowlist_for("d-star").await), "a grant for everything is not one naming it");
    env.svc.authz.create_grant(&for_an_hour("download.replace"), "admin:alice").await.unwrap();
    assert!(may(&allowlist_for("d-named").await), "a grant naming download.replace lets recovery use it");
}

/// A kind investigated only with a playbook: a failed import gets a run
/// that starts with `failed-import` read, whose allowlist is what both the
/// skill and a read-only run name; its steps are in every request.
async fn a_failed_import_is_investigated_with_its_playbook(backend: Backend) {
    let env = env(backend).await;
    let script = json!({"scripts": [{"match": ["investigate"], "steps": [
        {"tools": [{"name": "task.inspect", "input": {"subjectId": "org-1"}}]},
        {"tools": [{"name": "task.retry", "input": {"taskId": "t-1"}}]}
    ], "finalText": "The library folder is not writable; retry once it is."}]});
    set(&env.app, &[("model.script", json!(script.to_string())), ("agent.auto_investigate", json!(true))]).await;
    worker(&env);
    let options = json!([{"id": "dismiss", "label": "Leave it", "action": "dismiss"}]);
    let evidence = json!({"organizationId": "org-1", "downloadTaskId": "dl-1", "error": "permission denied"});
    let (decision, _) = env
        .svc
        .domain
        .open_decision("import_failed", Some("org-1"), &options, &evidence, "import_failed:org-1")
        .await
        .unwrap();
    let waiting = reaches(&env, &decision.id, &["awaiting_user"]).await;
    assert_eq!(
        waiting.evidence["agentInvestigation"]["conclusion"],
        "The library folder is not writable; retry once it is."
    );
    let runs = runs_for(&env, &decision.id).await;
    let run = env.app.agent().runs().get(&runs[0]).await.unwrap();
    assert_eq!((run.skill.as_deref(), run.mode.as_str()), (Some("failed-import"), "plan_only"));
    assert_eq!(run.capability_allowlist.unwrap(), ["download.status", "inventory.query", "task.inspect"]);
    let events = env.app.agent().runs().run_events(&run.id, 0, 1000).await.unwrap();
    let ended = |name: &str| {
        events
            .iter()
            .find(|e| e.kind == "agent.tool_call" && e.payload["name"] == name && e.payload["phase"] != "started")
            .map(|e| e.payload["status"].as_str().unwrap().to_string())
    };
    assert_eq!(ended("task.inspect").as_deref(), Some("succeeded"));
    assert_eq!(ended("task.retry").as_deref(), Some("denied"), "the skill's execute tool stays closed");
    let session = env.app.agent().sessions().lines(&run.id).await.unwrap().join("\n");
    assert!(!session.contains("read_skill"), "no turn the model did not take");
}

/// A task kind that fails whenever it runs.
struct Breaks;

impl capstan::tasks::TaskHandler for Breaks {
    fn run(&self, _task: capstan::tasks::Task) -> capstan::tasks::HandlerFuture {
        Box::pin(async { Err(capstan::tasks::HandlerError::GiveUp("the disk is full".into())) })
    }
}

/// A recovery that retried a task which failed again: the run's report and
/// final words open "Not recovered:" with what the task says, and the
/// decision goes back to a human.
async fn a_recovery_that_did_not_work_says_so_first(backend: Backend) {
    let env = env(backend).await;
    let said = "Retried the task that had died; it should work now.";
    recovering_a_dead_task(&env, "testBreak", Arc::new(Breaks), said).await;

    let decision = open(&env, "d-broken", json!({"problem": "the import task died"})).await;
    let back = reaches(&env, &decision, &["awaiting_user", "resolved"]).await;
    assert_eq!(back.status.as_str(), "awaiting_user", "{back:?}");
    assert_eq!(back.evidence["autoRecover"]["outcome"], "failed", "{:?}", back.evidence);
    let run = env.app.agent().runs().get(back.evidence["autoRecover"]["runId"].as_str().unwrap()).await.unwrap();
    let said = run.final_text.unwrap();
    assert!(said.starts_with("Not recovered: the task it retried is "), "{said}");
    assert!(said.contains("The model said (unverified): Retried the task that had died"), "{said}");
    let report = env.svc.domain.artifact(&run.report_id.unwrap()).await.unwrap();
    assert_eq!(report.body["recovery"]["verified"], false);
    assert!(report.body["summary"].as_str().unwrap().starts_with("Not recovered: "), "{}", report.body);
}

both_backends!(
    a_failed_import_is_investigated_with_its_playbook,
    a_recovery_that_did_not_work_says_so_first,
    a_new_decision_gets_one_bounded_read_only_investigation,
    a_recovery_that_retries_a_task_is_verified_by_the_task_succeeding,
    an_ambiguous_identity_is_asked_and_investigated_once
);
