//! Runs that cannot go on end once: a model that is not configured and a
//! spent day's budget end the run with the reason, and nothing queues it
//! again — not the waker, not a message — until something that could
//! change the outcome happens (the settings change); then it goes on by
//! itself. An abort is one conditional change: 409 with nothing written for
//! a run that ended, and a 200 always ends the run `cancelled`. On SQLite
//! and on PostgreSQL.

use std::time::Duration;

use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::agent::runs::{ended, set, start};
use crate::storage::ledger::{Env, env};
use capstan_tests::api::Api;

/// How many `runAgent` tasks were ever queued for the run.
async fn tasks_of(env: &Env, run_id: &str) -> usize {
    let tasks = capstan::tasks::Tasks::new(env.db.clone()).list(Some(&format!("run:{run_id}")), 500).await.unwrap();
    tasks.iter().filter(|t| t.kind == "runAgent").count()
}

async fn statuses(api: &Api, id: &str) -> Vec<String> {
    let body = api.json(&format!("/agent/runs/{id}?limit=1000")).await;
    body["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "agent.run_status")
        .map(|e| e["payload"]["status"].as_str().unwrap().to_string())
        .collect()
}

async fn an_unconfigured_model_ends_a_run_once_until_the_settings_change(backend: Backend) {
    let env = env(backend).await;
    set(&env.app, &[("model.provider", json!("anthropic"))]).await;
    let api = start(&env).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = crate::agent::runs::wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "failed");
    assert!(body["run"]["error"].as_str().unwrap().contains("model.model must be set"), "{body}");
    assert_eq!(body["run"]["blockedOn"], "config");

    // The waker runs every second: nothing is queued again, and a message
    // is kept for later rather than starting the run to fail again.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (status, _) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "try again"})).await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(tasks_of(&env, &id).await, 1, "the run was queued again");
    assert_eq!(statuses(&api, &id).await, ["failed"]);
    assert_eq!(api.json(&format!("/agent/runs/{id}")).await["run"]["status"], "failed");

    // A second blocked run is aborted: it ends cancelled, and fixing the
    // model later does not bring it back.
    let (_, other) = api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
    let other = other["id"].as_str().unwrap().to_string();
    let body = crate::agent::runs::wait_run(&api, &other, "ended", ended).await;
    assert_eq!(body["run"]["blockedOn"], "config");
    let (status, aborted) = api.post(&format!("/agent/runs/{other}/abort"), json!({"reason": "never mind"})).await;
    assert_eq!(status, 200, "{aborted}");
    assert_eq!((aborted["status"].as_str(), aborted["blockedOn"].as_str()), (Some("cancelled"), None));

    // The operator fixes the model: the run goes on by itself.
    let body = settings_patch(&env, json!({"model.provider": "scripted"})).await;
    assert_eq!(body.0, 200, "{:?}", body.1);
    let body = crate::agent::runs::wait_run(&api, &id, "went on", |r| r["status"] == "succeeded").await;
    assert_eq!(body["run"]["blockedOn"], Value::Null);
    assert_eq!(tasks_of(&env, &id).await, 2);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        api.json(&format!("/agent/runs/{other}")).await["run"]["status"],
        "cancelled",
        "the aborted run stays ended"
    );
    assert_eq!(tasks_of(&env, &other).await, 1);
}

async fn a_spent_day_budget_ends_a_run_once_until_the_budget_is_raised(backend: Backend) {
    let env = env(backend).await;
    set(&env.app, &[("budget.max_runs_per_day", json!(1))]).await;
    let api = start(&env).await;
    let goal = json!({"goal": "What does my library hold?", "mode": "plan_only"});
    let (_, first) = api.post("/agent/runs", goal.clone()).await;
    crate::agent::runs::wait_run(&api, first["id"].as_str().unwrap(), "ended", ended).await;
    let (_, run) = api.post("/agent/runs", goal).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = crate::agent::runs::wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "budget_exceeded");
    assert!(body["run"]["error"].as_str().unwrap().contains("daily limit"), "{body}");
    for text in ["go on", "please"] {
        let (status, _) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": text})).await;
        assert_eq!(status, 200);
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(tasks_of(&env, &id).await, 1, "messages did not start the run to end it again");
    assert_eq!(statuses(&api, &id).await, ["budget_exceeded"]);
    let reports = env
        .svc
        .domain
        .artifacts(Some(capstan::domain::ArtifactKind::Report), Some(&format!("run:{id}")), 100)
        .await
        .unwrap();
    assert_eq!(reports.len(), 1, "one report, not one a second");

    let (status, _) = settings_patch(&env, json!({"budget.max_runs_per_day": 5})).await;
    assert_eq!(status, 200);
    let body = crate::agent::runs::wait_run(&api, &id, "went on", |r| r["status"] == "succeeded").await;
    assert_eq!(body["run"]["error"], Value::Null);
}

/// Changes settings as the console does (the route tells blocked runs).
async fn settings_patch(env: &Env, change: Value) -> (u16, Value) {
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.db, "admin").await;
    admin.send(reqwest::Method::PATCH, "/settings", change).await
}

async fn an_abort_takes_effect_or_changes_nothing(backend: Backend) {
    let env = env(backend).await;
    let api = start(&env).await;
    let goal = json!({"goal": "What does my library hold?", "mode": "plan_only"});
    let (_, run) = api.post("/agent/runs", goal.clone()).await;
    let id = run["id"].as_str().unwrap().to_string();
    crate::agent::runs::wait_run(&api, &id, "ended", ended).await;
    let (status, body) = api.post(&format!("/agent/runs/{id}/abort"), json!({"reason": "too late"})).await;
    assert_eq!(status, 409, "{body}");
    let after = api.json(&format!("/agent/runs/{id}")).await;
    assert_eq!(after["run"]["status"], "succeeded");
    assert_eq!(after["run"]["abortReason"], Value::Null, "a refused abort wrote nothing");

    // Aborts racing runs at every point of their lives: each 200 ends its
    // run cancelled, each 409 leaves it as it was.
    for delay_ms in [0u64, 5, 20, 50, 100, 200, 400] {
        let (_, run) = api.post("/agent/runs", goal.clone()).await;
        let id = run["id"].as_str().unwrap().to_string();
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        let (status, _) = api.post(&format!("/agent/runs/{id}/abort"), json!({"reason": "stop"})).await;
        let body = crate::agent::runs::wait_run(&api, &id, "ended", ended).await;
        match status {
            200 => {
                assert_eq!(body["run"]["status"], "cancelled", "after {delay_ms} ms: {body}");
                assert_eq!(body["run"]["error"], "stop");
            }
            409 => {
                assert_ne!(body["run"]["status"], "cancelled", "after {delay_ms} ms: {body}");
                assert_eq!(body["run"]["abortReason"], Value::Null);
            }
            other => panic!("abort answered {other}"),
        }
    }
}

both_backends!(
    an_unconfigured_model_ends_a_run_once_until_the_settings_change,
    a_spent_day_budget_ends_a_run_once_until_the_budget_is_raised,
    an_abort_takes_effect_or_changes_nothing,
);
