//! A hostile component against the file imports: concurrent moves, copies
//! and links racing for one target (on one device and across two), symlinks
//! that would point elsewhere once moved, FIFOs where a file was expected,
//! listings with entries they may not show, and hashing a file too large to
//! finish within the call's deadline. Nothing is ever overwritten or lost,
//! and no call ties up the host.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::Runtime;
use capstan::config::CapabilityConfig;
use capstan::runtime::{CallOutcome, CallReport, EffectClass};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use serde_json::{Value, json};

use crate::grant;

struct Env {
    _host: TestHost,
    _other_device: Option<tempfile::TempDir>,
    runtime: Arc<Runtime>,
    downloads: PathBuf,
    library: PathBuf,
    /// A root on another device than `downloads`, when the machine has one.
    elsewhere: Option<PathBuf>,
}

/// A root on tmpfs, which is another device than the temporary folder.
fn other_device(than: &Path) -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir_in("/dev/shm").ok()?;
    let differs = std::fs::metadata(dir.path()).ok()?.dev() != std::fs::metadata(than).ok()?.dev();
    if !differs {
        eprintln!("/dev/shm is on the same device as {}: the cross-device cases are not run", than.display());
    }
    differs.then_some(dir)
}

async fn env(deadline_ms: u64) -> Env {
    let mut host = TestHost::new();
    let downloads = host.dir.path().join("downloads");
    let library = host.dir.path().join("library");
    std::fs::create_dir_all(&downloads).unwrap();
    std::fs::create_dir_all(&library).unwrap();
    host.config.roots.insert("downloads".into(), downloads.clone());
    host.config.roots.insert("library".into(), library.clone());
    let other = other_device(host.dir.path());
    if let Some(dir) = &other {
        host.config.roots.insert("elsewhere".into(), dir.path().to_path_buf());
    }
    host.config
        .capabilities
        .insert("test.probe".into(), CapabilityConfig { deadline_ms: Some(deadline_ms), ..Default::default() });
    host.drop_plugin(components::PROBE, "probe.wasm");
    let runtime = host.start().await.unwrap();
    let elsewhere = other.as_ref().map(|d| d.path().to_path_buf());
    Env { _host: host, _other_device: other, runtime, downloads, library, elsewhere }
}

async fn call(runtime: &Runtime, input: Value, class: EffectClass) -> CallReport {
    runtime.call("test.probe", &input.to_string(), grant(class)).await.unwrap()
}

fn kind(report: &CallReport) -> String {
    match &report.outcome {
        CallOutcome::Succeeded { .. } => "ok".into(),
        CallOutcome::Failed { failure } => failure.kind.clone(),
        CallOutcome::Trapped { trap, .. } => format!("trap:{trap:?}"),
        CallOutcome::Pending { .. } => "pending".into(),
    }
}

fn place(op: &str, from_root: &str, from: &str, to_root: &str, to: &str) -> Value {
    json!({"action": "place", "op": op, "from_root": from_root, "from": from, "to_root": to_root, "to": to})
}

/// Eight sources of distinct content racing for one target with `op`;
/// exactly one wins, the target is one source whole, nothing is lost.
async fn race_for_one_target(env: &Env, op: &str, to_root: &str, to_dir: &Path) {
    let sources: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'a' + i; 3 << 20]).collect();
    for (i, bytes) in sources.iter().enumerate() {
        std::fs::write(env.downloads.join(format!("{op}-{to_root}-{i}.mkv")), bytes).unwrap();
    }
    let target = format!("{op}-target.mkv");
    let calls: Vec<_> = (0..sources.len())
        .map(|i| {
            let runtime = env.runtime.clone();
            let input = place(op, "downloads", &format!("{op}-{to_root}-{i}.mkv"), to_root, &target);
            tokio::spawn(async move { call(&runtime, input, EffectClass::Execute).await })
        })
        .collect();
    let mut kinds = Vec::new();
    for c in calls {
        kinds.push(kind(&c.await.unwrap()));
    }
    assert_eq!(kinds.iter().filter(|k| *k == "ok").count(), 1, "{op} to {to_root}: {kinds:?}");
    assert!(kinds.iter().all(|k| k == "ok" || k == "conflict"), "{op} to {to_root}: {kinds:?}");
    let placed = std::fs::read(to_dir.join(&target)).unwrap();
    let winner =
        sources.iter().position(|s| *s == placed).unwrap_or_else(|| panic!("{op}: the target is no source whole"));
    for (i, bytes) in sources.iter().enumerate() {
        let source = env.downloads.join(format!("{op}-{to_root}-{i}.mkv"));
        if op == "move" && i == winner {
            assert!(!source.exists(), "the moved source is gone");
        } else {
            assert_eq!(&std::fs::read(&source).unwrap(), bytes, "{op}: source {i} was changed or lost");
        }
    }
    let leftovers: Vec<_> = std::fs::read_dir(to_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".part"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind: {leftovers:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_moves_copies_and_links_never_overwrite_or_lose_data() {
    let env = env(30_000).await;
    for op in ["move", "copy", "hardlink"] {
        race_for_one_target(&env, op, "library", &env.library).await;
    }
    if let Some(elsewhere) = env.elsewhere.clone() {
        for op in ["move", "copy"] {
            race_for_one_target(&env, op, "elsewhere", &elsewhere).await;
        }
        // A link cannot cross devices: the caller is told to copy.
        std::fs::write(env.downloads.join("x.mkv"), b"x").unwrap();
        let report =
            call(&env.runtime, place("hardlink", "downloads", "x.mkv", "elsewhere", "x.mkv"), EffectClass::Execute)
                .await;
        assert_eq!(kind(&report), "unavailable", "{:?}", report.outcome);
    }
    // An existing target is never replaced, whatever the operation.
    std::fs::write(env.downloads.join("new.mkv"), b"new").unwrap();
    std::fs::write(env.library.join("old.mkv"), b"old").unwrap();
    for op in ["move", "copy", "hardlink"] {
        let report =
            call(&env.runtime, place(op, "downloads", "new.mkv", "library", "old.mkv"), EffectClass::Execute).await;
        assert_eq!(kind(&report), "conflict", "{op}");
        assert_eq!(std::fs::read(env.library.join("old.mkv")).unwrap(), b"old");
        assert_eq!(std::fs::read(env.downloads.join("new.mkv")).unwrap(), b"new");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn symlinks_are_never_moved_or_linked_and_listings_skip_what_they_may_not_show() {
    let env = env(30_000).await;
    std::os::unix::fs::symlink("/etc/passwd", env.downloads.join("passwd.mkv")).unwrap();
    std::fs::write(env.downloads.join("real.mkv"), b"real").unwrap();
    std::os::unix::fs::symlink("real.mkv", env.downloads.join("inside.mkv")).unwrap();
    for link in ["passwd.mkv", "inside.mkv"] {
        for op in ["move", "hardlink"] {
            let report = call(&env.runtime, place(op, "downloads", link, "library", link), EffectClass::Execute).await;
            assert_eq!(kind(&report), "denied", "{op} {link}: {:?}", report.outcome);
            assert!(std::fs::symlink_metadata(env.downloads.join(link)).is_ok(), "the link stays");
            assert!(std::fs::symlink_metadata(env.library.join(link)).is_err(), "nothing was made");
        }
    }
    // A directory holding a link that would point elsewhere once moved.
    std::fs::create_dir_all(env.downloads.join("Show/extras")).unwrap();
    std::fs::write(env.downloads.join("Show/ep1.mkv"), b"ep1").unwrap();
    std::os::unix::fs::symlink("../../real.mkv", env.downloads.join("Show/extras/up.mkv")).unwrap();
    let report = call(&env.runtime, place("move", "downloads", "Show", "library", "Show"), EffectClass::Execute).await;
    assert_eq!(kind(&report), "denied", "{:?}", report.outcome);
    assert!(env.downloads.join("Show/ep1.mkv").exists());
    std::fs::remove_file(env.downloads.join("Show/extras/up.mkv")).unwrap();
    std::os::unix::fs::symlink("../ep1.mkv", env.downloads.join("Show/extras/same.mkv")).unwrap();
    let report = call(&env.runtime, place("move", "downloads", "Show", "library", "Show"), EffectClass::Execute).await;
    assert_eq!(kind(&report), "ok", "a link that stays inside the directory moves with it: {:?}", report.outcome);
    assert_eq!(std::fs::read(env.library.join("Show/extras/same.mkv")).unwrap(), b"ep1");

    // The host's own files in progress are not the component's to see or touch.
    std::fs::write(env.downloads.join(".capstan-0123.part"), b"host").unwrap();
    for input in [
        json!({"action": "stat", "root": "downloads", "path": ".capstan-0123.part"}),
        json!({"action": "sha256", "root": "downloads", "path": ".capstan-0123.part"}),
    ] {
        assert_eq!(kind(&call(&env.runtime, input, EffectClass::Read).await), "denied");
    }
    let report =
        call(&env.runtime, place("move", "downloads", ".capstan-0123.part", "library", "x"), EffectClass::Execute)
            .await;
    assert_eq!(kind(&report), "denied");
    let report =
        call(&env.runtime, place("copy", "downloads", "real.mkv", "library", ".capstan-9.part"), EffectClass::Execute)
            .await;
    assert_eq!(kind(&report), "denied");

    // The listing shows what it may and leaves out, with a denial, what it may not.
    let fifo = env.downloads.join("pipe.mkv");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let report =
        call(&env.runtime, json!({"action": "list", "root": "downloads", "path": "", "limit": 100}), EffectClass::Read)
            .await;
    let CallOutcome::Succeeded { output } = &report.outcome else { panic!("{:?}", report.outcome) };
    let names: Vec<&str> = output["result"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(names, ["inside.mkv", "real.mkv"], "{output}");
    assert!(report.denials.iter().any(|d| d.reason.contains("passwd.mkv")), "{:?}", report.denials);
}

#[tokio::test(flavor = "multi_thread")]
async fn fifos_and_huge_files_never_tie_up_the_host() {
    let env = env(1_500).await;
    let fifo = env.downloads.join("stuck.mkv");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::write(env.downloads.join("small.mkv"), b"small").unwrap();
    for action in ["sha256", "stat"] {
        let report =
            call(&env.runtime, json!({"action": action, "root": "downloads", "path": "stuck.mkv"}), EffectClass::Read)
                .await;
        assert_eq!(kind(&report), "invalid-input", "{action}: {:?}", report.outcome);
    }
    // A hundred at once (the pool has sixteen workers): each answers, none
    // is left holding a worker.
    let started = Instant::now();
    let calls: Vec<_> = (0..100)
        .map(|_| {
            let runtime = env.runtime.clone();
            tokio::spawn(async move {
                call(&runtime, json!({"action": "sha256", "root": "downloads", "path": "stuck.mkv"}), EffectClass::Read)
                    .await
            })
        })
        .collect();
    for c in calls {
        // On a loaded machine a call may reach its deadline first; it still ends.
        let report = c.await.unwrap();
        assert!(
            ["invalid-input", "unavailable", "trap:Deadline"].contains(&kind(&report).as_str()),
            "{:?}",
            report.outcome
        );
    }
    eprintln!("100 hashes of a FIFO answered in {:?}", started.elapsed());
    let copy =
        call(&env.runtime, place("copy", "downloads", "stuck.mkv", "library", "stuck.mkv"), EffectClass::Execute).await;
    assert_eq!(kind(&copy), "invalid-input", "{:?}", copy.outcome);

    // A file far too large to hash within the deadline: every worker is
    // busy with it, each stops at its call's deadline, and the host answers
    // the next call at once.
    let huge = std::fs::File::create(env.downloads.join("huge.mkv")).unwrap();
    huge.set_len(200 << 30).unwrap();
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let runtime = env.runtime.clone();
            tokio::spawn(async move {
                call(&runtime, json!({"action": "sha256", "root": "downloads", "path": "huge.mkv"}), EffectClass::Read)
                    .await
            })
        })
        .collect();
    for c in calls {
        let report = c.await.unwrap();
        assert!(["unavailable", "trap:Deadline"].contains(&kind(&report).as_str()), "{:?}", report.outcome);
    }
    let mut answered = false;
    for _ in 0..20 {
        let report = call(
            &env.runtime,
            json!({"action": "sha256", "root": "downloads", "path": "small.mkv"}),
            EffectClass::Read,
        )
        .await;
        if kind(&report) == "ok" {
            answered = true;
            break;
        }
        // Workers finish the chunk they were reading when the deadline came.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(answered, "the hashing workers did not stop at their deadline");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_root_overlapping_the_hosts_folders_is_refused_at_start() {
    let mut host = TestHost::new();
    host.config.roots.insert("everything".into(), host.dir.path().to_path_buf());
    let err = host.start().await.err().expect("the start is refused").to_string();
    assert!(err.contains("root everything") && err.contains("data_dir"), "{err}");
}
