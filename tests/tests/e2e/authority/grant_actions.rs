//! What a grant may name, over HTTP, on both backends: a `prefix.*`
//! wildcard covers the execute capabilities whose ids start with it (and
//! nothing else); `policy.automation` covers the recovery actions and is
//! bound to the published automation policy, so superseding the policy
//! ends it; the runbook's short body (`action`, `policyRevisionId`,
//! `reason`) is taken with default budgets and expiry; bad bindings are
//! refused, changing nothing; and a grant scoped to a title covers the
//! recheck of that title's download only.

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
    let authz = &env.svc.authz;
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

/// A grant scoped to one title covers a recheck of that title's download
/// (download → plan → slot → entity), not another's, whatever the input says.
async fn an_entity_scoped_grant_covers_the_downloads_of_that_entity_only(backend: Backend) {
    use capstan::domain::{Author, NewEntity, NewPlan, NewRelease, NewSlot};
    let env = env(backend).await;
    let domain = &env.svc.domain;
    let mut downloads = Vec::new();
    for (n, (tmdb, title)) in [(438631, "Dune"), (329865, "Arrival")].into_iter().enumerate() {
        let entity = NewEntity {
            kind: capstan::domain::EntityKind::Movie,
            tmdb_id: Some(tmdb),
            title: title.into(),
            original_title: None,
            year: Some(2021),
            seasons: vec![],
            episodes: Vec::new(),
        };
        let entity = domain.upsert_entity(&entity).await.unwrap();
        let slot = NewSlot { entity_id: entity.id.clone(), season: None, quality: "1080p".into(), profile: None };
        let slot = domain.want(&slot).await.unwrap();
        let hash = format!("{n}").repeat(40);
        let release = NewRelease {
            indexer: "torznab".into(),
            title: format!("{title}.2021.1080p.WEB-DL.x264"),
            parsed: json!({}),
            size: None,
            infohash: Some(hash.clone()),
            download_url: None,
            magnet_url: None,
        };
        let release = domain.record_release(&release).await.unwrap();
        domain
            .match_identity(&release.id, Some(&entity.id), capstan::domain::IdentityStatus::Resolved, &json!({}))
            .await
            .unwrap();
        let by = Author::new("admin:test");
        let new = NewPlan { slot_id: slot.id.clone(), source_release_id: release.id.clone(), note: None };
        let plan = domain.draft_plan(&by, &new).await.unwrap();
        domain.reserve_plan(&plan.id).await.unwrap();
        let (_, download) = domain.mark_submitted(&plan.id, &hash).await.unwrap();
        downloads.push((entity.id, download.id));
    }
    let mut grant = capstan_tests::grants::for_an_hour("download.recheck");
    grant.scope.entity_ids = vec![downloads[0].0.clone()];
    env.svc.authz.create_grant(&grant, "admin:test").await.unwrap();
    let mut agent = Origin::cli(EffectClass::Execute);
    agent.actor = Actor::Agent;
    agent.principal = "agent:run-1".into();
    let may = |download: &str, entity: &str| {
        let input = json!({"downloadTaskId": download, "entityId": entity});
        let (caps, agent) = (env.caps.clone(), agent.clone());
        async move { caps.is_authorized(&agent, "download.recheck", &input).await.unwrap() }
    };
    let (dune, arrival) = (&downloads[0], &downloads[1]);
    assert!(may(&dune.1, &dune.0).await, "the title's own download");
    assert!(!may(&arrival.1, &dune.0).await, "another title's download, whatever the input claims");
    assert!(!may("no-such-download", &dune.0).await, "a download the store does not know");
}

both_backends!(
    grants_name_wildcards_policy_actions_and_the_runbook_body,
    an_entity_scoped_grant_covers_the_downloads_of_that_entity_only
);
