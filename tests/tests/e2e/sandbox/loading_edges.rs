//! A hostile plugin author against the loader: a FIFO and a 2 GiB file in
//! the directory, a descriptor over its size caps, a pre-initialisation
//! that waits on the outside and spins. The scan finishes, refuses each with
//! a reason, keeps serving meanwhile, and an idle host does no work.

use std::time::{Duration, Instant};

use capstan::config::{Auth, ServiceConfig};
use capstan::runtime::{EffectClass, Status, watcher};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use capstan_tests::mock_service::MockService;
use serde_json::json;

use crate::grant;

fn refusal(runtime: &capstan::Runtime, file: &str) -> Option<String> {
    runtime.snapshot().refused.iter().find(|r| r.file.ends_with(file)).map(|r| r.reason.clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn fifos_huge_files_and_huge_descriptors_are_refused_without_reading_them() {
    let host = TestHost::new();
    let plugins = host.plugins();
    std::fs::create_dir_all(&plugins).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(plugins.join("pipe.wasm")).status().unwrap().success());
    std::fs::File::create(plugins.join("big.wasm")).unwrap().set_len(2 << 30).unwrap();
    host.drop_plugin(components::HUGE_DESCRIPTOR, "huge.wasm");
    host.drop_plugin(components::WORD_COUNT, "word-count.wasm");
    let started = Instant::now();
    let runtime = host.start().await.unwrap();
    eprintln!("the first scan took {:?}", started.elapsed());
    let pipe = refusal(&runtime, "pipe.wasm").expect("the FIFO is refused");
    assert!(pipe.contains("not a regular file"), "{pipe}");
    let big = refusal(&runtime, "big.wasm").expect("the 2 GiB file is refused");
    assert!(big.contains("over the cap of 67108864 bytes"), "{big}");
    let huge = refusal(&runtime, "huge.wasm").expect("the huge descriptor is refused");
    assert!(huge.contains("input schema") && huge.contains("over the cap"), "{huge}");
    assert!(runtime.snapshot().get("example.word-count").is_some(), "the good plugin still loads");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pre_initialisation_that_waits_and_spins_is_refused_while_the_host_serves() {
    let mock = MockService::start().await;
    let mut host = TestHost::new();
    let downloads = host.dir.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(downloads.join("fifo")).status().unwrap().success());
    host.config.roots.insert("downloads".into(), downloads);
    let slow = ServiceConfig {
        base_url: mock.base_url(),
        auth: Auth::None,
        operations: Vec::new(),
        timeout_ms: 60_000,
        response_cap_bytes: 1 << 20,
    };
    host.config.services.insert("slow".into(), slow);
    let runtime = host.start().await.unwrap();
    let _watch = watcher::watch(runtime.clone()).unwrap();

    host.drop_plugin(components::PREINIT_HANG, "hang.wasm");
    // While it loads, calls are answered.
    let started = Instant::now();
    let mut served_during_load = 0;
    while refusal(&runtime, "hang.wasm").is_none() {
        assert!(started.elapsed() < Duration::from_secs(30), "the load did not end");
        let report =
            runtime.call("release.inspect", r#"{"name":"Heat.1995.mkv"}"#, grant(EffectClass::Read)).await.unwrap();
        assert_eq!(report.status(), Status::Succeeded);
        served_during_load += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reason = refusal(&runtime, "hang.wasm").unwrap();
    assert!(reason.contains("capstan-preinit"), "{reason}");
    assert!(served_during_load > 0);
    assert_eq!(
        mock.counters.requests.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "pre-initialisation reached nothing"
    );

    // The watcher still works afterwards.
    host.drop_plugin(components::WORD_COUNT, "word-count.wasm");
    let started = Instant::now();
    while runtime.snapshot().get("example.word-count").is_none() {
        assert!(started.elapsed() < Duration::from_secs(10), "the watcher is wedged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_host_does_no_work() {
    let host = TestHost::new();
    let runtime = host.start().await.unwrap();
    let _watch = watcher::watch(runtime.clone()).unwrap();
    std::fs::write(host.plugins().join("junk.wasm"), b"not a component").unwrap();
    host.drop_plugin(components::WORD_COUNT, "word-count.wasm");
    let started = Instant::now();
    while runtime.snapshot().get("example.word-count").is_none() || refusal(&runtime, "junk.wasm").is_none() {
        assert!(started.elapsed() < Duration::from_secs(10), "the changes were not picked up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Let the burst settle (the scan's own state file write is one more
    // event): no rescan for a second.
    let started = Instant::now();
    let mut settled = runtime.rescan_count();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if runtime.rescan_count() == settled {
            break;
        }
        settled = runtime.rescan_count();
        assert!(started.elapsed() < Duration::from_secs(30), "the host kept rescanning after the changes");
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(runtime.rescan_count(), settled, "the idle host kept rescanning");
    let report = runtime
        .call("example.word-count", &json!({"text": "still here"}).to_string(), grant(EffectClass::Read))
        .await
        .unwrap();
    assert_eq!(report.status(), Status::Succeeded);
}

#[test]
fn serve_stops_on_sigterm_while_a_plugin_is_loading() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("capstan.toml");
    std::fs::write(&config, format!("cache_dir = {:?}\n", capstan_tests::host::shared_cache().display().to_string()))
        .unwrap();
    let listen =
        format!("127.0.0.1:{}", std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
    let mut child = Command::new(capstan_tests::binary::capstan_bin())
        .args([
            "--data-dir",
            data.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "serve",
            "--listen",
            &listen,
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(&listen).is_err() {
        assert!(started.elapsed() < Duration::from_secs(120), "serve did not come up");
        assert!(child.try_wait().unwrap().is_none(), "serve exited");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::copy(components::PREINIT_HANG, data.join("capabilities/hang.wasm")).unwrap();
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let asked = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            eprintln!("serve stopped {:?} after SIGTERM ({status})", asked.elapsed());
            break;
        }
        if asked.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("serve did not stop within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
