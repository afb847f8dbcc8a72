//! Approvals over HTTP: requested by anyone, decided only from a console
//! session, never by the plan's creator or the owner of the key that
//! created it, only against the payload hash the plan still has; an
//! approval lets one automated call act on its plan and is consumed by the
//! first success; a plan that changed leaves its approvals stale; one
//! nobody has used can be revoked from a console session, and then
//! authorises nothing — of a revoke and the call it was for racing,
//! exactly one wins.

use capstan::domain::{Author, NewOrganizationPlan, NewPlan, Plan};
use capstan::runtime::EffectClass;
use capstan_tests::api::{Api, serve};
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
    let domain = &env.svc.domain;
    let (slot, release) = wanted_movie(domain, hash).await;
    domain
        .match_identity(&release.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
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
    let api = Api::new(&base);
    let domain = env.svc.domain.clone();
    let (key, plan) = plan_drafted_by_alices_key(&env, &"e".repeat(40)).await;
    let keyed = api.with_key(&key);
    let call = |input: Value| {
        let keyed = keyed.clone();
        async move { keyed.post("/capabilities/test.plan-step/invoke", json!({ "input": input })).await.1 }
    };

    // Without an approval the key may not act on the plan; claiming one in
    // the input changes nothing.
    let inv = call(json!({"planId": plan.id})).await;
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");

    let asked = json!({"planType": "acquisition", "planId": plan.id, "capabilityId": "test.plan-step"});
    let (status, approval) = keyed.post("/approvals", asked).await;
    assert_eq!(status, 201, "{approval}");
    assert_eq!(
        (approval["status"].as_str(), approval["payloadHash"].as_str(), approval["capabilityId"].as_str()),
        (Some("pending"), Some(plan.payload_hash.as_str()), Some("test.plan-step"))
    );
    let decide = format!("/approvals/{}", approval["id"].as_str().unwrap());
    let approve = json!({"status": "approved", "payloadHash": plan.payload_hash});
    let patch = reqwest::Method::PATCH;

    // Keys never decide; alice owns the key that made the plan; bob must
    // approve what he saw.
    assert_eq!(keyed.send(patch.clone(), &decide, approve.clone()).await.0, 403);
    let alice = api.signed_in(&env.db, "alice").await;
    assert_eq!(alice.send(patch.clone(), &decide, approve.clone()).await.0, 403);
    let bob = api.signed_in(&env.db, "bob").await;
    let wrong = json!({"status": "approved", "payloadHash": "0".repeat(64)});
    assert_eq!(bob.send(patch.clone(), &decide, wrong).await.0, 409);
    let maybe = json!({"status": "maybe", "payloadHash": plan.payload_hash});
    assert_eq!(bob.send(patch.clone(), &decide, maybe).await.0, 422);
    let (_, decided) = bob.send(patch, &decide, approve).await;
    assert_eq!((decided["status"].as_str(), decided["decidedBy"].as_str()), (Some("approved"), Some("admin:bob")));

    // Approved: one call goes through and uses the approval up.
    let inv = call(json!({"planId": plan.id})).await;
    assert_eq!(inv["status"], "succeeded", "{inv}");
    assert_eq!(domain.plan(&plan.id).await.unwrap().status, capstan::domain::PlanStatus::Reserved);
    let used = keyed.json(&decide).await;
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
    let inv = call(json!({"planId": plan.id})).await;
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");
}

/// An approval lets the capability it names act on the plan, no other: one
/// given for the built-in that submits acquisition plans is no use to a
/// plugin that also acts on them.
async fn an_approval_is_for_the_capability_it_names(backend: Backend) {
    let env = env(backend).await;
    let api = Api::new(&serve(env.app.clone()).await);
    let (key, plan) = plan_drafted_by_alices_key(&env, &"d".repeat(40)).await;
    let keyed = api.with_key(&key);
    let ask = |body: Value| {
        let keyed = keyed.clone();
        async move { keyed.post("/approvals", body).await }
    };

    let (status, _) =
        ask(json!({"planType": "acquisition", "planId": plan.id, "capabilityId": "release.inspect"})).await;
    assert_eq!(status, 422, "release.inspect does not act on acquisition plans");
    // Many asking at once get one request.
    let asks: Vec<_> = (0..8).map(|_| ask(json!({"planType": "acquisition", "planId": plan.id}))).collect();
    let mut ids = std::collections::BTreeSet::new();
    for (status, approval) in futures_util::future::join_all(asks).await {
        assert_eq!(status, 201, "{approval}");
        ids.insert(approval["id"].as_str().unwrap().to_string());
    }
    assert_eq!(ids.len(), 1, "one pending approval: {ids:?}");
    // A request nobody decided in time does not block the next one.
    let first = ids.iter().next().unwrap().clone();
    sqlx::query("UPDATE approval SET expires_at = 1 WHERE id = $1").bind(&first).execute(&env.db.pool).await.unwrap();
    let (status, approval) = ask(json!({"planType": "acquisition", "planId": plan.id})).await;
    assert_eq!(status, 201, "{approval}");
    assert_ne!(approval["id"].as_str().unwrap(), first, "a new request");
    assert_eq!(approval["capabilityId"], "download.submit", "{approval}");
    let old: Value = env.svc.authz.approval(&env.svc.domain, &first).await.map(|a| json!(a)).unwrap();
    assert_eq!(old["status"], "expired");
    let decide = format!("/approvals/{}", approval["id"].as_str().unwrap());
    let bob = api.signed_in(&env.db, "bob").await;
    let approve = json!({"status": "approved", "payloadHash": plan.payload_hash});
    assert_eq!(bob.send(reqwest::Method::PATCH, &decide, approve).await.0, 200);

    let (_, inv) = keyed.post("/capabilities/test.plan-step/invoke", json!({"input": {"planId": plan.id}})).await;
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");
    assert_eq!(env.svc.domain.plan(&plan.id).await.unwrap().status, capstan::domain::PlanStatus::Draft);
    let still = keyed.json(&decide).await;
    assert_eq!(still["status"], "approved", "the approval was not used up: {still}");
}

async fn a_replanned_organization_leaves_its_approval_stale(backend: Backend) {
    let env = env(backend).await;
    let api = Api::new(&serve(env.app.clone()).await);
    let domain = env.svc.domain.clone();
    let task = Author::new("task:verifyAndImport");
    let (_, download) = submitted_download(&domain, &"f".repeat(40)).await;
    domain
        .update_download(&download.id, capstan::domain::DownloadStatus::Completed, 1.0, Some("/downloads/x"), None)
        .await
        .unwrap();
    let organize = |destination: &str| NewOrganizationPlan {
        download_task_id: download.id.clone(),
        mode: capstan::domain::OrganizeMode::Hardlink,
        items: vec![json!({"source": "x.mkv", "destination": destination})],
    };
    let (org, artifact) = domain.plan_organization(&task, &organize("Movies/X (2024).mkv")).await.unwrap();

    let keyed =
        api.with_key(&capstan::http::keys::create(&env.db, "k", &[EffectClass::Execute], "test").await.unwrap());
    let (_, approval) = keyed.post("/approvals", json!({"planType": "organization", "planId": org.id})).await;
    // What a person judges an import by: the title, and each file's move.
    let plan = &approval["plan"];
    assert_eq!((plan["title"].as_str(), plan["mode"].as_str()), (Some("Dune: Part Two (2024)"), Some("hardlink")));
    assert_eq!(plan["files"], json!([{"source": "x.mkv", "destination": "Movies/X (2024).mkv"}]), "{approval}");
    let url = format!("/approvals/{}", approval["id"].as_str().unwrap());
    let carol = api.signed_in(&env.db, "carol").await;
    let approve = json!({"status": "approved", "payloadHash": artifact.payload_hash});
    let (_, approved) = carol.send(reqwest::Method::PATCH, &url, approve).await;
    assert_eq!((approved["status"].as_str(), approved["stale"].as_bool()), (Some("approved"), Some(false)));
    let covered = || env.svc.authz.covering_approval(&domain, "organization", &org.id, "organize.execute");
    assert!(covered().await.unwrap().is_some());

    // Re-planned with another destination: the approval no longer covers it.
    let (replanned, new_artifact) = domain.plan_organization(&task, &organize("Movies/X.mkv")).await.unwrap();
    assert_eq!((replanned.id.as_str(), replanned.revision), (org.id.as_str(), 2));
    assert_ne!(new_artifact.payload_hash, artifact.payload_hash);
    let after = keyed.json(&url).await;
    assert_eq!(after["stale"], true, "{after}");
    assert!(covered().await.unwrap().is_none());
    // Unknown plan types and plans are refused.
    assert_eq!(keyed.post("/approvals", json!({"planType": "spaceship", "planId": org.id})).await.0, 422);
    assert_eq!(keyed.post("/approvals", json!({"planType": "acquisition", "planId": "nope"})).await.0, 404);
}

/// A pending request or an approved approval, revoked by an
/// administrator, authorises nothing: the call it was for is denied and the
/// plan stays a draft. A key may not revoke (403), an unknown id is 404, a
/// body of the wrong shape 422 and malformed JSON 400; a used, revoked or
/// rejected approval is 409. No refusal changes anything.
async fn an_unused_approval_can_be_revoked_and_then_authorises_nothing(backend: Backend) {
    let env = env(backend).await;
    let api = Api::new(&serve(env.app.clone()).await);
    let domain = env.svc.domain.clone();
    let (key, plan) = plan_drafted_by_alices_key(&env, &"c".repeat(40)).await;
    let keyed = api.with_key(&key);
    let bob = api.signed_in(&env.db, "bob").await;
    let patch = reqwest::Method::PATCH;
    let revoke = json!({"status": "revoked"});
    let approve = json!({"status": "approved", "payloadHash": plan.payload_hash});
    let ask = || {
        let keyed = keyed.clone();
        let body = json!({"planType": "acquisition", "planId": plan.id, "capabilityId": "test.plan-step"});
        async move { keyed.post("/approvals", body).await }
    };
    let call = || {
        let keyed = keyed.clone();
        let body = json!({"input": {"planId": plan.id}});
        async move { keyed.post("/capabilities/test.plan-step/invoke", body).await.1 }
    };
    let revokes = || async {
        let audit = env.app.audit().list(0, 1000).await.unwrap();
        audit.iter().filter(|e| e.event.action == "approval.revoke").count()
    };

    // A pending request. Refusals first: none of them changes it.
    let (status, pending) = ask().await;
    assert_eq!(status, 201, "{pending}");
    let url = format!("/approvals/{}", pending["id"].as_str().unwrap());
    assert_eq!(keyed.send(patch.clone(), &url, revoke.clone()).await.0, 403, "a key never revokes");
    assert_eq!(bob.send(patch.clone(), "/approvals/no-such-approval", revoke.clone()).await.0, 404);
    for wrong in [json!({"status": "revoked", "payloadHash": plan.payload_hash}), json!({"status": "withdrawn"})] {
        let (status, answer) = bob.send(patch.clone(), &url, wrong.clone()).await;
        assert_eq!(status, 422, "{wrong}: {answer}");
    }
    let malformed =
        bob.request(patch.clone(), &url).header("content-type", "application/json").body("{\"status\": ").send();
    assert_eq!(malformed.await.unwrap().status().as_u16(), 400);
    let unchanged = keyed.json(&url).await;
    assert_eq!((unchanged["status"].as_str(), revokes().await), (Some("pending"), 0), "{unchanged}");

    // Revoked: it can no longer be approved or revoked again.
    let (status, revoked) = bob.send(patch.clone(), &url, revoke.clone()).await;
    assert_eq!((status, revoked["status"].as_str()), (200, Some("revoked")), "{revoked}");
    assert_eq!(bob.send(patch.clone(), &url, approve.clone()).await.0, 409);
    assert_eq!(bob.send(patch.clone(), &url, revoke.clone()).await.0, 409);
    assert_eq!(keyed.json(&url).await["status"], "revoked");
    let listed = keyed.json("/approvals?status=revoked").await;
    assert_eq!(listed["approvals"].as_array().unwrap().len(), 1, "{listed}");

    // Asked again and approved, then revoked before it is used — by the
    // plan's own creator, since taking authority away is anyone's to do:
    // the call it was for is denied and the plan stays a draft.
    let (status, asked) = ask().await;
    assert_eq!(status, 201, "{asked}");
    assert_ne!(asked["id"], pending["id"], "a new request");
    let url = format!("/approvals/{}", asked["id"].as_str().unwrap());
    assert_eq!(bob.send(patch.clone(), &url, approve.clone()).await.0, 200);
    let alice = api.signed_in(&env.db, "alice").await;
    let (status, revoked) = alice.send(patch.clone(), &url, revoke.clone()).await;
    assert_eq!((status, revoked["status"].as_str()), (200, Some("revoked")), "{revoked}");
    let inv = call().await;
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");
    assert_eq!(domain.plan(&plan.id).await.unwrap().status, capstan::domain::PlanStatus::Draft);
    assert_eq!(revokes().await, 2);

    // A used approval cannot be revoked, nor a rejected one.
    let (_, asked) = ask().await;
    let url = format!("/approvals/{}", asked["id"].as_str().unwrap());
    assert_eq!(bob.send(patch.clone(), &url, approve.clone()).await.0, 200);
    let inv = call().await;
    assert_eq!(inv["status"], "succeeded", "{inv}");
    let (status, refused) = bob.send(patch.clone(), &url, revoke.clone()).await;
    assert_eq!(status, 409, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("used"), "{refused}");
    let used = keyed.json(&url).await;
    assert_eq!((used["status"].as_str(), &used["consumedBy"]), (Some("consumed"), &inv["invocationId"]));
    let (key, other) = plan_drafted_by_alices_key(&env, &"9".repeat(40)).await;
    let body = json!({"planType": "acquisition", "planId": other.id});
    let (_, asked) = api.with_key(&key).post("/approvals", body).await;
    let url = format!("/approvals/{}", asked["id"].as_str().unwrap());
    let reject = json!({"status": "rejected", "payloadHash": other.payload_hash});
    assert_eq!(bob.send(patch.clone(), &url, reject).await.0, 200);
    assert_eq!(bob.send(patch.clone(), &url, revoke.clone()).await.0, 409);
    assert_eq!(keyed.json(&url).await["status"], "rejected");
    assert_eq!(revokes().await, 2, "refusals are not revokes");
}

/// A revoke and the call its approval was for, sent at the same moment:
/// exactly one wins. Either the revoke stands and the call was denied
/// without touching the plan, or the call went through and the revoke was
/// refused, the approval consumed by that call — never both, never
/// neither, whatever the interleaving.
async fn a_revoke_racing_the_call_it_was_for_leaves_one_winner(backend: Backend) {
    let env = env(backend).await;
    let api = Api::new(&serve(env.app.clone()).await);
    let bob = api.signed_in(&env.db, "bob").await;
    for round in 0..6 {
        let (key, plan) = plan_drafted_by_alices_key(&env, &format!("{round}").repeat(40)).await;
        let keyed = api.with_key(&key);
        let asked = json!({"planType": "acquisition", "planId": plan.id, "capabilityId": "test.plan-step"});
        let (_, approval) = keyed.post("/approvals", asked).await;
        let url = format!("/approvals/{}", approval["id"].as_str().unwrap());
        let approve = json!({"status": "approved", "payloadHash": plan.payload_hash});
        assert_eq!(bob.send(reqwest::Method::PATCH, &url, approve).await.0, 200);

        let invoke = keyed.post("/capabilities/test.plan-step/invoke", json!({"input": {"planId": plan.id}}));
        let revoke = bob.send(reqwest::Method::PATCH, &url, json!({"status": "revoked"}));
        let ((_, inv), (status, _)) = futures_util::future::join(invoke, revoke).await;
        let after = keyed.json(&url).await;
        let plan_now = env.svc.domain.plan(&plan.id).await.unwrap().status;
        if status == 200 {
            assert_eq!(inv["error"]["kind"], "denied", "round {round}: revoked, yet the call ran: {inv}");
            assert_eq!((plan_now.as_str(), after["status"].as_str()), ("draft", Some("revoked")), "round {round}");
        } else {
            assert_eq!(status, 409, "round {round}");
            assert_eq!(inv["status"], "succeeded", "round {round}: the revoke was refused, yet the call failed: {inv}");
            assert_eq!((plan_now.as_str(), after["status"].as_str()), ("reserved", Some("consumed")), "round {round}");
            assert_eq!(after["consumedBy"], inv["invocationId"], "round {round}");
        }
    }
}

/// A call takes its approval before it runs. When its process dies
/// meanwhile, the row it left becomes `unknown` on the next start and the
/// approval is given back, so the same call made again is still authorised
/// (and checked before it writes), and its success uses the approval up.
async fn an_approval_held_by_a_call_whose_process_died_is_given_back(backend: Backend) {
    let env = env(backend).await;
    let api = Api::new(&serve(env.app.clone()).await);
    let bob = api.signed_in(&env.db, "bob").await;
    let (key, plan) = plan_drafted_by_alices_key(&env, &"9".repeat(40)).await;
    let keyed = api.with_key(&key);
    let asked = json!({"planType": "acquisition", "planId": plan.id, "capabilityId": "test.plan-step"});
    let (_, approval) = keyed.post("/approvals", asked).await;
    let id = approval["id"].as_str().unwrap().to_string();
    let url = format!("/approvals/{id}");
    let approve = json!({"status": "approved", "payloadHash": plan.payload_hash});
    assert_eq!(bob.send(reqwest::Method::PATCH, &url, approve).await.0, 200);

    // A process claimed the call, took the approval, and died.
    let input = json!({"planId": plan.id});
    let dead = capstan::ledger::Ledger::new(env.db.clone(), "a-process-that-died".into());
    let key_id = key.split('_').nth(1).unwrap();
    let request = capstan::ledger::ClaimRequest {
        key: "test.plan-step:v1:req:gone:x".into(),
        capability_id: "test.plan-step".into(),
        capability_version: 1,
        actor_kind: "api-key".into(),
        principal: format!("key:{key_id}"),
        run_id: None,
        task_id: None,
        tool_call_id: None,
        input_digest: capstan::pipeline::input_digest(&input),
    };
    let capstan::ledger::Claim::Claimed { id: row, .. } = dead.claim(&request).await.unwrap() else { panic!() };
    assert!(env.svc.authz.take_approval(&id, &row).await.unwrap());
    assert_eq!(keyed.json(&url).await["status"], "consumed");

    assert_eq!(env.svc.ledger.recover_orphans().await.unwrap(), 1);
    assert_eq!(keyed.json(&url).await["status"], "approved", "given back with the row's unknown outcome");
    let (_, inv) = keyed.post("/capabilities/test.plan-step/invoke", json!({"input": input})).await;
    assert_eq!(inv["status"], "succeeded", "still authorised: {inv}");
    assert_eq!(inv["invocationId"], row.as_str(), "a safe call settles the earlier row under its own key");
    let used = keyed.json(&url).await;
    assert_eq!((used["status"].as_str(), used["consumedBy"].as_str()), (Some("consumed"), Some(row.as_str())));
    assert_eq!(env.svc.domain.plan(&plan.id).await.unwrap().status, capstan::domain::PlanStatus::Reserved);
}

both_backends!(
    an_approval_held_by_a_call_whose_process_died_is_given_back,
    approvals_authorise_one_call_on_the_plan_as_approved,
    an_approval_is_for_the_capability_it_names,
    a_replanned_organization_leaves_its_approval_stale,
    an_unused_approval_can_be_revoked_and_then_authorises_nothing,
    a_revoke_racing_the_call_it_was_for_leaves_one_winner
);

/// A grant scoped to entities covers a plan-bound call only when the plan's
/// real target is in scope.
async fn entity_scoped_grants_are_checked_against_the_plan_s_target(backend: Backend) {
    let env = env(backend).await;
    let domain = env.svc.domain.clone();
    let (slot, release) = wanted_movie(&domain, &"7".repeat(40)).await;
    domain
        .match_identity(&release.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let planner = Author::new("task:evaluateAcquisition");
    let plan = domain
        .draft_plan(&planner, &NewPlan { slot_id: slot.id.clone(), source_release_id: release.id.clone(), note: None })
        .await
        .unwrap();
    let grant = |entity: &str| capstan::authz::NewGrant {
        action: "test.plan-step".into(),
        policy_name: None,
        policy_revision: None,
        policy_revision_id: None,
        scope: capstan::authz::GrantScope {
            entity_ids: vec![entity.into()],
            media_kinds: vec!["movie".into()],
            capabilities: vec![],
        },
        daily_invocations: 5,
        daily_bytes: 10_000,
        expires_at: capstan::store::now_ms() + 3_600_000,
        reason: None,
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
    let other = env.svc.authz.create_grant(&grant("some-other-entity"), "admin:test").await.unwrap();
    let inv = env.caps.invoke(&origin, "test.plan-step", &json!({"planId": plan.id})).await.unwrap();
    assert_eq!(inv.error.as_ref().map(|e| e.kind.as_str()), Some("denied"), "{inv:?}");
    env.svc.authz.revoke_grant(&other.id).await.unwrap();

    let ours = env.svc.authz.create_grant(&grant(&slot.entity_id), "admin:test").await.unwrap();
    let inv = env.caps.invoke(&origin, "test.plan-step", &json!({"planId": plan.id})).await.unwrap();
    assert_eq!(inv.status, capstan::runtime::Status::Succeeded, "{inv:?}");
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    let used = audit.iter().rev().find(|e| e.event.action == "capability.invoke").unwrap();
    assert_eq!(used.event.authorization_id.as_deref(), Some(ours.id.as_str()));
}

both_backends!(entity_scoped_grants_are_checked_against_the_plan_s_target);
