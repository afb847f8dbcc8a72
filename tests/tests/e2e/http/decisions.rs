//! Decisions through the HTTP API, on both backends: listed by status,
//! kind and subject a page at a time; answered from a console session or
//! with an execute key, never twice, and bad answers change nothing; the
//! chosen option carried out by the `resolveDecision` task for whoever
//! chose it — an administrator's choice runs the capability, a key's only
//! within a grant; `retry` queues the task, `reevaluate` the acquisition
//! evaluation, `accept` records the choice — exactly once, even when the
//! task runs again.

use std::time::{Duration, Instant};

use capstan::runtime::EffectClass;
use capstan::tasks::{NewTask, TaskStatus, Tasks};
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::grants::for_an_hour;
use reqwest::Method;
use serde_json::{Value, json};

use crate::storage::ledger::{Env, env};

/// Opens a decision offering a counter call, a retry of `task`, and a dismissal.
async fn open(env: &Env, subject: &str, task: &str) -> String {
    let options = json!([
        {"id": "count", "label": "Count once", "capabilityId": "test.counter-safe", "input": {"label": subject}},
        {"id": "again", "label": "Try the task again", "action": "retry", "taskId": task},
        {"id": "leave", "label": "Leave it", "action": "dismiss"}
    ]);
    let evidence = json!({"what": format!("{subject} went wrong")});
    let key = format!("download_failed:{subject}");
    let (decision, created) =
        env.svc.domain.open_decision("download_failed", Some(subject), &options, &evidence, &key).await.unwrap();
    assert!(created);
    decision.id
}

/// Waits until decision `id` records what its option came to.
pub(super) async fn executed(api: &Api, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let decision = api.json(&format!("/decisions/{id}")).await;
        if !decision["resolution"]["execution"].is_null() {
            return decision;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "decision {id} was never carried out: {decision}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_dead_task(env: &Env) -> String {
    let tasks = Tasks::new(env.db.clone());
    let new = NewTask {
        kind: "someOtherKind".into(),
        subject: None,
        payload: json!({}),
        dedupe_key: None,
        max_attempts: 1,
        created_by: "test".into(),
    };
    let id = tasks.enqueue(&new).await.unwrap().0.id;
    sqlx::query("UPDATE task SET status = 'dead' WHERE id = $1").bind(&id).execute(&env.db.pool).await.unwrap();
    id
}

async fn decisions_are_listed_answered_once_and_carried_out_for_whoever_chose(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.db, "alice").await;
    let reader =
        Api::new(&base).with_key(&capstan::http::keys::create(&env.db, "r", &[EffectClass::Read], "t").await.unwrap());
    let runner = Api::new(&base)
        .with_key(&capstan::http::keys::create(&env.db, "x", &[EffectClass::Execute], "t").await.unwrap());
    let dead = a_dead_task(&env).await;
    let first = open(&env, "d1", &dead).await;
    let second = open(&env, "d2", &dead).await;
    let third = open(&env, "d3", &dead).await;

    // Listed newest first, narrowed, a page at a time.
    let all = reader.json("/decisions").await;
    let ids: Vec<&str> = all["decisions"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3, "{all}");
    assert!(all["next"].is_null(), "one page holds them all: {all}");
    let page = reader.json("/decisions?limit=2").await;
    assert_eq!(page["decisions"].as_array().unwrap().len(), 2);
    let rest = reader.json(&format!("/decisions?limit=2&after={}", page["next"].as_str().unwrap())).await;
    let mut paged: Vec<String> = page["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["decisions"].as_array().unwrap())
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paged, ids, "the pages together are the list, in order");
    paged.sort();
    paged.dedup();
    assert_eq!(paged.len(), 3);
    let about = reader.json("/decisions?subject=d2&kind=download_failed&status=open").await;
    assert_eq!(about["decisions"][0]["id"], second.as_str());
    assert_eq!(about["decisions"][0]["evidence"]["what"], "d2 went wrong");
    assert_eq!(about["decisions"][0]["options"][0]["capabilityId"], "test.counter-safe");
    assert_eq!(reader.json("/decisions?kind=agent_budget").await["decisions"], json!([]));
    for bad in [
        "/decisions?status=pondering",
        "/decisions?limit=0",
        "/decisions?after=nope",
        "/decisions?after=1.a.b",
        "/decisions?colour=red",
    ] {
        let (status, body) = reader.get(bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, body) = reader.get("/decisions/nope").await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")), "{body}");

    // Bad answers, and callers who may not answer, change nothing.
    let path = format!("/decisions/{first}");
    let head = env.app.services().events.head().await.unwrap();
    let refused = [
        (&admin, json!({"status": "resolved", "optionId": "delete"}), 422),
        (&admin, json!({"status": "resolved"}), 422),
        (&admin, json!({"status": "resolved", "optionId": " "}), 422),
        (&admin, json!({"status": "dismissed", "optionId": "leave"}), 422),
        (&admin, json!({"status": "investigating"}), 422),
        (&admin, json!({"optionId": "count"}), 422),
        (&reader, json!({"status": "dismissed"}), 403),
        (&Api::new(&base), json!({"status": "dismissed"}), 401),
    ];
    for (caller, body, expected) in refused {
        let (status, answer) = caller.send(Method::PATCH, &path, body.clone()).await;
        assert_eq!(status, expected, "{body}: {answer}");
        assert!(answer["error"]["message"].is_string(), "{answer}");
    }
    let malformed = admin.request(Method::PATCH, &path).header("content-type", "application/json").body("{\"status\":");
    assert_eq!(malformed.send().await.unwrap().status(), 400);
    let (status, _) = admin.send(Method::PATCH, "/decisions/nope", json!({"status": "dismissed"})).await;
    assert_eq!(status, 404);
    assert_eq!(admin.json(&path).await["status"], "open", "nothing changed");
    assert_eq!(env.app.services().events.head().await.unwrap(), head, "no event was written");
    assert_eq!(env.mock.writes(), 0);

    // An administrator's choice is carried out for them, once.
    let (status, answered) = admin.send(Method::PATCH, &path, json!({"status": "resolved", "optionId": "count"})).await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!((answered["status"].as_str(), answered["resolvedBy"].as_str()), (Some("resolved"), Some("admin:alice")));
    let worker = std::sync::Arc::new(env.app.worker(&env._host.config));
    tokio::spawn(worker.run(std::future::pending()));
    let done = executed(&admin, &first).await;
    let execution = &done["resolution"]["execution"];
    assert_eq!(
        (execution["status"].as_str(), execution["by"].as_str()),
        (Some("succeeded"), Some("admin:alice")),
        "{done}"
    );
    assert_eq!(env.mock.writes(), 1);
    let (status, again) = admin.send(Method::PATCH, &path, json!({"status": "dismissed"})).await;
    assert_eq!((status, again["error"]["code"].as_str()), (409, Some("conflict")), "{again}");
    // The same resolution routed again (a duplicated event, a retried task)
    // finds it carried out and runs nothing.
    let tasks = Tasks::new(env.db.clone());
    let repeat = NewTask {
        kind: capstan::domain::RESOLVE_DECISION.into(),
        subject: Some(first.clone()),
        payload: json!({"decisionId": first}),
        dedupe_key: None,
        max_attempts: 1,
        created_by: "test".into(),
    };
    let repeat = tasks.enqueue(&repeat).await.unwrap().0;
    let started = Instant::now();
    while tasks.get(&repeat.id).await.unwrap().unwrap().status != TaskStatus::Succeeded {
        assert!(started.elapsed() < Duration::from_secs(60), "the repeated task never ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(env.mock.writes(), 1, "carried out once");

    // A key's choice is an automated call: refused without a grant…
    let path = format!("/decisions/{second}");
    let (status, _) = runner.send(Method::PATCH, &path, json!({"status": "resolved", "optionId": "count"})).await;
    assert_eq!(status, 200);
    let denied = executed(&runner, &second).await;
    let execution = &denied["resolution"]["execution"];
    assert_eq!(
        (execution["status"].as_str(), execution["error"]["kind"].as_str()),
        (Some("failed"), Some("denied")),
        "{denied}"
    );
    assert_eq!(env.mock.writes(), 1, "nothing ran for the key without a grant");
    // …and carried out within one.
    env.svc.authz.create_grant(&for_an_hour("test.counter-safe"), "admin:alice").await.unwrap();
    let (_, retried) = runner
        .send(Method::PATCH, &format!("/decisions/{third}"), json!({"status": "resolved", "optionId": "again"}))
        .await;
    assert_eq!(retried["status"], "resolved", "{retried}");
    let retry = executed(&runner, &third).await;
    assert_eq!(retry["resolution"]["execution"]["kind"], "retry", "{retry}");
    let task = tasks.get(&dead).await.unwrap().unwrap();
    assert_ne!(task.status, TaskStatus::Dead, "the linked task was queued again: {task:?}");

    // Looking again queues the acquisition evaluation; accepting a spent
    // budget records the choice (the run goes on when sent a message).
    let again = json!([{"id": "look", "label": "Look for another release", "action": "reevaluate"}]);
    let (look, _) = env
        .svc
        .domain
        .open_decision("download_stalled", Some("d9"), &again, &json!({}), "download_stalled:d9")
        .await
        .unwrap();
    let (_, answered) = admin
        .send(Method::PATCH, &format!("/decisions/{}", look.id), json!({"status": "resolved", "optionId": "look"}))
        .await;
    assert_eq!(answered["status"], "resolved", "{answered}");
    let looked = executed(&admin, &look.id).await;
    let queued = looked["resolution"]["execution"]["queued"].as_str().unwrap().to_string();
    assert_eq!(tasks.get(&queued).await.unwrap().unwrap().kind, capstan::acquisition::EVALUATE_ACQUISITION);
    let budget = json!([{"id": "continue", "label": "Raised it", "action": "accept"}]);
    let (spent, _) = env
        .svc
        .domain
        .open_decision("agent_budget", Some("run-1"), &budget, &json!({}), "agent_budget:run-1")
        .await
        .unwrap();
    admin
        .send(Method::PATCH, &format!("/decisions/{}", spent.id), json!({"status": "resolved", "optionId": "continue"}))
        .await;
    let accepted = executed(&admin, &spent.id).await;
    assert_eq!(accepted["resolution"]["execution"]["kind"], "accept", "{accepted}");
    assert!(accepted["resolution"]["execution"]["queued"].is_null(), "nothing to evaluate for a run: {accepted}");

    // Every change was announced on the event log.
    let events = admin.json("/events?limit=1000").await;
    let kinds: Vec<(&str, &str)> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"].as_str().unwrap().starts_with("decision."))
        .map(|e| (e["kind"].as_str().unwrap(), e["payload"]["status"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds.iter().filter(|(k, _)| *k == "decision.created").count(), 5, "{kinds:?}");
    assert!(kinds.contains(&("decision.updated", "resolved")), "{kinds:?}");

    // The answers are in the audit log, refused ones too.
    let audit = admin.json("/audit?limit=1000").await;
    let answers: Vec<(&str, &str)> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().is_some_and(|a| a.starts_with("decision.")))
        .map(|e| (e["action"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert!(
        answers.contains(&("decision.resolve", "succeeded")) && answers.contains(&("decision.resolve", "failed")),
        "{answers:?}"
    );
}

both_backends!(decisions_are_listed_answered_once_and_carried_out_for_whoever_chose);
