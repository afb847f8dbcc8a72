//! File roots: paths resolve only inside the operator's named roots; `..`,
//! absolute paths and symlinks out of a root are refused; nothing is
//! overwritten.

use std::sync::Arc;

use capstan::Runtime;
use capstan::runtime::{CallOutcome, CallReport, EffectClass, Status};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use serde_json::json;

use crate::grant;

async fn start() -> (TestHost, Arc<Runtime>, std::path::PathBuf) {
    let mut host = TestHost::new();
    let root = host.dir.path().join("downloads");
    std::fs::create_dir_all(root.join("Show")).unwrap();
    std::fs::write(root.join("Show/ep1.mkv"), vec![7u8; 4096]).unwrap();
    host.config.roots.insert("downloads".into(), root.clone());
    host.drop_plugin(components::PROBE, "probe.wasm");
    let runtime = host.start().await.unwrap();
    (host, runtime, root)
}

fn kind(report: &CallReport) -> String {
    match &report.outcome {
        CallOutcome::Failed { failure } => failure.kind.clone(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn paths_cannot_leave_their_root() {
    let (_h, runtime, root) = start().await;
    std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
    for path in ["../outside", "/etc/passwd", "etc-link/passwd", "Show/../../x"] {
        let input = json!({"action": "stat", "root": "downloads", "path": path}).to_string();
        let report = runtime.call("test.probe", &input, grant(EffectClass::Read)).await.unwrap();
        assert_eq!(kind(&report), "denied", "{path}: {:?}", report.outcome);
    }
    let ok = json!({"action": "stat", "root": "downloads", "path": "Show/ep1.mkv"}).to_string();
    let report = runtime.call("test.probe", &ok, grant(EffectClass::Read)).await.unwrap();
    let CallOutcome::Succeeded { output } = &report.outcome else { panic!("{:?}", report.outcome) };
    assert_eq!(output["result"]["size"], 4096);
    let unknown = json!({"action": "stat", "root": "nowhere", "path": "x"}).to_string();
    let report = runtime.call("test.probe", &unknown, grant(EffectClass::Read)).await.unwrap();
    assert_eq!(kind(&report), "invalid-input");
}

#[tokio::test(flavor = "multi_thread")]
async fn copies_are_verified_and_never_overwrite() {
    let (_h, runtime, root) = start().await;
    let copy =
        json!({"action": "copy", "root": "downloads", "from": "Show/ep1.mkv", "to": "Show/ep1-copy.mkv"}).to_string();
    let report = runtime.call("test.probe", &copy, grant(EffectClass::Execute)).await.unwrap();
    assert_eq!(report.status(), Status::Succeeded, "{:?}", report.outcome);
    assert_eq!(std::fs::read(root.join("Show/ep1-copy.mkv")).unwrap().len(), 4096);

    std::fs::write(root.join("Show/ep1-copy.mkv"), b"keep me").unwrap();
    let again = runtime.call("test.probe", &copy, grant(EffectClass::Execute)).await.unwrap();
    assert_eq!(kind(&again), "conflict");
    assert_eq!(std::fs::read(root.join("Show/ep1-copy.mkv")).unwrap(), b"keep me");
}
