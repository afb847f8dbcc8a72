//! What a grant may name, over HTTP, on both backends: a `prefix.*`
//! wildcard covers the execute capabilities whose ids start with it (and
//! nothing else); `policy.automation` covers the recovery actions and is
//! bound to the published automation policy, so superseding the policy
//! ends it; the runbook's short body (`action`, `policyRevisionId`,
//! `reason`) is taken with default budgets and expiry; and bad bindings are
//! refused, changing nothing.

use capstan::pipeline::Origin;
use capstan::runtime::{Actor, EffectClass, Status};
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::ledger::env;

fn names(grant: &Value) -> Vec<&str> {
    let mut names: Vec<&str> =
        grant["scope"]["capabilities"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    names.sort();
    names
}

async fn grants_name_wildcards_policy_actions_and_the_runbook_body(backend: Backend) {
    let env = env(backend).await;
    let admin = Api::new(&serve(env.app.clone()).await).signed_in(&env.db, "admin").await;
    let count = || async { admin.json("/automation-grants").await["grants"].as_array().unwrap().len() };

    // task.* is the execute task capabilities, and only those.
    let (status, tasks) = admin.post("/automation-grants", json!({"action": "task.*"})).await;
    assert_eq!(status, 201, "{tasks}");
    assert_eq!(names(&tasks), ["task.cancel", "task.retry"], "task.inspect reads and needs no grant");
    let mut agent = Origin::cli(EffectClass::Execute);
    agent.actor = Actor::Agent;
    agent.principal = "agent:run-1".into();
    let retried = env.caps.invoke(&agent, "task.retry", &json!({"taskId": "no-such-task"})).await.unwrap();
    assert_ne!(
        retried.error.as_ref().map(|e| e.kind.as_str()),
        Some("denied"),
        "task.* covers task.retry: {retried:?}"
    );
    let other = env.caps.invoke(&agent, "test.counter-safe", &json!({"label": "x"})).await.unwrap();
    assert_eq!((other.status, other.error.unwrap().kind.as_str()), (Status::Failed, "denied"));

    // Defaults: 100 calls and 10 GB a day, for 30 days.
    assert_eq!((tasks["dailyInvocations"].as_i64(), tasks["dailyBytes"].as_i64()), (Some(100), Some(10_000_000_000)));
    let days = (tasks["expiresAt"].as_i64().unwrap() - capstan::store::now_ms()) as f64 / 86_400_000.0;
    assert!((29.9..=30.0).contains(&days), "{days} days");

    // policy.automation: the recovery actions, bound to the published
    // automation policy.
    let authz = env.caps.authz();
    let draft = authz
        .draft_policy("automation.recover", &json!({"kind": "automation", "recheck": true}), "admin:admin")
        .await
        .unwrap();
    authz.publish_policy(&draft.name, draft.revision).await.unwrap();
    let (status, recover) = admin.post("/automation-grants", json!({"action": "policy.automation"})).await;
    assert_eq!(status, 201, "{recover}");
    assert_eq!(names(&recover), ["download.recheck", "task.retry"]);
    assert_eq!(
        (recover["policyName"].as_str(), recover["policyRevision"].as_i64()),
        (Some("automation.recover"), Some(1))
    );

    // The runbook's body, bound by revision id, with its reason.
    let runbook = json!({"action": "download.recheck", "policyRevisionId": "automation.recover@1", "reason": "self-heal missing files"});
    let (status, grant) = admin.post("/automation-grants", runbook).await;
    assert_eq!(status, 201, "{grant}");
    assert_eq!((grant["policyName"].as_str(), grant["policyRevision"].as_i64()), (Some("automation.recover"), Some(1)));
    assert_eq!(grant["reason"], "self-heal missing files");
    let listed = admin.json("/automation-grants").await;
    assert!(listed["grants"].as_array().unwrap().iter().any(|g| g["reason"] == "self-heal missing files"), "{listed}");

    // Bad bindings and names are refused, and nothing is made.
    let before = count().await;
    let refused = [
        (json!({"action": "download.recheck", "policyRevisionId": "automation.recover"}), 422),
        (json!({"action": "download.recheck", "policyRevisionId": "automation.recover@0"}), 422),
        (json!({"action": "download.recheck", "policyRevisionId": "automation.recover@9"}), 404),
        (
            json!({"action": "download.recheck", "policyRevisionId": "automation.recover@1", "policyName": "automation.recover", "policyRevision": 1}),
            422,
        ),
        (json!({"action": "download.recheck", "reason": "x".repeat(501)}), 422),
        (json!({"action": "nothing.*"}), 422),
        (json!({"action": "*.*"}), 422),
        (json!({"action": "policy.nothing"}), 422),
        (json!({"action": "download.recheck", "dailyInvocations": 0}), 422),
    ];
    for (body, expected) in refused {
        let (status, answer) = admin.post("/automation-grants", body.clone()).await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    assert_eq!(count().await, before, "nothing was made");

    // Superseding the policy ends what was bound to it.
    let next = authz.draft_policy("automation.recover", &json!({"kind": "automation"}), "admin:admin").await.unwrap();
    authz.publish_policy(&next.name, next.revision).await.unwrap();
    let recheck = env.caps.invoke(&agent, "download.recheck", &json!({"downloadTaskId": "d1"})).await.unwrap();
    assert_eq!(recheck.error.as_ref().map(|e| e.kind.as_str()), Some("denied"), "{recheck:?}");
}

both_backends!(grants_name_wildcards_policy_actions_and_the_runbook_body);
