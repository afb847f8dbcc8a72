//! The library capabilities through the one invoke path, as an operator at
//! the CLI would call them, over the real domain store on both backends:
//! identity.resolve records a clear match and asks a human once about an
//! ambiguous one; inventory.query shows where each slot's acquisition
//! stands; task.inspect/retry/cancel act on real tasks and refuse what a
//! task's state does not allow; policy.preview reports a profile's effect
//! without writing and policy.apply publishes it; bad input changes nothing.

use capstan::domain::{Author, Domain, DomainError, NewEntity, NewPlan, NewRelease, SourceRelease};
use capstan::pipeline::{Capabilities, Origin};
use capstan::runtime::{EffectClass, Status};
use capstan::tasks::{NewTask, Tasks};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::domain::wanted_movie;
use crate::storage::ledger::env;

/// Calls `id` as a new operator request; the output on success, else
/// `Err(kind)` with the failure kind (`invalid-input`, `conflict`, ...).
async fn call(caps: &Capabilities, id: &str, input: Value) -> Result<Value, String> {
    let inv = caps.invoke(&Origin::cli(EffectClass::Execute), id, &input).await.unwrap();
    match inv.status {
        Status::Succeeded => Ok(inv.output.unwrap()),
        _ => Err(inv.error.map(|e| e.kind).unwrap_or_else(|| format!("{:?}", inv.status))),
    }
}

async fn movie(domain: &Domain, tmdb: i64, title: &str, year: i64) -> String {
    let new = NewEntity {
        kind: capstan::domain::EntityKind::Movie,
        tmdb_id: Some(tmdb),
        title: title.into(),
        original_title: None,
        year: Some(year),
        seasons: vec![],
        episodes: Vec::new(),
    };
    domain.upsert_entity(&new).await.unwrap().id
}

async fn release(domain: &Domain, title: &str, hash: char, size: i64) -> SourceRelease {
    let new = NewRelease {
        indexer: "torznab".into(),
        title: title.into(),
        parsed: json!({}),
        size: Some(size),
        infohash: Some(hash.to_string().repeat(40)),
        download_url: None,
        magnet_url: None,
    };
    domain.record_release(&new).await.unwrap()
}

async fn identity_resolve_accepts_a_clear_match_and_asks_once_about_remakes(backend: Backend) {
    let env = env(backend).await;
    let domain = &env.svc.domain;
    let part_two = movie(domain, 693134, "Dune: Part Two", 2024).await;
    movie(domain, 438631, "Dune", 2021).await;
    let lion_1994 = movie(domain, 8587, "The Lion King", 1994).await;
    let lion_2019 = movie(domain, 420818, "The Lion King", 2019).await;

    let dune = release(domain, "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX", 'a', 20_000_000_000).await;
    let out = call(&env.caps, "identity.resolve", json!({"sourceReleaseId": dune.id})).await.unwrap();
    assert_eq!(
        (out["status"].as_str(), out["entityId"].as_str()),
        (Some("resolved"), Some(part_two.as_str())),
        "{out}"
    );
    let stored = domain.release(&dune.id).await.unwrap();
    assert_eq!((stored.identity_status.as_str(), stored.entity_id.as_deref()), ("resolved", Some(part_two.as_str())));
    assert_eq!(stored.evidence.unwrap()["matched"], json!(["title", "year", "kind"]));

    let lion = release(domain, "The.Lion.King.1080p.BluRay.x264-GRP", 'b', 9_000_000_000).await;
    let first = call(&env.caps, "identity.resolve", json!({"sourceReleaseId": lion.id})).await.unwrap();
    assert_eq!(first["status"], "ambiguous", "{first}");
    // A second sweep over the same release finds the question already asked.
    let second = call(&env.caps, "identity.resolve", json!({"sourceReleaseId": lion.id})).await.unwrap();
    assert_eq!(second["decisionId"], first["decisionId"]);
    let decisions = domain.decisions(None, 100).await.unwrap();
    assert_eq!(decisions.len(), 1, "exactly one decision: {decisions:?}");
    let decision = &decisions[0];
    assert_eq!((decision.kind.as_str(), decision.subject.as_deref()), ("identity_ambiguous", Some(lion.id.as_str())));
    let mut options: Vec<&str> =
        decision.options.as_array().unwrap().iter().filter_map(|o| o["detail"]["entityId"].as_str()).collect();
    options.sort();
    let mut expected = [lion_1994.as_str(), lion_2019.as_str()];
    expected.sort();
    assert_eq!(options, expected);
    let stored = domain.release(&lion.id).await.unwrap();
    assert_eq!((stored.identity_status.as_str(), stored.entity_id.as_deref()), ("ambiguous", None));

    // Each candidate's option is a call that narrows the choice to it: with
    // one remake offered it is clear.
    let pick = decision.options.as_array().unwrap().iter().find(|o| o["detail"]["entityId"] == lion_2019.as_str());
    let pick = pick.unwrap();
    assert_eq!(pick["capabilityId"], "identity.resolve");
    let narrowed = call(&env.caps, "identity.resolve", pick["input"].clone()).await.unwrap();
    assert_eq!(narrowed["entityId"], lion_2019.as_str());

    assert_eq!(
        call(&env.caps, "identity.resolve", json!({"sourceReleaseId": dune.id, "force": true})).await,
        Err("invalid-input".into())
    );
    assert_eq!(
        call(&env.caps, "identity.resolve", json!({"sourceReleaseId": "no-such-release"})).await,
        Err("not-found".into())
    );
}

async fn inventory_query_shows_each_slots_plan_and_download(backend: Backend) {
    let env = env(backend).await;
    let domain = &env.svc.domain;
    let agent = Author::new("task:evaluateAcquisition");
    let (slot, rel) = wanted_movie(domain, &"c".repeat(40)).await;
    movie(domain, 603, "The Matrix", 1999).await;
    domain
        .match_identity(&rel.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let new = NewPlan { slot_id: slot.id.clone(), source_release_id: rel.id.clone(), note: None };
    let plan = domain.draft_plan(&agent, &new).await.unwrap();
    domain.reserve_plan(&plan.id).await.unwrap();
    let (_, download) = domain.mark_submitted(&plan.id, &"c".repeat(40)).await.unwrap();
    domain.update_download(&download.id, capstan::domain::DownloadStatus::Downloading, 0.25, None, None).await.unwrap();

    let out = call(&env.caps, "inventory.query", json!({"search": "dune"})).await.unwrap();
    let items = out["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{out}");
    let shown = &items[0]["slots"][0];
    assert_eq!((shown["id"].as_str(), shown["status"].as_str()), (Some(slot.id.as_str()), Some("reserved")));
    assert_eq!(
        (shown["plan"]["id"].as_str(), shown["plan"]["status"].as_str()),
        (Some(plan.id.as_str()), Some("submitted"))
    );
    assert_eq!(
        (shown["download"]["status"].as_str(), shown["download"]["progress"].as_f64()),
        (Some("downloading"), Some(0.25))
    );

    let everything = call(&env.caps, "inventory.query", json!({})).await.unwrap();
    assert_eq!(everything["items"].as_array().unwrap().len(), 2, "the Matrix is known but wants nothing");
    let satisfied = call(&env.caps, "inventory.query", json!({"status": "satisfied"})).await.unwrap();
    assert_eq!(satisfied["items"], json!([]));
    assert_eq!(call(&env.caps, "inventory.query", json!({"kind": "book"})).await, Err("invalid-input".into()));
}

async fn tasks_are_inspected_cancelled_and_retried_as_their_state_allows(backend: Backend) {
    let env = env(backend).await;
    let tasks = Tasks::new(env.db.clone());
    let new = |kind: &str| NewTask {
        kind: kind.into(),
        subject: Some("plan-1".into()),
        payload: json!({}),
        dedupe_key: None,
        max_attempts: 3,
        created_by: "test".into(),
    };
    let (sync, _) = tasks.enqueue(&new("syncDownloads")).await.unwrap();
    let (submit, _) = tasks.enqueue(&new("submitDownload")).await.unwrap();

    let one = call(&env.caps, "task.inspect", json!({"taskId": sync.id})).await.unwrap();
    assert_eq!((one["tasks"][0]["status"].as_str(), one["tasks"][0]["attempts"].as_i64()), (Some("queued"), Some(0)));
    let listed = call(&env.caps, "task.inspect", json!({"subjectId": "plan-1"})).await.unwrap();
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 2);

    // A queued task cannot be retried; it can be cancelled, once.
    assert_eq!(call(&env.caps, "task.retry", json!({"taskId": sync.id})).await, Err("conflict".into()));
    let cancelled = call(&env.caps, "task.cancel", json!({"taskId": sync.id})).await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(call(&env.caps, "task.cancel", json!({"taskId": sync.id})).await, Err("conflict".into()));
    let retried = call(&env.caps, "task.retry", json!({"taskId": sync.id})).await.unwrap();
    assert_eq!((retried["status"].as_str(), retried["attempts"].as_i64()), (Some("queued"), Some(0)));
    assert_eq!(tasks.get(&sync.id).await.unwrap().unwrap().status.as_str(), "queued");

    // A task that used up its attempts shows why, and is retried with fresh ones.
    let claimed = tasks.claim("worker-1", std::time::Duration::from_secs(30)).await.unwrap().unwrap();
    let mut task = claimed;
    while tasks.fail(&task, "qbittorrent unreachable", None).await.unwrap().as_str() != "dead" {
        sqlx::query("UPDATE task SET run_after = 0 WHERE id = $1").bind(&task.id).execute(&tasks.pool()).await.unwrap();
        task = tasks.claim("worker-1", std::time::Duration::from_secs(30)).await.unwrap().unwrap();
    }
    let dead = call(&env.caps, "task.inspect", json!({"taskId": task.id})).await.unwrap();
    let shown = &dead["tasks"][0];
    assert_eq!((shown["status"].as_str(), shown["attempts"].as_i64()), (Some("dead"), Some(3)));
    assert_eq!(shown["lastError"], "qbittorrent unreachable");
    assert_eq!(call(&env.caps, "task.cancel", json!({"taskId": task.id})).await, Err("conflict".into()));
    assert_eq!(call(&env.caps, "task.retry", json!({"taskId": task.id})).await.unwrap()["status"], "queued");
    assert!([sync.id.as_str(), submit.id.as_str()].contains(&task.id.as_str()));

    assert_eq!(call(&env.caps, "task.inspect", json!({"taskId": "no-such-task"})).await, Err("not-found".into()));
    assert_eq!(
        call(&env.caps, "task.inspect", json!({"taskId": sync.id, "limit": 2})).await,
        Err("invalid-input".into())
    );
    assert_eq!(call(&env.caps, "task.retry", json!({"id": sync.id})).await, Err("invalid-input".into()));
}

/// What the preview must not change: policies, the library, its releases,
/// plans and decisions.
async fn snapshot(svc: &capstan::pipeline::Services, entity: &str) -> Value {
    let domain = &svc.domain;
    json!({
        "policies": serde_json::to_value(svc.authz.policies().await.unwrap()).unwrap(),
        "inventory": domain.query("inventory", "{}").await.unwrap(),
        "releases": serde_json::to_value(domain.releases_for_entity(entity).await.unwrap()).unwrap(),
        "plans": serde_json::to_value(domain.plans(None, None, 100).await.unwrap()).unwrap(),
        "decisions": serde_json::to_value(domain.decisions(None, 100).await.unwrap()).unwrap(),
    })
}

async fn policy_preview_reports_the_difference_and_policy_apply_publishes_it(backend: Backend) {
    let env = env(backend).await;
    let domain = &env.svc.domain;
    let authz = &env.svc.authz;
    let (slot, web) = wanted_movie(domain, &"d".repeat(40)).await;
    let bluray = release(domain, "Dune.Part.Two.2024.1080p.BluRay.x264-GRP", 'e', 12_000_000_000).await;
    for r in [&web, &bluray] {
        domain
            .match_identity(&r.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
            .await
            .unwrap();
    }
    // Releases resolved elsewhere are not this entity's.
    let other = movie(domain, 603, "The Matrix", 1999).await;
    let matrix = release(domain, "The.Matrix.1999.2160p.BluRay.x265-GRP", 'f', 30_000_000_000).await;
    domain
        .match_identity(&matrix.id, Some(&other), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let mut listed: Vec<String> =
        domain.releases_for_entity(&slot.entity_id).await.unwrap().into_iter().map(|r| r.id).collect();
    // Both were recorded within the same millisecond: compare as a set.
    listed.sort();
    let mut expected = vec![web.id.clone(), bluray.id.clone()];
    expected.sort();
    assert_eq!(listed, expected);
    let err = domain.query("releases.for-entity", r#"{"id": "no-such-entity"}"#).await.unwrap_err();
    assert!(matches!(err, DomainError::NotFound(_)), "{err:?}");

    let any_resolution = json!({"preferredResolutions": ["2160p", "1080p"]});
    let blu_ray_only = json!({"preferredResolutions": ["2160p", "1080p"], "allowedSources": ["Blu-ray"]});
    authz.draft_policy("quality.movies", &any_resolution, "cli:op").await.unwrap();
    authz.publish_policy("quality.movies", 1).await.unwrap();
    authz.draft_policy("quality.movies", &blu_ray_only, "cli:op").await.unwrap();

    let before = snapshot(&env.svc, &slot.entity_id).await;
    let out = call(&env.caps, "policy.preview", json!({"name": "quality.movies", "body": blu_ray_only})).await.unwrap();
    assert_eq!(snapshot(&env.svc, &slot.entity_id).await, before, "a preview changes nothing");
    assert_eq!(out["currentRevision"], 1);
    let diff = &out["slots"][0];
    assert_eq!(diff["slotId"], slot.id.as_str());
    assert_eq!(
        (diff["currentPreferred"].as_str(), diff["proposedPreferred"].as_str()),
        (Some(web.id.as_str()), Some(bluray.id.as_str()))
    );
    let mut changes: Vec<(&str, &str)> = diff["releases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["releaseId"].as_str().unwrap(), r["change"].as_str().unwrap()))
        .collect();
    // Releases recorded in the same millisecond have no order: compare as a set.
    changes.sort();
    let mut expected = vec![(web.id.as_str(), "becomes-rejected"), (bluray.id.as_str(), "still-acceptable")];
    expected.sort();
    assert_eq!(changes, expected);
    assert_eq!(out["summary"]["becomeRejected"], 1);

    let bad = |body: Value| call(&env.caps, "policy.preview", json!({"name": "quality.movies", "body": body}));
    assert_eq!(bad(json!({"preferredResolutions": "2160p"})).await, Err("invalid-input".into()));
    assert_eq!(
        bad(json!({"preferredResolutions": ["2160p"], "minSizeMb": 5000, "maxSizeMb": 100})).await,
        Err("invalid-input".into())
    );
    assert_eq!(snapshot(&env.svc, &slot.entity_id).await, before);

    let applied = call(&env.caps, "policy.apply", json!({"name": "quality.movies", "revision": 2})).await.unwrap();
    assert_eq!((applied["status"].as_str(), applied["revision"].as_i64()), (Some("published"), Some(2)));
    assert_eq!(applied["body"], blu_ray_only);
    let previous = authz.policy("quality.movies", 1).await.unwrap().unwrap();
    assert_eq!(serde_json::to_value(previous.status).unwrap(), "superseded");
    assert_eq!(authz.published_policy("quality.movies").await.unwrap().revision, 2);
    // With the new revision in force, the same body previews as no change.
    let again =
        call(&env.caps, "policy.preview", json!({"name": "quality.movies", "body": blu_ray_only})).await.unwrap();
    assert_eq!(
        (again["summary"]["becomeRejected"].as_i64(), again["summary"]["preferredChanged"].as_i64()),
        (Some(0), Some(0))
    );

    assert_eq!(
        call(&env.caps, "policy.apply", json!({"name": "quality.movies", "revision": 9})).await,
        Err("not-found".into())
    );
    assert_eq!(
        call(&env.caps, "policy.apply", json!({"name": "quality.shows", "revision": 1})).await,
        Err("not-found".into())
    );
    assert_eq!(call(&env.caps, "policy.apply", json!({"name": "quality.movies"})).await, Err("invalid-input".into()));
}

both_backends!(
    identity_resolve_accepts_a_clear_match_and_asks_once_about_remakes,
    inventory_query_shows_each_slots_plan_and_download,
    tasks_are_inspected_cancelled_and_retried_as_their_state_allows,
    policy_preview_reports_the_difference_and_policy_apply_publishes_it,
);
