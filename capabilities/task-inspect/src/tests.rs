//! Native tests through the SDK's mock host.

use capstan_sdk::contract::records::Task;
use capstan_sdk::contract::status::TaskStatus;
use capstan_sdk::testing::{Called, Class, MockHost, invoke, records};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::TaskInspect;

fn dead_task() -> Value {
    json!(Task {
        subject: Some("plan-1".into()),
        status: TaskStatus::Dead,
        attempts: 3,
        run_after: 5,
        last_error: Some("qbittorrent unreachable".into()),
        updated_at: 9,
        ..records::task("t1", "submitDownload")
    })
}

fn install() {
    MockHost::new("task.inspect")
        .with_grant(Class::Read)
        .with_domain(|_, name, arg| match name {
            "task.get" if arg["id"] == "t1" => Ok(dead_task()),
            "task.get" => Err(HostError::NotFound(format!("no task {}", arg["id"]))),
            "tasks.list" => {
                assert_eq!((&arg["subjectId"], &arg["limit"]), (&json!("plan-1"), &json!(5)));
                Ok(json!([dead_task()]))
            }
            other => panic!("unexpected query {other}"),
        })
        .install();
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<TaskInspect>(input)? {
        Called::Succeeded(v) | Called::Pending(v) => Ok(v),
    }
}

#[test]
fn a_dead_task_shows_its_attempts_and_last_error() {
    install();
    let out = call(json!({"taskId": "t1"})).unwrap();
    let task = &out["tasks"][0];
    assert_eq!(
        (task["status"].as_str(), task["attempts"].as_i64(), task["maxAttempts"].as_i64()),
        (Some("dead"), Some(3), Some(3))
    );
    assert_eq!(task["lastError"], "qbittorrent unreachable");
    let listed = call(json!({"subjectId": "plan-1", "limit": 5})).unwrap();
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1);
}

#[test]
fn unknown_tasks_and_mixed_inputs_are_refused() {
    install();
    assert!(matches!(call(json!({"taskId": "nope"})), Err(Failure::NotFound(_))));
    assert!(matches!(call(json!({"taskId": "t1", "limit": 3})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"limit": 0})), Err(Failure::InvalidInput(_))));
}
