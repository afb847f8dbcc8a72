//! Native tests through the SDK's mock host.

use capstan_sdk::HostError;
use capstan_sdk::commands::{CommandRequest, CommandStatus, ExecutionOutcome};
use capstan_sdk::testing::{Called, Class, CommandAnswer, CommandCall, MockHost, invoke};
use serde_json::json;

use crate::SystemCommand;

fn ended(outcome: ExecutionOutcome, exit_code: Option<i32>, head: &str, tail: &str, bytes: u64) -> CommandStatus {
    CommandStatus {
        handle: "cmd_1".into(),
        name: "probe".into(),
        outcome,
        exit_code,
        timed_out: outcome == ExecutionOutcome::KilledAfterTimeout,
        duration_ms: 12,
        output_bytes: bytes,
        output_truncated: false,
        output_head: head.into(),
        output_tail: tail.into(),
        output_file: "cmd_1.log".into(),
    }
}

#[test]
fn a_run_asks_the_host_for_the_named_command_and_reports_how_it_ended() {
    MockHost::new("system.command")
        .with_commands(|call| match call {
            CommandCall::Run(_) => {
                Ok(CommandAnswer::Status(ended(ExecutionOutcome::Exited, Some(3), "head", "tail", 1000)))
            }
            other => panic!("unexpected {other:?}"),
        })
        .install();
    let input = json!({"action": "run", "command": "probe", "args": ["a.mkv"], "env": {"LANG": "C"}, "cwd": "movies", "timeout_sec": 5});
    let Called::Succeeded(out) = invoke::<SystemCommand>(input).unwrap() else { panic!() };
    assert_eq!(out["status"], "failed", "a non-zero exit is no success: {out}");
    assert_eq!((out["execution_outcome"].as_str(), out["exit_code"].as_i64()), (Some("exited"), Some(3)));
    assert_eq!(out["output"], "head\n[… 992 bytes not shown …]\ntail");
    let mock = MockHost::take().unwrap();
    let asked = CommandRequest {
        name: "probe".into(),
        args: vec!["a.mkv".into()],
        env: vec![("LANG".into(), "C".into())],
        cwd: "movies".into(),
        timeout_sec: 5,
    };
    assert_eq!(mock.command_calls, [CommandCall::Run(asked)]);
}

#[test]
fn start_and_cancel_answer_with_the_handle_and_a_stop_says_what_it_means() {
    MockHost::new("system.command")
        .with_commands(|call| {
            Ok(CommandAnswer::Status(match call {
                CommandCall::Start(_) => ended(ExecutionOutcome::Running, None, "", "", 0),
                CommandCall::Cancel(h) if h == "cmd_1" => ended(ExecutionOutcome::Cancelled, None, "partial", "", 7),
                other => panic!("unexpected {other:?}"),
            }))
        })
        .install();
    let Called::Succeeded(started) = invoke::<SystemCommand>(json!({"action": "start", "command": "probe"})).unwrap()
    else {
        panic!()
    };
    assert_eq!((started["status"].as_str(), started["handle"].as_str()), (Some("running"), Some("cmd_1")));
    let Called::Succeeded(stopped) = invoke::<SystemCommand>(json!({"action": "cancel", "handle": "cmd_1"})).unwrap()
    else {
        panic!()
    };
    assert_eq!(stopped["status"], "failed");
    assert!(stopped["note"].as_str().unwrap().contains("does not undo"), "{stopped}");
}

#[test]
fn refusals_are_failures_and_a_read_grant_runs_nothing() {
    MockHost::new("system.command")
        .with_commands(|_| Err(HostError::Invalid("command probe: argument 1 is not one the operator allows".into())))
        .install();
    let refused = invoke::<SystemCommand>(json!({"action": "run", "command": "probe", "args": ["; rm -rf /"]}));
    assert!(matches!(refused, Err(capstan_sdk::Failure::InvalidInput(_))), "{refused:?}");
    assert!(invoke::<SystemCommand>(json!({"action": "run"})).is_err(), "a command is named");
    MockHost::new("system.command").with_grant(Class::Read).with_commands(|_| panic!("nothing runs")).install();
    let denied = invoke::<SystemCommand>(json!({"action": "start", "command": "probe"}));
    assert!(matches!(denied, Err(capstan_sdk::Failure::Denied(_))), "{denied:?}");
}
