//! A report never claims success it did not verify: an execute run whose
//! every change was denied ends `failed` naming the calls, one asked for a
//! change that made none ends `nothing_done` saying what it called, a
//! plan-only run asked to fetch ends `nothing_done` saying fetching needs
//! an execute run, one that only asked a
//! question and answered it succeeds, and one whose change the ledger shows
//! done succeeds. On SQLite and on PostgreSQL.

use serde_json::{Value, json};

use capstan_tests::both_backends;
use capstan_tests::db::Backend;

use crate::agent::runs::{ended, report, set, start};
use crate::storage::ledger::env;
use capstan_tests::api::Api;

async fn run_to_the_end(api: &Api, goal: &str) -> Value {
    let (status, run) = api.post("/agent/runs", json!({"goal": goal})).await;
    assert_eq!(status, 201, "{run}");
    crate::agent::runs::wait_run(api, run["id"].as_str().unwrap(), "ended", ended).await
}

async fn execute_runs_are_judged_by_what_they_verifiably_did(backend: Backend) {
    let env = env(backend).await;
    let script = json!({"scripts": [
        {"match": ["count"], "steps": [{"tools": [{"name": "test.counter-safe", "input": {"label": "v"}}]}],
         "finalText": "Counted, all done."},
        {"match": ["fetch"], "steps": [], "finalText": "Done! It is in your library."},
        {"match": ["hold"], "steps": [{"tools": [{"name": "inventory.query", "input": {}}]}],
         "finalText": "Your library is empty."},
        {"match": ["find"], "steps": [{"tools": [{"name": "inventory.query", "input": {}}]}],
         "finalText": "Found it and fetched it!"},
    ]});
    set(&env.app, &[("model.script", json!(script.to_string()))]).await;
    let api = start(&env).await;

    // Every change denied (no grant): failed, naming the call and why.
    let body = run_to_the_end(&api, "count the things").await;
    assert_eq!(body["run"]["status"], "failed", "{body}");
    assert!(body["run"]["error"].as_str().unwrap().contains("every change the run tried failed or was denied"));
    let reasons = report(&body)["reasons"].as_array().unwrap();
    assert!(reasons[0].as_str().unwrap().starts_with("test.counter-safe denied"), "{reasons:?}");
    assert_eq!(report(&body)["verified"]["calls"]["writes"], json!({"ok": 0, "notOk": 1}));
    assert_eq!(env.mock.writes(), 0);

    // Asked for a change, made none, and said it was done: nothing_done.
    let body = run_to_the_end(&api, "fetch Dune: Part Two").await;
    assert_eq!(body["run"]["status"], "nothing_done", "{body}");
    assert_eq!(report(&body)["status"], "nothing_done");
    let why = body["run"]["error"].as_str().unwrap();
    assert!(why.contains("made none") && why.contains("it called no capability"), "{body}");

    // The same kind of goal in a plan-only run: never "succeeded"; it says
    // what it did and that fetching needs an execute run.
    let (status, run) =
        api.post("/agent/runs", json!({"goal": "find and fetch Dune: Part Two", "mode": "plan_only"})).await;
    assert_eq!(status, 201, "{run}");
    let body = crate::agent::runs::wait_run(&api, run["id"].as_str().unwrap(), "ended", ended).await;
    assert_eq!(body["run"]["status"], "nothing_done", "{body}");
    let why = body["run"]["error"].as_str().unwrap();
    assert!(why.contains("plan-only run changes nothing") && why.contains("execute run"), "{why}");

    // A question, answered from a read: succeeded.
    let body = run_to_the_end(&api, "What does my library hold?").await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");

    // With a grant the change happens and the ledger says so: succeeded.
    capstan_tests::grants::allow_everything(&env.svc).await;
    let body = run_to_the_end(&api, "count the things").await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    assert_eq!(report(&body)["verified"]["calls"]["writes"], json!({"ok": 1, "notOk": 0}));
    assert_eq!(env.mock.writes(), 1);
}

both_backends!(execute_runs_are_judged_by_what_they_verifiably_did);
