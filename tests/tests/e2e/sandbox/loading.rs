//! Loading: the watched directory, refusals with one-line reasons, the last
//! good version kept, held replacements, duplicates and the core set.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::Runtime;
use capstan::runtime::{EffectClass, Status, watcher};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use serde_json::json;

use crate::grant;

/// Waits up to 2 s (the promised reaction time) for `cond` on the registry.
async fn within_two_seconds(runtime: &Runtime, what: &str, cond: impl Fn(&capstan::runtime::Snapshot) -> bool) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        if cond(&runtime.snapshot()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} did not happen within 2 s");
}

/// Compiles `path` into the cache first, so that what a 2 s wait measures
/// is the watcher's reaction, not a first compile on a busy machine.
async fn compiled(runtime: &Runtime, path: &str) {
    let bytes = std::fs::read(path).unwrap();
    runtime.check(&bytes, path.into()).await.unwrap_or_else(|reason| panic!("{path} refused: {reason}"));
}

async fn refusal_of(host: &TestHost, bytes: &[u8]) -> String {
    let runtime = Runtime::new(host.config.clone(), &capstan::BUILT_INS).unwrap();
    match runtime.check(bytes, "candidate.wasm".into()).await {
        Ok(l) => panic!("{} was accepted", l.descriptor.id),
        Err(reason) => {
            let reason = reason.to_string();
            assert!(!reason.contains('\n'), "reasons are one line: {reason}");
            reason
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_components_are_refused_with_a_clear_reason() {
    let host = TestHost::new();
    let read = |p: &str| std::fs::read(p).unwrap();
    let lie = refusal_of(&host, &read(components::LABEL_LIE)).await;
    assert!(lie.contains("files-write") && lie.contains("exceed its label"), "{lie}");
    let bad = refusal_of(&host, &read(components::BAD_DESCRIPTOR)).await;
    assert!(bad.contains("bad descriptor") && bad.contains("Not An Id"), "{bad}");
    let garbage = refusal_of(&host, b"this is not wasm at all").await;
    assert_eq!(garbage, "not a WebAssembly file");
    let module = refusal_of(&host, &wat::parse_str("(module)").unwrap()).await;
    assert!(module.contains("core WebAssembly module"), "{module}");
    assert!(module.contains("componentize-py") && module.contains("jco"), "not only for Rust: {module}");
    let empty = refusal_of(&host, &wat::parse_str("(component)").unwrap()).await;
    assert!(empty.contains("wrong world") && empty.contains("read-capability"), "{empty}");
    let http = refusal_of(
        &host,
        &wat::parse_str(r#"(component (import "wasi:http/outgoing-handler@0.2.3" (instance)))"#).unwrap(),
    )
    .await;
    assert!(http.contains("outbound-read") && http.contains("--disable http"), "{http}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watched_directory_adds_replaces_and_removes_without_restart() {
    let host = TestHost::new();
    let runtime = host.start().await.unwrap();
    let _watch = watcher::watch(runtime.clone()).unwrap();
    assert!(runtime.snapshot().get("example.word-count").is_none());

    compiled(&runtime, components::WORD_COUNT).await;
    let file = host.drop_plugin(components::WORD_COUNT, "word-count.wasm");
    within_two_seconds(&runtime, "loading a dropped plugin", |s| s.get("example.word-count").is_some()).await;
    let loaded = runtime.snapshot().get("example.word-count").unwrap();
    assert_eq!(loaded.digest, capstan::runtime::loader::digest(&std::fs::read(&file).unwrap()));
    let report = runtime
        .call("example.word-count", &json!({"text": "one two"}).to_string(), grant(EffectClass::Read))
        .await
        .unwrap();
    assert_eq!(report.status(), Status::Succeeded);

    // Garbage over the good file: refused, and the last good version stays.
    std::fs::write(&file, b"garbage").unwrap();
    within_two_seconds(&runtime, "refusing garbage", |s| s.refused.iter().any(|r| r.file == file)).await;
    let still = runtime.snapshot().get("example.word-count").expect("last good version kept");
    assert_eq!(still.digest, loaded.digest);

    std::fs::remove_file(&file).unwrap();
    within_two_seconds(&runtime, "removing the plugin", |s| s.get("example.word-count").is_none()).await;
    assert!(runtime.snapshot().get("release.inspect").is_some(), "built-ins are untouched");
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_in_the_directory_leaves_the_registry_unchanged() {
    let host = TestHost::new();
    let runtime = host.start().await.unwrap();
    let _watch = watcher::watch(runtime.clone()).unwrap();
    let before: Vec<(String, String)> =
        runtime.snapshot().active.iter().map(|(id, l)| (id.clone(), l.digest.clone())).collect();
    std::fs::write(host.plugins().join("junk.wasm"), b"\0asm\x01\0\0\0garbage").unwrap();
    within_two_seconds(&runtime, "refusing junk.wasm", |s| !s.refused.is_empty()).await;
    let after: Vec<(String, String)> =
        runtime.snapshot().active.iter().map(|(id, l)| (id.clone(), l.digest.clone())).collect();
    assert_eq!(before, after);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_file_with_the_same_id_is_refused() {
    let host = TestHost::new();
    host.drop_plugin(components::WORD_COUNT, "a.wasm");
    host.drop_plugin(components::WORD_COUNT, "b.wasm");
    let runtime = host.start().await.unwrap();
    let snapshot = runtime.snapshot();
    assert!(snapshot.get("example.word-count").is_some());
    assert_eq!(snapshot.refused.len(), 1);
    assert!(snapshot.refused[0].file.ends_with("b.wasm"));
    assert!(snapshot.refused[0].reason.contains("duplicate id example.word-count"), "{}", snapshot.refused[0].reason);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_host_refuses_to_start_with_a_duplicated_core_capability() {
    let host = TestHost::new();
    let builtin = capstan_tests::host::target_dir().join("wasm-guests/wasm32-wasip2/release/cap_release_inspect.wasm");
    host.drop_plugin(builtin.to_str().unwrap(), "one.wasm");
    host.drop_plugin(builtin.to_str().unwrap(), "two.wasm");
    let err = host.start().await.err().expect("start must fail").to_string();
    assert!(err.contains("core capability release.inspect is provided twice"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replacement_that_raises_the_label_waits_for_the_operator() {
    let host = TestHost::new();
    let file = host.drop_plugin(components::PROBE_LITE, "probe.wasm");
    let runtime: Arc<Runtime> = host.start().await.unwrap();
    let _watch = watcher::watch(runtime.clone()).unwrap();
    let lite = runtime.snapshot().get("test.probe").unwrap();
    assert_eq!(lite.descriptor.label, EffectClass::Read);

    // Replace it with the execute-labelled probe that also wants a service.
    compiled(&runtime, components::PROBE).await;
    host.drop_plugin(components::PROBE, "probe.wasm");
    within_two_seconds(&runtime, "holding the replacement", |s| s.held.contains_key("test.probe")).await;
    let snapshot = runtime.snapshot();
    let reason = &snapshot.held["test.probe"].reason;
    assert!(reason.contains("raises its label from read to execute"), "{reason}");
    assert!(reason.contains("new services echo"), "{reason}");
    assert_eq!(snapshot.get("test.probe").unwrap().digest, lite.digest, "the old version keeps serving");

    runtime.accept("test.probe").await.unwrap();
    within_two_seconds(&runtime, "activating the accepted replacement", |s| {
        s.get("test.probe").is_some_and(|l| l.descriptor.label == EffectClass::Execute)
    })
    .await;
    assert!(runtime.snapshot().held.is_empty());
    assert!(file.exists());
}
