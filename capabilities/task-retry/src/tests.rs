//! Native tests through the SDK's mock host: the transition is asked for,
//! and the store's refusal reaches the caller as a conflict.

use capstan_sdk::testing::{Called, MockHost, invoke, records};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::TaskRetry;

fn install() {
    MockHost::new("task.retry")
        .with_domain(|iface, name, arg| {
            assert_eq!((iface, name), ("records", "task.retry"));
            match arg["id"].as_str() {
                Some("t-dead") => Ok(json!(records::task("t-dead", "syncDownloads"))),
                Some("t-running") => Err(HostError::Conflict("task t-running is running and cannot be retried".into())),
                _ => Err(HostError::NotFound("no task".into())),
            }
        })
        .install();
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<TaskRetry>(input)? {
        Called::Succeeded(v) | Called::Pending(v) => Ok(v),
    }
}

#[test]
fn a_dead_task_becomes_queued() {
    install();
    let out = call(json!({"taskId": "t-dead"})).unwrap();
    assert_eq!(out["status"], "queued");
    assert_eq!(out["maxAttempts"], 3);
}

#[test]
fn a_running_task_is_a_conflict_and_bad_input_is_refused() {
    install();
    assert!(matches!(call(json!({"taskId": "t-running"})), Err(Failure::Conflict(_))));
    assert!(matches!(call(json!({"taskId": "gone"})), Err(Failure::NotFound(_))));
    assert!(matches!(call(json!({"taskId": ""})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"id": "t-dead"})), Err(Failure::InvalidInput(_))));
}
