//! The media domain over HTTP: the library, artifacts and durable tasks,
//! with task changes needing the execute scope and being audited.

use capstan::domain::Author;
use capstan::runtime::EffectClass;
use capstan::tasks::{NewTask, Tasks};
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::domain::wanted_movie;
use crate::storage::ledger::env;

async fn library_artifacts_and_tasks_over_http(backend: Backend) {
    let env = env(backend).await;
    let api = Api::new(&serve(env.app.clone()).await);
    let reader =
        api.with_key(&capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "test").await.unwrap());
    let runner =
        api.with_key(&capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "test").await.unwrap());
    let domain = env.svc.domain.clone();
    let (slot, _) = wanted_movie(&domain, &"1".repeat(40)).await;
    let evidence = domain
        .create_artifact(
            &Author::new("test"),
            capstan::domain::ArtifactKind::Evidence,
            Some(&slot.entity_id),
            &json!({"matched": "title"}),
        )
        .await
        .unwrap();

    let (status, library) = reader.get("/library").await;
    assert_eq!(status, 200);
    assert_eq!(library["items"][0]["entity"]["title"], "Dune: Part Two");
    assert_eq!(library["items"][0]["slots"][0]["status"], "wanted");
    assert_eq!(reader.get("/library?kind=book").await.0, 400);

    let (_, listed) = reader.get(&format!("/artifacts?subject={}", slot.entity_id)).await;
    assert_eq!(listed["artifacts"][0]["id"], evidence.id.as_str());
    let (_, one) = reader.get(&format!("/artifacts/{}", evidence.id)).await;
    assert_eq!(one["payloadHash"], evidence.payload_hash.as_str());
    assert_eq!(reader.get("/artifacts/nope").await.0, 404);

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
    let (_, listed) = reader.get(&format!("/tasks?subjectId={}", slot.id)).await;
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(listed["tasks"][0]["status"], "queued");
    // Field names follow the API's one convention.
    assert_eq!((listed["tasks"][0]["maxAttempts"].as_i64(), listed["tasks"][0].get("max_attempts")), (Some(3), None));

    // A read key cannot change tasks; an execute key can, and it is audited.
    let cancel = format!("/tasks/{}/cancel", task.id);
    assert_eq!(reader.post(&cancel, Value::Null).await.0, 403);
    let (status, cancelled) = runner.post(&cancel, Value::Null).await;
    assert_eq!((status, cancelled["status"].as_str()), (200, Some("cancelled")));
    assert_eq!(runner.post(&cancel, Value::Null).await.0, 409, "a finished task cannot be cancelled again");
    let (status, retried) = runner.post(&format!("/tasks/{}/retry", task.id), Value::Null).await;
    assert_eq!((status, retried["status"].as_str()), (200, Some("queued")));
    let (_, one) = reader.get(&format!("/tasks/{}", task.id)).await;
    assert_eq!(one["status"], "queued");
    assert_eq!(runner.post("/tasks/nope/retry", Value::Null).await.0, 404);
    let audit = env.app.audit().list(0, 1000).await.unwrap();
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
    let ambiguous = json!({"sourceReleaseId": "r", "slotId": slot.id, "entityId": slot.entity_id});
    assert_eq!(runner.post("/acquisition-plans", ambiguous).await.0, 422);
    let plain = json!({"sourceReleaseId": "r", "slotId": slot.id});
    assert_eq!(reader.post("/acquisition-plans", plain).await.0, 403);

    // Plans are listed for any reader, drafts among them.
    let (slot, release) = wanted_movie(&domain, &"2".repeat(40)).await;
    domain
        .match_identity(&release.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let new = capstan::domain::NewPlan { slot_id: slot.id.clone(), source_release_id: release.id, note: None };
    let draft = domain.draft_plan(&Author::new("task:evaluateAcquisition"), &new).await.unwrap();
    let (status, listed) = reader.get("/acquisition-plans?status=draft").await;
    assert_eq!(status, 200);
    assert_eq!(listed["plans"][0]["id"], draft.id.as_str());
    assert_eq!(listed["plans"][0]["createdBy"], "task:evaluateAcquisition");
    assert_eq!(
        reader.get(&format!("/acquisition-plans?slotId={}", slot.id)).await.1["plans"][0]["id"],
        draft.id.as_str()
    );
    assert_eq!(reader.get("/acquisition-plans?status=dreaming").await.0, 400);
    assert_eq!(reader.get("/acquisition-plans?colour=red").await.0, 400, "an unknown parameter is refused");
}

both_backends!(library_artifacts_and_tasks_over_http);
