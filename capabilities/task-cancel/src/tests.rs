//! Native tests through the SDK's mock host: the transition is asked for,
//! and the store's refusal reaches the caller as a conflict.

use capstan_sdk::contract::records::Task;
use capstan_sdk::contract::status::TaskStatus;
use capstan_sdk::testing::{Called, MockHost, invoke, records};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::TaskCancel;

fn install() {
    MockHost::new("task.cancel")
        .with_domain(|iface, name, arg| {
            assert_eq!((iface, name), ("records", "task.cancel"));
            match arg["id"].as_str() {
                Some("t-queued") => {
                    Ok(json!(Task { status: TaskStatus::Cancelled, ..records::task("t-queued", "syncDownloads") }))
                }
                Some("t-succeeded") => {
                    Err(HostError::Conflict("task t-succeeded is succeeded and cannot be cancelled".into()))
                }
                _ => Err(HostError::NotFound("no task".into())),
            }
        })
        .install();
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<TaskCancel>(input)? {
        Called::Succeeded(v) | Called::Pending(v) => Ok(v),
    }
}

#[test]
fn a_queued_task_becomes_cancelled() {
    install();
    let out = call(json!({"taskId": "t-queued"})).unwrap();
    assert_eq!(out["status"], "cancelled");
    assert_eq!(out["maxAttempts"], 3);
}

#[test]
fn a_succeeded_task_is_a_conflict_and_bad_input_is_refused() {
    install();
    assert!(matches!(call(json!({"taskId": "t-succeeded"})), Err(Failure::Conflict(_))));
    assert!(matches!(call(json!({"taskId": "gone"})), Err(Failure::NotFound(_))));
    assert!(matches!(call(json!({"taskId": ""})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"id": "t-queued"})), Err(Failure::InvalidInput(_))));
}
