//! Authorisation of automated callers: automation grants (action, policy
//! binding, scope, daily budgets charged inside the claim), the automation
//! switches, revoke and shorten-only changes. On SQLite and PostgreSQL.

use capstan::authz::{NewGrant, Switches};
use capstan::pipeline::{Invocation, Origin};
use capstan::runtime::{Actor, EffectClass, Status};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use super::ledger::{Env, env};

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
    let g = env.caps.authz().create_grant(&g, "admin:test").await.unwrap();
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
    assert_eq!(env.caps.authz().usage(&g.id).await.unwrap().0, 5);
    let events = env.caps.audit().list(0, 1000).await.unwrap();
    let authorised = events.iter().filter(|e| e.event.authorization_id.as_deref() == Some(g.id.as_str())).count();
    assert_eq!(authorised, 5, "each run names the grant that authorised it");
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
    let authz = env.caps.authz();
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
    let authz = env.caps.authz();
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

both_backends!(
    twenty_calls_against_a_budget_of_five,
    without_a_grant_nothing_in_the_input_authorises,
    actions_scopes_and_policy_bindings,
    switches_revoke_and_shorten,
);
