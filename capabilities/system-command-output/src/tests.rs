//! Native tests through the SDK's mock host.

use capstan_sdk::commands::{CommandStatus, ExecutionOutcome};
use capstan_sdk::testing::{Called, Class, CommandAnswer, CommandCall, MockHost, invoke};
use serde_json::json;

use crate::SystemCommandOutput;

fn running() -> CommandStatus {
    CommandStatus {
        handle: "cmd_1".into(),
        name: "df".into(),
        outcome: ExecutionOutcome::Running,
        exit_code: None,
        timed_out: false,
        duration_ms: 5,
        output_bytes: 3,
        output_truncated: false,
        output_head: "abc".into(),
        output_tail: String::new(),
        output_file: "cmd_1.log".into(),
    }
}

#[test]
fn a_reader_sees_status_pages_and_waits_with_a_read_grant() {
    MockHost::new("system.command-output")
        .with_grant(Class::Read)
        .with_commands(|call| match call {
            CommandCall::Status(_) | CommandCall::Wait { .. } => Ok(CommandAnswer::Status(running())),
            CommandCall::ReadOutput { offset: 1, limit: 2, .. } => Ok(CommandAnswer::Output(b"bc".to_vec())),
            other => panic!("unexpected {other:?}"),
        })
        .install();
    let call = |input| match invoke::<SystemCommandOutput>(input).unwrap() {
        Called::Succeeded(v) => v,
        other => panic!("{other:?}"),
    };
    assert_eq!(call(json!({"action": "status", "handle": "cmd_1"}))["status"], "running");
    let page = call(json!({"action": "read", "handle": "cmd_1", "offset": 1, "limit": 2}));
    assert_eq!((page["text"].as_str(), page["next_offset"].as_u64()), (Some("bc"), Some(3)));
    assert_eq!(call(json!({"action": "wait", "handle": "cmd_1", "timeout_ms": 50}))["output"], "abc");
    let mock = MockHost::take().unwrap();
    assert_eq!(mock.command_calls[2], CommandCall::Wait { handle: "cmd_1".into(), timeout_ms: 50 });
    assert!(invoke::<SystemCommandOutput>(json!({"action": "start", "command": "df"})).is_err(), "it starts nothing");
}
