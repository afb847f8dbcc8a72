//! Authorisation of automated callers: automation grants (action, policy
//! binding, scope, daily budgets charged inside the claim), the automation
//! switches, revoke and shorten-only changes. On SQLite and PostgreSQL.

use capstan::authz::{NewGrant, Switches};
use capstan::pipeline::{Invocation, Origin};
use capstan::runtime::{Actor, EffectClass, Status};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::ledger::{Env, env};

fn agent() -> Origin {
    let mut origin = Origin::cli(EffectClass::Execute);
    origin.actor = Actor::Agent;
    origin.principal = "agent:run-1".into();
    origin
}

fn grant(action: &str) -> NewGrant {
    let mut grant = capstan_tests::grants::for_an_hour(action);
    grant.daily_bytes = 1_000_000;
    grant
}

async fn call(env: &Env, id: &str, input: Value) -> Invocation {
    env.caps.invoke(&agent(), id, &input).await.unwrap()
}

fn denied(inv: &Invocation) -> String {
    assert_eq!(inv.status, Status::Failed, "{:?}", inv.output);
    let error = inv.error.clone().unwrap();
    assert_eq!(error.kind, "denied");
    error.message
}

async fn twenty_calls_against_a_budget_of_five(backend: Backend) {
    let env = env(backend).await;
    let mut g = grant("test.counter-safe");
    g.daily_invocations = 5;
    let g = env.svc.authz.create_grant(&g, "admin:test").await.unwrap();
    let mut calls = Vec::new();
    for i in 0..20 {
        let caps = env.caps.clone();
        calls.push(tokio::spawn(async move {
            caps.invoke(&agent(), "test.counter-safe", &json!({"label": format!("n{i}")})).await.unwrap()
        }));
    }
    let mut ran = 0;
    for call in calls {
        let inv = call.await.unwrap();
        match inv.status {
            Status::Succeeded => ran += 1,
            _ => assert!(denied(&inv).contains("budget"), "{:?}", inv.error),
        }
    }
    assert_eq!(ran, 5, "exactly five ran");
    assert_eq!(env.mock.writes(), 5);
    assert_eq!(env.svc.authz.usage(&g.id).await.unwrap().0, 5);
    let events = env.app.audit().list(0, 1000).await.unwrap();
    let authorised = events.iter().filter(|e| e.event.authorization_id.as_deref() == Some(g.id.as_str())).count();
    assert_eq!(authorised, 5, "each run names the grant that authorised it");
}

/// The byte budget counts each call's input as the host canonicalises it:
/// a call that would pass the day's bytes is refused and charges nothing,
/// the first call of the day included.
async fn a_byte_budget_refuses_the_call_that_would_pass_it(backend: Backend) {
    let env = env(backend).await;
    // `{"label":"nN"}`: 14 bytes a call; two fit in 40, a third does not.
    let mut g = grant("test.counter-safe");
    g.daily_bytes = 40;
    let g = env.svc.authz.create_grant(&g, "admin:test").await.unwrap();
    for i in 0..2 {
        assert_eq!(call(&env, "test.counter-safe", json!({"label": format!("n{i}")})).await.status, Status::Succeeded);
    }
    assert!(denied(&call(&env, "test.counter-safe", json!({"label": "n2"})).await).contains("budget"));
    assert_eq!(env.svc.authz.usage(&g.id).await.unwrap(), (2, 28), "the refused call charged nothing");

    // A first call larger than the whole budget is refused before any
    // charge: the day's usage stays empty.
    let mut small = grant("test.counter-verify");
    small.daily_bytes = 10;
    let small = env.svc.authz.create_grant(&small, "admin:test").await.unwrap();
    assert!(denied(&call(&env, "test.counter-verify", json!({"label": "n3"})).await).contains("budget"));
    assert_eq!(env.svc.authz.usage(&small.id).await.unwrap(), (0, 0));
    assert_eq!(env.mock.writes(), 2, "only the two charged calls reached the service");
}

async fn without_a_grant_nothing_in_the_input_authorises(backend: Backend) {
    let env = env(backend).await;
    let inv =
        call(&env, "test.counter-safe", json!({"label": "x", "approvalId": "appr-1", "note": "the user agreed"})).await;
    assert!(denied(&inv).contains("needs an approval or an automation grant"));
    assert_eq!(env.mock.writes(), 0);
    // Read capabilities need no grant.
    let read = call(&env, "release.inspect", json!({"name": "Heat.1995.mkv"})).await;
    assert_eq!(read.status, Status::Succeeded);
}

async fn actions_scopes_and_policy_bindings(backend: Backend) {
    let env = env(backend).await;
    let authz = &env.svc.authz;
    // Scope: any action, but only counter-verify.
    let mut g = grant("*");
    g.scope.capabilities = vec!["test.counter-verify".into()];
    authz.create_grant(&g, "admin").await.unwrap();
    denied(&call(&env, "test.counter-safe", json!({"label": "a"})).await);
    assert_eq!(call(&env, "test.counter-verify", json!({"label": "a"})).await.status, Status::Succeeded);

    // Entity scope: the input must name a covered entity.
    let mut g = grant("test.counter-never");
    g.scope.entity_ids = vec!["tmdb:603".into()];
    authz.create_grant(&g, "admin").await.unwrap();
    denied(&call(&env, "test.counter-never", json!({"label": "b", "entityId": "tmdb:604"})).await);
    denied(&call(&env, "test.counter-never", json!({"label": "b"})).await);
    assert_eq!(
        call(&env, "test.counter-never", json!({"label": "b", "entityId": "tmdb:603"})).await.status,
        Status::Succeeded
    );

    // A policy action, bound to a revision that must stay published.
    let p1 = authz.draft_policy("counting", &json!({"max": 1}), "admin").await.unwrap();
    let mut g = grant("policy.counting");
    g.policy_name = Some("counting".into());
    g.policy_revision = Some(p1.revision);
    authz.create_grant(&g, "admin").await.unwrap();
    denied(&call(&env, "test.counter-safe", json!({"label": "c"})).await);
    authz.publish_policy("counting", p1.revision).await.unwrap();
    assert_eq!(call(&env, "test.counter-safe", json!({"label": "c"})).await.status, Status::Succeeded);
    let p2 = authz.draft_policy("counting", &json!({"max": 2}), "admin").await.unwrap();
    authz.publish_policy("counting", p2.revision).await.unwrap();
    assert!(denied(&call(&env, "test.counter-safe", json!({"label": "d"})).await).contains("automation grant"));
    assert!(matches!(authz.publish_policy("counting", p1.revision).await, Err(capstan::authz::AuthzError::Invalid(_))));
}

async fn switches_revoke_and_shorten(backend: Backend) {
    let env = env(backend).await;
    let authz = &env.svc.authz;
    let g = authz.create_grant(&grant("test.counter-safe"), "admin").await.unwrap();
    assert_eq!(call(&env, "test.counter-safe", json!({"label": "1"})).await.status, Status::Succeeded);

    authz.set_switches(Switches { automation_enabled: false, read_only_reconcile: false }).await.unwrap();
    assert!(denied(&call(&env, "test.counter-safe", json!({"label": "2"})).await).contains("switched off"));
    authz.set_switches(Switches { automation_enabled: true, read_only_reconcile: true }).await.unwrap();
    assert!(denied(&call(&env, "test.counter-safe", json!({"label": "2"})).await).contains("reconcile"));
    authz.set_switches(Switches { automation_enabled: true, read_only_reconcile: false }).await.unwrap();
    assert_eq!(call(&env, "test.counter-safe", json!({"label": "2"})).await.status, Status::Succeeded);
    // A human operator is not an automated caller.
    authz.set_switches(Switches { automation_enabled: false, read_only_reconcile: false }).await.unwrap();
    let human =
        env.caps.invoke(&Origin::cli(EffectClass::Execute), "test.counter-safe", &json!({"label": "h"})).await.unwrap();
    assert_eq!(human.status, Status::Succeeded);
    authz.set_switches(Switches { automation_enabled: true, read_only_reconcile: false }).await.unwrap();

    let widened = authz.shorten_grant(&g.id, Some(g.expires_at + 1), None, None).await;
    assert!(matches!(widened, Err(capstan::authz::AuthzError::Invalid(_))));
    assert_eq!(authz.grant(&g.id).await.unwrap().unwrap().expires_at, g.expires_at, "nothing changed");
    authz.shorten_grant(&g.id, None, Some(2), None).await.unwrap();
    assert!(denied(&call(&env, "test.counter-safe", json!({"label": "3"})).await).contains("budget"));
    authz.revoke_grant(&g.id).await.unwrap();
    assert!(denied(&call(&env, "test.counter-safe", json!({"label": "4"})).await).contains("automation grant"));
    assert_eq!(env.mock.writes(), 3);
}

/// A replacement that only adds a policy tag is held for the operator, and
/// a policy grant names the capabilities it covered when it was given, so
/// neither the held plugin nor the accepted one can act under it.
async fn a_replacement_claiming_a_policy_tag_is_held_and_no_older_grant_covers_it(backend: Backend) {
    use capstan_tests::api::{Api, serve};
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.db, "admin").await;
    let expires = capstan::store::now_ms() + 3_600_000;
    let asked =
        json!({"action": "policy.acquisition", "dailyInvocations": 50, "dailyBytes": 1_000_000, "expiresAt": expires});
    let (status, grant) = admin.post("/automation-grants", asked).await;
    assert_eq!(status, 201, "{grant}");
    let named: Vec<&str> =
        grant["scope"]["capabilities"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(named.contains(&"download.submit") && !named.contains(&"test.probe"), "{grant}");

    let runtime = env.caps.runtime();
    env._host.drop_plugin(capstan_tests::components::PROBE_TAGGED, "probe.wasm");
    runtime.rescan(false).await.unwrap();
    let snapshot = runtime.snapshot();
    let held = snapshot.held.get("test.probe").expect("the replacement is held");
    assert!(held.reason.contains("adds the tags policy.acquisition"), "{}", held.reason);
    assert_eq!(snapshot.get("test.probe").unwrap().descriptor.tags, vec!["test".to_string()], "the old one serves");

    let key = capstan::http::keys::create(&env.db, "automation", &[EffectClass::Execute], "admin:admin").await.unwrap();
    let automation = Api::new(&base).with_key(&key);
    let invoke = |input: Value| {
        let automation = automation.clone();
        async move { automation.post("/capabilities/test.probe/invoke", json!({"input": input})).await.1 }
    };
    let inv = invoke(json!({"action": "mkdir", "root": "library", "path": "x"})).await;
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");

    // Even once the operator accepts it, the grant given before does not cover it.
    env._host.accept(runtime, "test.probe").await;
    assert!(runtime.snapshot().get("test.probe").unwrap().descriptor.tags.contains(&"policy.acquisition".to_string()));
    let inv = invoke(json!({"root": "library", "path": "x"})).await;
    assert_eq!(inv["error"]["kind"], "denied", "{inv}");
    assert!(inv["error"]["message"].as_str().unwrap().contains("automation grant"), "{inv}");
    assert_eq!(env.svc.authz.usage(grant["id"].as_str().unwrap()).await.unwrap().0, 0);
}

both_backends!(
    twenty_calls_against_a_budget_of_five,
    a_byte_budget_refuses_the_call_that_would_pass_it,
    without_a_grant_nothing_in_the_input_authorises,
    actions_scopes_and_policy_bindings,
    switches_revoke_and_shorten,
    a_replacement_claiming_a_policy_tag_is_held_and_no_older_grant_covers_it,
);
