//! Nothing a component produces is unbounded: a 20 MB failure message is
//! cut before it is returned or stored in the audit log, a call that logs
//! as fast as it can leaves a bounded log with a count of what was dropped,
//! and a newline in a message cannot forge a line of the host's log.

use capstan::pipeline::Origin;
use capstan::runtime::{CallOutcome, EffectClass};
use capstan_tests::binary::{capstan_bin, stderr};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::json;

use crate::storage::ledger::env;

async fn a_huge_failure_message_is_cut_before_it_is_kept(backend: Backend) {
    let env = env(backend).await;
    let report = env
        .caps
        .runtime()
        .call(
            "test.probe",
            &json!({"action": "fail-huge", "bytes": 20 << 20}).to_string(),
            crate::grant(EffectClass::Read),
        )
        .await
        .unwrap();
    let CallOutcome::Failed { failure } = &report.outcome else { panic!("{:?}", report.outcome) };
    assert!(failure.message.len() < 5_000, "{} bytes came back", failure.message.len());
    assert!(failure.message.contains("bytes cut"), "it says it was cut");

    let inv = env
        .caps
        .invoke(&Origin::cli(EffectClass::Read), "test.probe", &json!({"action": "fail-huge", "bytes": 20 << 20}))
        .await
        .unwrap();
    assert!(inv.error.unwrap().message.len() < 5_000);
    let audit = env.app.audit().list(0, 1_000).await.unwrap();
    let kept = audit.iter().rev().find(|e| e.event.subject == "test.probe").expect("the call is audited");
    let size = serde_json::to_string(kept).unwrap().len();
    assert!(size < 16_000, "the audit event is {size} bytes");
}

/// A component looping on refused calls gets each refusal, but the call
/// keeps (and audits) only the first ones and a count of the rest.
async fn a_flood_of_denials_is_kept_bounded(backend: Backend) {
    let env = env(backend).await;
    let inv = env
        .caps
        .invoke(&Origin::cli(EffectClass::Read), "test.probe", &json!({"action": "deny-loop", "times": 5000}))
        .await
        .unwrap();
    assert_eq!(inv.output.as_ref().unwrap()["result"], 5000, "every call was refused");
    assert_eq!(inv.denials.len(), 33, "{:?}", inv.denials.last());
    assert!(inv.denials[32].reason.contains("4968 more denials"), "{:?}", inv.denials[32]);
    let audit = env.app.audit().list(0, 10_000).await.unwrap();
    let denied = audit.iter().filter(|e| e.event.action == "capability.denied").count();
    assert!(denied <= 33, "{denied} denial events");
}

both_backends!(a_huge_failure_message_is_cut_before_it_is_kept, a_flood_of_denials_is_kept_bounded);

/// Runs the real binary so its log is what an operator's log would hold.
fn invoke_logging(input: serde_json::Value) -> String {
    invoke_logging_as(input, &[])
}

/// As [`invoke_logging`], with `format` (such as `--log-format json`) given.
fn invoke_logging_as(input: serde_json::Value, format: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("capabilities")).unwrap();
    std::fs::copy(capstan_tests::components::PROBE, data.join("capabilities/probe.wasm")).unwrap();
    let config = dir.path().join("capstan.toml");
    std::fs::write(&config, format!("cache_dir = {:?}\n", capstan_tests::host::shared_cache().display().to_string()))
        .unwrap();
    let out = std::process::Command::new(capstan_bin())
        .args(["--data-dir", data.to_str().unwrap(), "--config", config.to_str().unwrap()])
        .args(format)
        .args(["invoke", "test.probe", "--input", &input.to_string()])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stderr(&out)
}

#[test]
fn a_call_that_floods_the_log_leaves_a_bounded_log_and_says_so() {
    let log = invoke_logging(json!({"action": "log", "lines": 50_000, "bytes": 4096}));
    assert!(log.len() < 400_000, "{} bytes of log", log.len());
    let guest = log.lines().filter(|l| l.contains("capstan::guest")).count();
    assert!(guest <= 202, "{guest} guest lines");
    let said = log.lines().find(|l| l.contains("log lines dropped")).expect("the drop is said");
    let dropped: usize = said.split("dropped=").nth(1).and_then(|n| n.split_whitespace().next()?.parse().ok()).unwrap();
    assert_eq!(dropped + guest - 1, 50_000, "every line is kept or counted: {said}");
}

#[test]
fn a_newline_in_a_message_cannot_forge_a_log_line() {
    let forged = "harmless\n2026-12-01T00:00:00.000000Z  INFO capstan::component: component change event=component.loaded subject=evil";
    let log = invoke_logging(json!({"action": "log", "message": forged}));
    assert!(log.contains("harmless\\n2026"), "the newline is escaped: {log}");
    assert!(!log.lines().any(|l| l.starts_with("2026-12-01T00:00:00")), "a line was forged: {log}");
}

#[test]
fn a_json_log_is_one_object_per_line_and_a_newline_stays_inside_it() {
    let forged = "harmless\n{\"level\":\"ERROR\",\"message\":\"forged\"}";
    let log = invoke_logging_as(json!({"action": "log", "message": forged}), &["--log-format", "json"]);
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON object ({e}): {l}")))
        .collect();
    assert!(!lines.is_empty(), "something was logged");
    for line in &lines {
        assert!(line["timestamp"].is_string() && line["level"].is_string() && line["target"].is_string(), "{line}");
    }
    assert!(!log.contains('\u{1b}'), "no colour codes");
    let guest: Vec<_> = lines.iter().filter(|l| l["target"] == "capstan::guest").collect();
    assert_eq!(guest.len(), 1, "the guest's one line: {log}");
    assert!(guest[0].to_string().contains("harmless"), "{}", guest[0]);
    assert!(!lines.iter().any(|l| l["message"] == "forged"), "a line was forged: {log}");
}
