//! `unknown` means unknown, on both backends: a call that fails with
//! anything but a refusal after a write went out (`unavailable` or
//! `internal` after the service answered, the way a timeout or a dropped
//! connection ends) may have done what it was asked, so its ledger row is
//! `unknown`, never `failed`; a refusal (`conflict`, `invalid-input`), a
//! write the service refused with a 4xx, a record the store refused, and a
//! failure before any write are `failed`.

use capstan::ledger::{LedgerStatus, by_id};
use capstan::pipeline::Origin;
use capstan::runtime::{EffectClass, Status};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::json;

use crate::storage::ledger::env;

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

both_backends!(an_error_after_a_write_is_unknown_and_a_refusal_is_failed);
