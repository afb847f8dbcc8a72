//! The sandbox contains misbehaving components: each test makes the probe
//! misbehave, checks the call ends the way a user would expect, and then
//! checks the host still serves the next call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::Runtime;
use capstan::config::CapabilityConfig;
use capstan::runtime::{CallOutcome, EffectClass, Status, TrapKind};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use serde_json::json;

use crate::grant;

async fn probe_host(deadline_ms: u64) -> (TestHost, Arc<Runtime>) {
    let mut host = TestHost::new();
    host.config.capabilities.insert(
        "test.probe".into(),
        CapabilityConfig {
            deadline_ms: Some(deadline_ms),
            memory_bytes: Some(16 << 20),
            output_bytes: Some(64 << 10),
            ..Default::default()
        },
    );
    host.config.capabilities.get_mut("test.probe").unwrap().settings.insert("greeting".into(), "hello".into());
    host.drop_plugin(components::PROBE, "probe.wasm");
    let runtime = host.start().await.unwrap();
    (host, runtime)
}

/// The host still answers a normal call after whatever happened before.
async fn still_serving(runtime: &Runtime) {
    let report = runtime
        .call(
            "release.inspect",
            &json!({"name": "Heat.1995.1080p.BluRay.x264-GRP"}).to_string(),
            grant(EffectClass::Read),
        )
        .await
        .unwrap();
    assert_eq!(report.status(), Status::Succeeded, "{:?}", report.outcome);
    let report =
        runtime.call("test.probe", &json!({"action": "context"}).to_string(), grant(EffectClass::Read)).await.unwrap();
    assert_eq!(report.status(), Status::Succeeded, "{:?}", report.outcome);
}

fn trap(outcome: &CallOutcome) -> TrapKind {
    match outcome {
        CallOutcome::Trapped { trap, .. } => *trap,
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_infinite_loop_fails_within_the_deadline_plus_one_second() {
    let (_host, runtime) = probe_host(1_000).await;
    let started = Instant::now();
    let report =
        runtime.call("test.probe", &json!({"action": "spin"}).to_string(), grant(EffectClass::Read)).await.unwrap();
    let took = started.elapsed();
    assert_eq!(trap(&report.outcome), TrapKind::Deadline);
    assert_eq!(report.status(), Status::Failed, "no effect ran, so the loop is a plain failure");
    assert!(took < Duration::from_millis(2_000), "took {took:?} for a 1 s deadline");
    still_serving(&runtime).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_instruction_bound_stops_a_loop_before_its_deadline() {
    let mut host = TestHost::new();
    host.config.capabilities.insert(
        "test.probe".into(),
        CapabilityConfig { fuel: Some(50_000_000), deadline_ms: Some(60_000), ..Default::default() },
    );
    host.drop_plugin(components::PROBE, "probe.wasm");
    let runtime = host.start().await.unwrap();
    let started = Instant::now();
    let report =
        runtime.call("test.probe", &json!({"action": "spin"}).to_string(), grant(EffectClass::Read)).await.unwrap();
    assert_eq!(trap(&report.outcome), TrapKind::InstructionBound);
    assert!(started.elapsed() < Duration::from_secs(30), "the bound, not the 60 s deadline, ended the call");
    still_serving(&runtime).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_bomb_fails_at_the_cap() {
    let (_host, runtime) = probe_host(10_000).await;
    let report =
        runtime.call("test.probe", &json!({"action": "alloc"}).to_string(), grant(EffectClass::Read)).await.unwrap();
    assert_eq!(trap(&report.outcome), TrapKind::MemoryCap, "{:?}", report.outcome);
    assert_eq!(report.status(), Status::Failed);
    still_serving(&runtime).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn std_fs_cannot_read_host_files_without_preopens() {
    let (_host, runtime) = probe_host(10_000).await;
    let report = runtime
        .call("test.probe", &json!({"action": "passwd"}).to_string(), grant(EffectClass::Execute))
        .await
        .unwrap();
    assert_eq!(report.status(), Status::Failed);
    let text = serde_json::to_string(&report.outcome).unwrap();
    assert!(!text.contains("root:"), "the host's /etc/passwd leaked: {text}");
    assert!(text.contains("cannot read /etc/passwd"), "{text}");
    still_serving(&runtime).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_import_under_a_read_grant_is_denied_and_recorded() {
    let (host, runtime) = probe_host(10_000).await;
    let library = host.dir.path().join("library");
    std::fs::create_dir_all(&library).unwrap();
    drop(runtime);
    let mut host = host;
    host.config.roots.insert("library".into(), library.clone());
    let runtime = host.start().await.unwrap();

    let input = json!({"action": "mkdir", "root": "library", "path": "Movies"}).to_string();
    let report = runtime.call("test.probe", &input, grant(EffectClass::Read)).await.unwrap();
    assert_eq!(report.status(), Status::Failed);
    assert!(!library.join("Movies").exists(), "the denied import must not have run");
    assert_eq!(report.denials.len(), 1, "{:?}", report.denials);
    assert_eq!(report.denials[0].needed, EffectClass::Execute);
    assert_eq!(report.denials[0].granted, EffectClass::Read);
    assert!(!report.effect_started);

    // The same call with an execute grant does the work and records the effect.
    let report = runtime.call("test.probe", &input, grant(EffectClass::Execute)).await.unwrap();
    assert_eq!(report.status(), Status::Succeeded, "{:?}", report.outcome);
    assert!(library.join("Movies").is_dir());
    assert!(report.effect_started);
    still_serving(&runtime).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_after_an_effect_is_unknown_not_failed() {
    let (host, _) = probe_host(1_000).await;
    let library = host.dir.path().join("library");
    std::fs::create_dir_all(&library).unwrap();
    let mut host = host;
    host.config.roots.insert("library".into(), library.clone());
    let runtime = host.start().await.unwrap();
    let input = json!({"action": "mkdir-then-spin", "root": "library", "path": "Half"}).to_string();
    let report = runtime.call("test.probe", &input, grant(EffectClass::Execute)).await.unwrap();
    assert_eq!(trap(&report.outcome), TrapKind::Deadline);
    assert!(report.effect_started);
    assert_eq!(report.status(), Status::Unknown);
    assert!(library.join("Half").is_dir());
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_output_is_capped() {
    let (_host, runtime) = probe_host(10_000).await;
    let report = runtime
        .call("test.probe", &json!({"action": "big", "bytes": 200_000}).to_string(), grant(EffectClass::Read))
        .await
        .unwrap();
    assert_eq!(trap(&report.outcome), TrapKind::OutputTooLarge);
    assert_eq!(report.status(), Status::Failed);
    let small = runtime
        .call("test.probe", &json!({"action": "big", "bytes": 1_000}).to_string(), grant(EffectClass::Read))
        .await
        .unwrap();
    assert_eq!(small.status(), Status::Succeeded);
    still_serving(&runtime).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_is_a_failed_call_and_the_host_is_fine() {
    let (_host, runtime) = probe_host(10_000).await;
    let report =
        runtime.call("test.probe", &json!({"action": "panic"}).to_string(), grant(EffectClass::Read)).await.unwrap();
    assert_eq!(trap(&report.outcome), TrapKind::Panic);
    assert_eq!(report.status(), Status::Failed);
    let text = serde_json::to_string(&report.outcome).unwrap();
    assert!(text.contains("probe was asked to panic"), "{text}");
    still_serving(&runtime).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn components_see_their_context_settings_and_no_environment() {
    let (_host, runtime) = probe_host(10_000).await;
    let report = runtime
        .call("test.probe", &json!({"action": "context"}).to_string(), grant(EffectClass::Propose))
        .await
        .unwrap();
    let CallOutcome::Succeeded { output } = &report.outcome else { panic!("{:?}", report.outcome) };
    let result = &output["result"];
    assert_eq!(result["capability"], "test.probe");
    assert_eq!(result["grant"], "propose");
    assert_eq!(result["setting"], "hello");
    assert_eq!(result["env"], 0, "no environment variables are granted");
}

#[tokio::test(flavor = "multi_thread")]
async fn subagent_calls_are_read_only_whatever_they_ask_for() {
    let (host, _) = probe_host(10_000).await;
    let library = host.dir.path().join("library");
    std::fs::create_dir_all(&library).unwrap();
    let mut host = host;
    host.config.roots.insert("library".into(), library.clone());
    let runtime = host.start().await.unwrap();
    let sub = capstan::runtime::Grant::new(capstan::runtime::Actor::Subagent, EffectClass::Execute);
    let input = json!({"action": "mkdir", "root": "library", "path": "Sub"}).to_string();
    let report = runtime.call("test.probe", &input, sub).await.unwrap();
    assert_eq!(report.status(), Status::Failed);
    assert!(!library.join("Sub").exists());
    assert_eq!(report.denials.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_without_an_implementation_cannot_tell() {
    let (_host, runtime) = probe_host(10_000).await;
    let outcome = runtime
        .verify("test.probe", &json!({"action": "context"}).to_string(), grant(EffectClass::Execute))
        .await
        .unwrap();
    match outcome {
        capstan::runtime::VerifyOutcome::CannotTell { reason } => {
            assert!(reason.contains("does not implement verify"), "{reason}")
        }
        other => panic!("expected cannot-tell, got {other:?}"),
    }
}
