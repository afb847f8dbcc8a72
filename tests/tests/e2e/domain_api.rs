//! The media domain over HTTP: the library, artifacts and durable tasks,
//! with task changes needing the execute scope and being audited.

use capstan::domain::Actor;
use capstan::runtime::EffectClass;
use capstan::tasks::{NewTask, Tasks};
use capstan_tests::api::serve;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use super::domain::wanted_movie;
use super::ledger::env;

async fn library_artifacts_and_tasks_over_http(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.caps.clone()).await;
    let http = reqwest::Client::new();
    let reader = capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "test").await.unwrap();
    let runner = capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "test").await.unwrap();
    let domain = env.caps.domain().clone();
    let (slot, _) = wanted_movie(&domain, &"1".repeat(40)).await;
    let evidence = domain
        .create_artifact(&Actor::new("test"), "evidence", Some(&slot.entity_id), &json!({"matched": "title"}))
        .await
        .unwrap();

    let library: Value =
        http.get(format!("{base}/library")).bearer_auth(&reader).send().await.unwrap().json().await.unwrap();
    assert_eq!(library["items"][0]["entity"]["title"], "Dune: Part Two");
    assert_eq!(library["items"][0]["slots"][0]["status"], "wanted");
    let resp = http.get(format!("{base}/library?kind=book")).bearer_auth(&reader).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 422);

    let listed: Value = http
        .get(format!("{base}/artifacts?subject={}", slot.entity_id))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["artifacts"][0]["id"], evidence.id.as_str());
    let one: Value = http
        .get(format!("{base}/artifacts/{}", evidence.id))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one["payloadHash"], evidence.payload_hash.as_str());
    let resp = http.get(format!("{base}/artifacts/nope")).bearer_auth(&reader).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404);

    let tasks = Tasks::new(env.db.clone());
    let (task, _) = tasks
        .enqueue(&NewTask {
            kind: "syncDownloads".into(),
            subject: Some(slot.id.clone()),
            payload: json!({}),
            dedupe_key: None,
            max_attempts: 3,
            created_by: "test".into(),
        })
        .await
        .unwrap();
    let listed: Value = http
        .get(format!("{base}/tasks?subjectId={}", slot.id))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(listed["tasks"][0]["status"], "queued");

    // A read key cannot change tasks; an execute key can, and it is audited.
    let resp = http.post(format!("{base}/tasks/{}/cancel", task.id)).bearer_auth(&reader).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let cancelled: Value = http
        .post(format!("{base}/tasks/{}/cancel", task.id))
        .bearer_auth(&runner)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    let resp = http.post(format!("{base}/tasks/{}/cancel", task.id)).bearer_auth(&runner).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 409, "a finished task cannot be cancelled again");
    let retried: Value = http
        .post(format!("{base}/tasks/{}/retry", task.id))
        .bearer_auth(&runner)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(retried["status"], "queued");
    let one: Value =
        http.get(format!("{base}/tasks/{}", task.id)).bearer_auth(&reader).send().await.unwrap().json().await.unwrap();
    assert_eq!(one["status"], "queued");
    let resp = http.post(format!("{base}/tasks/nope/retry")).bearer_auth(&runner).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let audit = env.caps.audit().list(0, 1000).await.unwrap();
    let changes: Vec<(&str, &str)> = audit
        .iter()
        .filter(|e| e.event.action.starts_with("task."))
        .map(|e| (e.event.action.as_str(), e.event.outcome.as_str()))
        .collect();
    assert_eq!(
        changes,
        vec![
            ("task.cancel", "succeeded"),
            ("task.cancel", "failed"),
            ("task.retry", "succeeded"),
            ("task.retry", "failed")
        ]
    );

    // The acquisition endpoint refuses an ambiguous target before doing anything.
    let resp = http
        .post(format!("{base}/acquisition-plans"))
        .bearer_auth(&runner)
        .json(&json!({"sourceReleaseId": "r", "slotId": slot.id, "entityId": slot.entity_id}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 422);
    let resp = http
        .post(format!("{base}/acquisition-plans"))
        .bearer_auth(&reader)
        .json(&json!({"sourceReleaseId": "r", "slotId": slot.id}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
}

both_backends!(library_artifacts_and_tasks_over_http);
