//! `unknown` means unknown, on both backends: a call that fails with
//! anything but a refusal after a write went out (`unavailable` or
//! `internal` after the service answered, the way a timeout or a dropped
//! connection ends) may have done what it was asked, so its ledger row is
//! `unknown`, never `failed`; a refusal (`conflict`, `invalid-input`), a
//! write the service refused with a 4xx, a record the store refused, and a
//! failure before any write are `failed`. And an open outcome is checked
//! before the same write is made again by a later request of the same
//! caller: verified done, it is answered from the earlier row; verified
//! not done, it is written; nobody can tell, it is written again only by a
//! capability whose replay is `safe`, under the earlier row's key.

use std::sync::atomic::Ordering;

use capstan::ledger::{Claim, ClaimRequest, Ledger, LedgerStatus, by_id};
use capstan::pipeline::{Origin, input_digest};
use capstan::runtime::{Actor, EffectClass, Status};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::json;

use crate::storage::ledger::{Env, env};

async fn an_error_after_a_write_is_unknown_and_a_refusal_is_failed(backend: Backend) {
    let env = env(backend).await;
    let origin = Origin::cli(EffectClass::Execute);
    let cases = [
        ("POST", "/echo", "unavailable", Status::Unknown),
        ("POST", "/echo", "internal", Status::Unknown),
        ("POST", "/echo", "conflict", Status::Failed),
        ("POST", "/echo", "invalid-input", Status::Failed),
        // The service refused it: nothing happened, whatever the component says.
        ("POST", "/no-such-endpoint", "unavailable", Status::Failed),
        // A read is no effect.
        ("GET", "/echo", "unavailable", Status::Failed),
    ];
    for (method, path, fail, expected) in cases {
        let input =
            json!({"action": "send-then-fail", "service": "echo", "method": method, "path": path, "fail": fail});
        let inv = env.caps.invoke(&origin, "test.probe", &input).await.unwrap();
        assert_eq!(inv.status, expected, "{method} {path} then {fail}: {:?}", inv.error);
        assert_eq!(inv.error.as_ref().unwrap().kind, fail, "the component's own reason is kept");
        let row = by_id(&env.db, inv.invocation_id.as_deref().unwrap()).await.unwrap().unwrap();
        let stored = if expected == Status::Unknown { LedgerStatus::Unknown } else { LedgerStatus::Failed };
        assert_eq!(row.status, stored, "{method} {path} then {fail}");
    }
    // A record made is an effect; one the store refused is not.
    let drafted = json!({"kind": "evidence", "draft": {"subject": "s", "body": {"seen": true}}});
    let refused = json!({"kind": "decision", "draft": {"kind": "download_failed", "dedupeKey": "download_failed:x"}});
    for (draft, expected) in [(drafted, Status::Unknown), (refused, Status::Failed)] {
        let mut input = draft.clone();
        input["action"] = json!("draft-then-fail");
        let inv = env.caps.invoke(&origin, "test.probe", &input).await.unwrap();
        assert_eq!(inv.status, expected, "{draft}: {:?}", inv.error);
    }
}

/// A write by a new request of the operator (each CLI call is one).
async fn count(env: &Env, id: &str) -> capstan::pipeline::Invocation {
    env.caps.invoke(&Origin::cli(EffectClass::Execute), id, &json!({"label": "again"})).await.unwrap()
}

/// Leaves an `unknown` row for `id`: the service counts, then the
/// component crashes.
async fn crashed(env: &Env, id: &str) -> String {
    env.mock.counters.crash_next.store(true, Ordering::SeqCst);
    let inv = count(env, id).await;
    assert_eq!(inv.status, Status::Unknown, "{:?}", inv.error);
    inv.invocation_id.unwrap()
}

async fn row(env: &Env, id: &str) -> LedgerStatus {
    by_id(&env.db, id).await.unwrap().unwrap().status
}

async fn a_later_request_checks_an_earlier_open_write_first(backend: Backend) {
    let env = env(backend).await;

    // verify, done: answered from the earlier row, nothing written.
    let earlier = crashed(&env, "test.counter-verify").await;
    let later = count(&env, "test.counter-verify").await;
    assert_eq!((later.status, later.replayed), (Status::Succeeded, true), "{:?}", later.error);
    assert_eq!(later.invocation_id.as_deref(), Some(earlier.as_str()), "the earlier write's receipt");
    assert_eq!(row(&env, &earlier).await, LedgerStatus::Succeeded);
    assert_eq!(env.mock.writes(), 1, "zero extra writes");

    // never, and nobody can tell: answered unknown, nothing written, until
    // a check can tell.
    let earlier = crashed(&env, "test.counter-never").await;
    env.mock.counters.status_down.store(true, Ordering::SeqCst);
    let later = count(&env, "test.counter-never").await;
    assert_eq!(later.status, Status::Unknown);
    let said = later.error.unwrap().message;
    assert!(said.contains("earlier identical write") && said.contains(&earlier), "{said}");
    assert_eq!(env.mock.writes(), 2, "zero extra writes while nobody can tell");
    assert_eq!(row(&env, &earlier).await, LedgerStatus::Unknown);
    env.mock.counters.status_down.store(false, Ordering::SeqCst);
    let later = count(&env, "test.counter-never").await;
    assert_eq!((later.status, later.invocation_id.as_deref()), (Status::Succeeded, Some(earlier.as_str())));
    assert_eq!(env.mock.writes(), 2);

    // safe, and nobody can tell: run again, once, under the earlier key.
    let earlier = crashed(&env, "test.counter-safe").await;
    env.mock.counters.status_down.store(true, Ordering::SeqCst);
    let later = count(&env, "test.counter-safe").await;
    env.mock.counters.status_down.store(false, Ordering::SeqCst);
    assert_eq!((later.status, later.invocation_id.as_deref()), (Status::Succeeded, Some(earlier.as_str())));
    assert_eq!(row(&env, &earlier).await, LedgerStatus::Succeeded);
    assert_eq!(env.mock.writes(), 4, "the safe write ran once more");
    let keys = env.mock.counters.keys.lock().unwrap().clone();
    assert_eq!(keys[2], keys[3], "under the earlier row's key");

    // A claim whose process died before the write: checked, not done, so
    // the later request writes.
    let input = json!({"label": "again"});
    let operator = Origin::cli(EffectClass::Execute);
    let dead = Ledger::new(env.db.clone(), "a-process-that-died".into());
    let request = ClaimRequest {
        key: "test.counter-verify:v1:req:gone:x".into(),
        capability_id: "test.counter-verify".into(),
        capability_version: 1,
        actor_kind: "cli".into(),
        principal: operator.principal.clone(),
        run_id: None,
        task_id: None,
        tool_call_id: None,
        input_digest: input_digest(&input),
    };
    let Claim::Claimed { id: orphan, .. } = dead.claim(&request).await.unwrap() else { panic!("not claimed") };
    let later = count(&env, "test.counter-verify").await;
    assert_eq!((later.status, later.replayed), (Status::Succeeded, false), "{:?}", later.error);
    assert_ne!(later.invocation_id.as_deref(), Some(orphan.as_str()));
    assert_eq!(row(&env, &orphan).await, LedgerStatus::Failed, "checked and found not done");
    assert_eq!(env.mock.writes(), 5);

    // Another caller's open write does not hold anyone else back.
    crashed(&env, "test.counter-never").await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let key = Origin { actor: Actor::ApiKey, principal: "key:other".into(), ..operator.clone() };
    let theirs = env.caps.invoke(&key, "test.counter-never", &input).await.unwrap();
    assert_eq!((theirs.status, theirs.replayed), (Status::Succeeded, false), "{:?}", theirs.error);
    assert_eq!(env.mock.writes(), 7);
}

both_backends!(
    an_error_after_a_write_is_unknown_and_a_refusal_is_failed,
    a_later_request_checks_an_earlier_open_write_first
);
