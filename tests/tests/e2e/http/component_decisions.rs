//! A decision a component opens through the drafts import, as a hostile
//! plugin would use it: the administrator who answers it cannot be made to
//! run an outside effect by it (refused at the answer, and again when the
//! option is carried out), it cannot take a host decision's kind or key or
//! another opener's key, it is told nothing of decisions it did not open,
//! and it cannot flood the operator's list.

use capstan::domain::{Answer, MAX_UNDECIDED};
use capstan::pipeline::Origin;
use capstan::runtime::EffectClass;
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use reqwest::Method;
use serde_json::{Value, json};

use super::decisions::executed;
use crate::storage::ledger::{Env, env};

/// What the probe component got back from `drafts.create("decision", draft)`.
async fn probe_opens(env: &Env, draft: Value) -> Value {
    let input = json!({"action": "draft", "kind": "decision", "draft": draft});
    let inv = env.caps.invoke(&Origin::cli(EffectClass::Execute), "test.probe", &input).await.unwrap();
    assert_eq!(inv.status, capstan::runtime::Status::Succeeded, "{:?}", inv.error);
    inv.output.unwrap()["result"].clone()
}

/// What the probe component got back from `library.query(name, params)`.
async fn probe_queries(env: &Env, name: &str, params: Value) -> Value {
    let input = json!({"action": "query", "name": name, "params": params});
    let inv = env.caps.invoke(&Origin::cli(EffectClass::Execute), "test.probe", &input).await.unwrap();
    assert_eq!(inv.status, capstan::runtime::Status::Succeeded, "{:?}", inv.error);
    inv.output.unwrap()["result"].clone()
}

async fn a_component_decision_cannot_borrow_a_humans_authority(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.db, "alice").await;
    let worker = std::sync::Arc::new(env.app.worker(&env._host.config));
    tokio::spawn(worker.run(std::future::pending()));
    let writes_before = env.mock.writes();

    // The probe opens a question whose harmless-sounding option would make
    // an outside write, beside one that only reads.
    let draft = json!({
        "kind": "probe_question",
        "subject": "s1",
        "dedupeKey": "probe_question:s1",
        "evidence": {"problem": "something to look at"},
        "options": [
            {"id": "fix", "label": "Looks harmless", "capabilityId": "test.counter-safe", "input": {"label": "x"}},
            {"id": "read", "label": "Read the name", "capabilityId": "release.inspect", "input": {"name": "Heat.1995.1080p.BluRay.x264-GRP"}},
            {"id": "leave", "label": "Leave it", "action": "dismiss"}
        ]
    });
    let opened = probe_opens(&env, draft.clone()).await;
    assert_eq!(opened["created"], true, "{opened}");
    let id = opened["decision"]["id"].as_str().unwrap().to_string();
    let mut told: Vec<&String> = opened["decision"].as_object().unwrap().keys().collect();
    told.sort();
    assert_eq!(
        told,
        ["dedupeKey", "id", "kind", "status", "subject"],
        "a component is told only what it wrote: {opened}"
    );
    let again = probe_opens(&env, draft).await;
    assert_eq!((again["created"].as_bool(), again["decision"]["id"].as_str()), (Some(false), Some(id.as_str())));

    // The administrator sees who opened it and what each option runs.
    let shown = admin.json(&format!("/decisions/{id}")).await;
    assert_eq!(shown["openedBy"], "test.probe", "{shown}");
    assert_eq!(shown["options"][0]["capabilityId"], "test.counter-safe");

    // Choosing the write is refused before anything is recorded.
    let (status, body) =
        admin.send(Method::PATCH, &format!("/decisions/{id}"), json!({"status": "resolved", "optionId": "fix"})).await;
    assert_eq!(status, 422, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("test.probe opened this decision") && message.contains("labelled execute"), "{message}");
    assert_eq!(admin.json(&format!("/decisions/{id}")).await["status"], "open");

    // Were it chosen anyway (the answer recorded by another way in), the
    // task carrying it out refuses it too, and nothing is written.
    let domain = &env.svc.domain;
    domain.answer_decision(&id, &Answer::Resolve { option_id: "fix" }, "admin:alice").await.unwrap();
    let refused = executed(&admin, &id).await;
    let execution = &refused["resolution"]["execution"];
    assert_eq!((execution["status"].as_str(), execution["error"]["kind"].as_str()), (Some("failed"), Some("denied")));
    assert!(execution["error"]["message"].as_str().unwrap().contains("labelled execute"), "{refused}");
    assert_eq!(env.mock.writes(), writes_before, "the counter was never called");

    // A call without an outside effect it offered runs when chosen.
    let second = probe_opens(
        &env,
        json!({"kind": "probe_question", "dedupeKey": "probe_question:s2", "options": [
            {"id": "read", "label": "Read the name", "capabilityId": "release.inspect", "input": {"name": "Heat.1995.1080p.BluRay.x264-GRP"}}
        ]}),
    )
    .await;
    let second = second["decision"]["id"].as_str().unwrap().to_string();
    let (status, body) = admin
        .send(Method::PATCH, &format!("/decisions/{second}"), json!({"status": "resolved", "optionId": "read"}))
        .await;
    assert_eq!(status, 200, "{body}");
    let read = executed(&admin, &second).await;
    assert_eq!(read["resolution"]["execution"]["status"], "succeeded", "{read}");
    assert_eq!(read["resolution"]["execution"]["output"]["year"], 1995, "{read}");

    // Host kinds and keys, and another opener's key, are not its to use;
    // the refusal says nothing of the decision under the key.
    let secret = "the host's own evidence";
    domain
        .open_decision("probe_question", Some("h"), &json!([]), &json!({"note": secret}), "probe_question:h")
        .await
        .unwrap();
    for (draft, expected) in [
        (json!({"kind": "download_failed", "dedupeKey": "download_failed:d1"}), "the host opens those"),
        (json!({"kind": "probe_question", "dedupeKey": "download_failed:d1"}), "dedupe key is"),
        (json!({"kind": "probe_question", "dedupeKey": "probe_question:h"}), "another opener"),
        (
            json!({"kind": "probe_question", "dedupeKey": "probe_question:r", "options": [
                {"id": "again", "label": "Leave it", "action": "retry", "taskId": "any-task"}]}),
            "may not offer the action",
        ),
        (
            json!({"kind": "probe_question", "dedupeKey": "probe_question:u", "options": [
                {"id": "drop", "label": "Looks fine", "action": "unwant"}]}),
            "may not offer the action",
        ),
        (
            json!({"kind": "probe_question", "dedupeKey": "probe_question:big", "evidence": {"x": "y".repeat(70_000)}}),
            "evidence is",
        ),
    ] {
        let answer = probe_opens(&env, draft.clone()).await;
        let refusal = answer["refused"].as_str().unwrap_or_else(|| panic!("{draft} was accepted: {answer}"));
        assert!(refusal.contains(expected), "{draft}: {refusal}");
        assert!(!answer.to_string().contains(secret), "{answer}");
    }
    let listed = admin.json("/decisions?limit=500").await;
    assert_eq!(listed["decisions"].as_array().unwrap().len(), 3, "nothing refused was opened: {listed}");

    // Listing decisions, it sees all of its own and only the outline of
    // the host's: never evidence, options or answers.
    let seen = probe_queries(&env, "decisions.list", json!({"limit": 100})).await;
    let seen = seen.as_array().unwrap_or_else(|| panic!("{seen}"));
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(!Value::Array(seen.clone()).to_string().contains(secret), "{seen:?}");
    for decision in seen {
        let own = decision["dedupeKey"].as_str().is_some_and(|k| k.starts_with("probe_question:s"));
        if decision["subject"] == "h" {
            let mut fields: Vec<&String> = decision.as_object().unwrap().keys().collect();
            fields.sort();
            assert_eq!(fields, ["id", "kind", "status", "subject"], "{decision}");
        } else {
            assert!(own && decision.get("options").is_some() && decision.get("evidence").is_some(), "{decision}");
        }
    }

    // At most so many undecided decisions per capability; answering one
    // makes room.
    for n in 0..MAX_UNDECIDED {
        let key = format!("flood:{n}");
        domain.open_component_decision("test.flood", "flood", None, &json!([]), &json!({}), &key).await.unwrap();
    }
    let over = domain.open_component_decision("test.flood", "flood", None, &json!([]), &json!({}), "flood:over").await;
    assert!(over.unwrap_err().to_string().contains("undecided decisions"));
    let first =
        domain.decisions_where(&capstan::domain::DecisionFilter { kind: Some("flood"), ..Default::default() }, 1).await;
    domain.answer_decision(&first.unwrap()[0].id, &Answer::Dismiss, "admin:alice").await.unwrap();
    domain.open_component_decision("test.flood", "flood", None, &json!([]), &json!({}), "flood:over").await.unwrap();
}

both_backends!(a_component_decision_cannot_borrow_a_humans_authority);
