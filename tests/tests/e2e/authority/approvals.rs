//! Approvals over HTTP: requested by anyone, decided only from a console
//! session, never by the plan's creator or the owner of the key that
//! created it, only against the payload hash the plan still has; an
//! approval lets one automated call act on its plan and is consumed by the
//! first success; a plan that changed leaves its approvals stale.

use capstan::domain::{Author, NewOrganizationPlan, NewPlan, Plan};
use capstan::runtime::EffectClass;
use capstan_tests::api::{login, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::domain::{submitted_download, wanted_movie};
use crate::storage::ledger::{Env, env};

/// An API key that belongs to administrator alice, and an acquisition plan
/// drafted through it for a wanted movie whose release is `hash`.
pub async fn plan_drafted_by_alices_key(env: &Env, hash: &str) -> (String, Plan) {
    let key = capstan::http::keys::create(&env.db, "alice's automation", &[EffectClass::Execute], "admin:alice")
        .await
        .unwrap();
    let key_id = key.split('_').nth(1).unwrap().to_string();
    let domain = env.caps.domain();
    let (slot, release) = wanted_movie(domain, hash).await;
    domain.match_identity(&release.id, Some(&slot.entity_id), "resolved", &json!({})).await.unwrap();
    let plan = domain
        .draft_plan(
            &Author::new(format!("key:{key_id}")),
            &NewPlan { slot_id: slot.id.clone(), source_release_id: release.id.clone(), note: None },
        )
        .await
        .unwrap();
    (key, plan)
}

async fn approvals_authorise_one_call_on_the_plan_as_approved(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let http = reqwest::Client::new();
    let domain = env.caps.domain().clone();
    let (key, plan) = plan_drafted_by_alices_key(&env, &"e".repeat(40)).await;
    let invoke = format!("{base}/capabilities/test.plan-step/invoke");
    let call = |input: Value| http.post(&invoke).bearer_auth(&key).json(&json!({ "input": input })).send();

    // Without an approval the key may not act on the plan; claiming one in
    // the input changes nothing.
    let inv: Value = call(json!({"planId": plan.id})).await.unwrap().json().await.unwrap();
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");

    let resp = http
        .post(format!("{base}/approvals"))
        .bearer_auth(&key)
        .json(&json!({"planType": "acquisition", "planId": plan.id, "capabilityId": "test.plan-step"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let approval: Value = resp.json().await.unwrap();
    assert_eq!(
        (approval["status"].as_str(), approval["payloadHash"].as_str(), approval["capabilityId"].as_str()),
        (Some("pending"), Some(plan.payload_hash.as_str()), Some("test.plan-step"))
    );
    let decide = format!("{base}/approvals/{}", approval["id"].as_str().unwrap());
    let approve = json!({"status": "approved", "payloadHash": plan.payload_hash});

    // Keys never decide; alice owns the key that made the plan; bob must
    // approve what he saw.
    let resp = http.patch(&decide).bearer_auth(&key).json(&approve).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let (alice, alice_csrf) = login(&env.db, &http, &base, "alice").await;
    let resp = http
        .patch(&decide)
        .header("cookie", &alice)
        .header("x-csrf-token", &alice_csrf)
        .json(&approve)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let (bob, bob_csrf) = login(&env.db, &http, &base, "bob").await;
    let wrong = json!({"status": "approved", "payloadHash": "0".repeat(64)});
    let resp =
        http.patch(&decide).header("cookie", &bob).header("x-csrf-token", &bob_csrf).json(&wrong).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 409);
    let resp = http
        .patch(&decide)
        .header("cookie", &bob)
        .header("x-csrf-token", &bob_csrf)
        .json(&json!({"status": "maybe", "payloadHash": plan.payload_hash}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 422);
    let decided: Value = http
        .patch(&decide)
        .header("cookie", &bob)
        .header("x-csrf-token", &bob_csrf)
        .json(&approve)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((decided["status"].as_str(), decided["decidedBy"].as_str()), (Some("approved"), Some("admin:bob")));

    // Approved: one call goes through and uses the approval up.
    let inv: Value = call(json!({"planId": plan.id})).await.unwrap().json().await.unwrap();
    assert_eq!(inv["status"], "succeeded", "{inv}");
    assert_eq!(domain.plan(&plan.id).await.unwrap().status, "reserved");
    let used: Value = http.get(&decide).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    assert_eq!(used["status"], "consumed");
    assert_eq!(used["consumedBy"], inv["invocationId"]);
    let audit = env.app.audit().list(0, 100).await.unwrap();
    let authorised = audit
        .iter()
        .rev()
        .find(|e| e.event.action == "capability.invoke" && e.event.subject == "test.plan-step")
        .unwrap();
    assert_eq!(authorised.event.authorization_id.as_deref(), approval["id"].as_str());
    // A second request cannot replay it.
    let inv: Value = call(json!({"planId": plan.id})).await.unwrap().json().await.unwrap();
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");
}

/// An approval lets the capability it names act on the plan, no other: one
/// given for the built-in that submits acquisition plans is no use to a
/// plugin that also acts on them.
async fn an_approval_is_for_the_capability_it_names(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let http = reqwest::Client::new();
    let (key, plan) = plan_drafted_by_alices_key(&env, &"d".repeat(40)).await;
    let ask = |body: Value| http.post(format!("{base}/approvals")).bearer_auth(&key).json(&body).send();

    let resp =
        ask(json!({"planType": "acquisition", "planId": plan.id, "capabilityId": "release.inspect"})).await.unwrap();
    assert_eq!(resp.status().as_u16(), 422, "release.inspect does not act on acquisition plans");
    // Many asking at once get one request.
    let asks: Vec<_> = (0..8).map(|_| ask(json!({"planType": "acquisition", "planId": plan.id}))).collect();
    let mut ids = std::collections::BTreeSet::new();
    for resp in futures_util::future::join_all(asks).await {
        let resp = resp.unwrap();
        assert_eq!(resp.status().as_u16(), 201);
        let approval: Value = resp.json().await.unwrap();
        ids.insert(approval["id"].as_str().unwrap().to_string());
    }
    assert_eq!(ids.len(), 1, "one pending approval: {ids:?}");
    // A request nobody decided in time does not block the next one.
    let first = ids.iter().next().unwrap().clone();
    sqlx::query("UPDATE approval SET expires_at = 1 WHERE id = $1").bind(&first).execute(&env.db.pool).await.unwrap();
    let resp = ask(json!({"planType": "acquisition", "planId": plan.id})).await.unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let approval: Value = resp.json().await.unwrap();
    assert_ne!(approval["id"].as_str().unwrap(), first, "a new request");
    assert_eq!(approval["capabilityId"], "download.submit", "{approval}");
    let old: Value = env.caps.authz().approval(env.caps.domain(), &first).await.map(|a| json!(a)).unwrap();
    assert_eq!(old["status"], "expired");
    let decide = format!("{base}/approvals/{}", approval["id"].as_str().unwrap());
    let (bob, bob_csrf) = login(&env.db, &http, &base, "bob").await;
    let resp = http
        .patch(&decide)
        .header("cookie", &bob)
        .header("x-csrf-token", &bob_csrf)
        .json(&json!({"status": "approved", "payloadHash": plan.payload_hash}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);

    let inv: Value = http
        .post(format!("{base}/capabilities/test.plan-step/invoke"))
        .bearer_auth(&key)
        .json(&json!({"input": {"planId": plan.id}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");
    assert_eq!(env.caps.domain().plan(&plan.id).await.unwrap().status, "draft");
    let still: Value = http.get(&decide).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    assert_eq!(still["status"], "approved", "the approval was not used up: {still}");
}

async fn a_replanned_organization_leaves_its_approval_stale(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let http = reqwest::Client::new();
    let domain = env.caps.domain().clone();
    let task = Author::new("task:verifyAndImport");
    let (_, download) = submitted_download(&domain, &"f".repeat(40)).await;
    domain.update_download(&download.id, "completed", 1.0, Some("/downloads/x")).await.unwrap();
    let organize = |destination: &str| NewOrganizationPlan {
        download_task_id: download.id.clone(),
        mode: "hardlink".into(),
        items: vec![json!({"source": "x.mkv", "destination": destination})],
    };
    let (org, artifact) = domain.plan_organization(&task, &organize("Movies/X (2024).mkv")).await.unwrap();

    let key = capstan::http::keys::create(&env.db, "k", &[EffectClass::Execute], "test").await.unwrap();
    let approval: Value = http
        .post(format!("{base}/approvals"))
        .bearer_auth(&key)
        .json(&json!({"planType": "organization", "planId": org.id}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = format!("{base}/approvals/{}", approval["id"].as_str().unwrap());
    let (cookie, csrf) = login(&env.db, &http, &base, "carol").await;
    let approved: Value = http
        .patch(&url)
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({"status": "approved", "payloadHash": artifact.payload_hash}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((approved["status"].as_str(), approved["stale"].as_bool()), (Some("approved"), Some(false)));
    assert!(
        env.caps
            .authz()
            .covering_approval(&domain, "organization", &org.id, "organize.execute")
            .await
            .unwrap()
            .is_some()
    );

    // Re-planned with another destination: the approval no longer covers it.
    let (replanned, new_artifact) = domain.plan_organization(&task, &organize("Movies/X.mkv")).await.unwrap();
    assert_eq!((replanned.id.as_str(), replanned.revision), (org.id.as_str(), 2));
    assert_ne!(new_artifact.payload_hash, artifact.payload_hash);
    let after: Value = http.get(&url).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    assert_eq!(after["stale"], true, "{after}");
    assert!(
        env.caps
            .authz()
            .covering_approval(&domain, "organization", &org.id, "organize.execute")
            .await
            .unwrap()
            .is_none()
    );
    // Unknown plan types and plans are refused.
    let resp = http
        .post(format!("{base}/approvals"))
        .bearer_auth(&key)
        .json(&json!({"planType": "spaceship", "planId": org.id}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 422);
    let resp = http
        .post(format!("{base}/approvals"))
        .bearer_auth(&key)
        .json(&json!({"planType": "acquisition", "planId": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
}

both_backends!(
    approvals_authorise_one_call_on_the_plan_as_approved,
    an_approval_is_for_the_capability_it_names,
    a_replanned_organization_leaves_its_approval_stale
);

/// A grant scoped to entities covers a plan-bound call only when the plan's
/// real target is in scope.
async fn entity_scoped_grants_are_checked_against_the_plan_s_target(backend: Backend) {
    let env = env(backend).await;
    let domain = env.caps.domain().clone();
    let (slot, release) = wanted_movie(&domain, &"7".repeat(40)).await;
    domain.match_identity(&release.id, Some(&slot.entity_id), "resolved", &json!({})).await.unwrap();
    let planner = Author::new("task:evaluateAcquisition");
    let plan = domain
        .draft_plan(&planner, &NewPlan { slot_id: slot.id.clone(), source_release_id: release.id.clone(), note: None })
        .await
        .unwrap();
    let grant = |entity: &str| capstan::authz::NewGrant {
        action: "test.plan-step".into(),
        policy_name: None,
        policy_revision: None,
        scope: capstan::authz::GrantScope {
            entity_ids: vec![entity.into()],
            media_kinds: vec!["movie".into()],
            capabilities: vec![],
        },
        daily_invocations: 5,
        daily_bytes: 10_000,
        expires_at: capstan::store::now_ms() + 3_600_000,
    };
    let origin = capstan::pipeline::Origin {
        actor: capstan::runtime::Actor::Task,
        principal: "task:test".into(),
        run_id: None,
        task_id: Some("t1".into()),
        tool_call_id: None,
        request_id: "r1".into(),
        mode: capstan::runtime::Mode::Execute,
        ceiling: EffectClass::Execute,
    };
    let other = env.caps.authz().create_grant(&grant("some-other-entity"), "admin:test").await.unwrap();
    let inv = env.caps.invoke(&origin, "test.plan-step", &json!({"planId": plan.id})).await.unwrap();
    assert_eq!(inv.error.as_ref().map(|e| e.kind.as_str()), Some("denied"), "{inv:?}");
    env.caps.authz().revoke_grant(&other.id).await.unwrap();

    let ours = env.caps.authz().create_grant(&grant(&slot.entity_id), "admin:test").await.unwrap();
    let inv = env.caps.invoke(&origin, "test.plan-step", &json!({"planId": plan.id})).await.unwrap();
    assert_eq!(inv.status, capstan::runtime::Status::Succeeded, "{inv:?}");
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    let used = audit.iter().rev().find(|e| e.event.action == "capability.invoke").unwrap();
    assert_eq!(used.event.authorization_id.as_deref(), Some(ours.id.as_str()));
}

both_backends!(entity_scoped_grants_are_checked_against_the_plan_s_target);
