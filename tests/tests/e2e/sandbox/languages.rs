//! Components from other languages' toolchains: the Python and JavaScript
//! examples load from the watched folder and answer over HTTP, and cannot
//! carry more than their label; one dropped in compiles in the background
//! while the others serve, and a server started with one not compiled yet
//! says in its log what it is compiling; the `wasi:sockets` imports a language
//! runtime's C library brings are accepted and linked with every use
//! switched off, so a component reaches nothing through them.

use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::Runtime;
use capstan::runtime::{CallOutcome, EffectClass, watcher};
use capstan::store::Db;
use capstan_tests::api::{Api, serve};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use capstan_tests::languages::{self, Example};
use serde_json::json;

use crate::grant;

#[tokio::test(flavor = "multi_thread")]
async fn a_component_importing_sockets_loads_and_every_socket_use_is_refused() {
    // Real listeners on loopback: whatever the component tries, nothing
    // may arrive at them.
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();

    let host = TestHost::new();
    host.drop_plugin(components::NET_PROBE, "net-probe.wasm");
    let runtime = host.start().await.unwrap();
    let loaded = runtime.snapshot().get("test.net-probe").expect("a component importing wasi:sockets loads");
    assert!(loaded.imports.imports.iter().any(|i| i.starts_with("wasi:sockets/tcp")), "{:?}", loaded.imports);
    assert_eq!(loaded.imports.class, EffectClass::Read, "sockets add no effect class");

    for addr in [tcp.local_addr().unwrap().to_string(), udp.local_addr().unwrap().to_string()] {
        let input = json!({ "addr": addr, "host": "localhost" }).to_string();
        let report = runtime.call("test.net-probe", &input, grant(EffectClass::Execute)).await.unwrap();
        let CallOutcome::Succeeded { output } = &report.outcome else { panic!("{:?}", report.outcome) };
        // wasi-libc turns the host's `access-denied` into EACCES, which std
        // reports as PermissionDenied; a name lookup is answered
        // `permanent-resolver-failure` before any query (EAI_FAIL).
        for attempt in ["tcp_connect", "udp_bind", "udp_send"] {
            let ended = output[attempt].as_str().unwrap();
            assert!(ended.starts_with("PermissionDenied"), "{attempt} to {addr}: {ended}");
        }
        let lookup = output["name_lookup"].as_str().unwrap();
        assert!(lookup.contains("failed to lookup address information"), "a name lookup answered: {lookup}");
    }
    assert!(tcp.accept().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock), "a connection arrived");
    let mut buf = [0u8; 64];
    assert!(udp.recv_from(&mut buf).is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock), "a datagram arrived");
}

/// A host serving the API, watching its plugin folder, with the examples'
/// `min_length` setting at `min_length`; an execute key for it.
async fn serving(min_length: &str) -> (TestHost, Arc<Runtime>, watcher::DirWatcher, Api) {
    let mut host = TestHost::new();
    for example in [Example::Python, Example::JavaScript] {
        let settings = &mut host.config.capabilities.entry(example.id().into()).or_default().settings;
        settings.insert("min_length".into(), min_length.into());
    }
    let db = Db::open(&Db::default_url(host.dir.path())).await.unwrap();
    let key = capstan::http::keys::create(&db, "author", &[EffectClass::Execute], "test").await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
    let runtime = app.caps().runtime().clone();
    let watch = watcher::watch(runtime.clone()).unwrap();
    let api = Api::new(&serve(app).await).with_key(&key);
    (host, runtime, watch, api)
}

/// Waits (up to four minutes: a Python component compiles for seconds, far
/// longer on a busy machine) until the watcher has loaded `id`.
async fn loaded(runtime: &Runtime, id: &str) {
    let started = Instant::now();
    while runtime.snapshot().get(id).is_none() {
        let refused: Vec<String> = runtime.snapshot().refused.iter().map(|r| r.reason.clone()).collect();
        assert!(refused.is_empty(), "{id} was refused: {refused:?}");
        assert!(started.elapsed() < Duration::from_secs(240), "{id} was not loaded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_and_javascript_capabilities_load_from_the_folder_and_answer_over_http() {
    let builds: Vec<(Example, PathBuf)> = [Example::Python, Example::JavaScript]
        .into_iter()
        .map(|example| (example, languages::build(example, "read-capability")))
        .collect();
    let (host, runtime, _watch, api) = serving("3").await;
    for (example, file) in &builds {
        host.drop_plugin(file.to_str().unwrap(), &format!("{}.wasm", example.id()));
        loaded(&runtime, example.id()).await;
        let component = runtime.snapshot().get(example.id()).unwrap();
        assert_eq!(component.descriptor.label, EffectClass::Read);
        assert_eq!(component.imports.class, EffectClass::Read, "{example:?} imports only read interfaces");

        let path = format!("/capabilities/{}/invoke", example.id());
        let (status, body) = api.post(&path, json!({"input": {"text": "a bb ccc dddd 字数字"}})).await;
        assert_eq!(status, 200, "{example:?}: {body}");
        assert_eq!(body["status"], "succeeded", "{example:?}: {body}");
        // Words of three characters or more (characters, not bytes), and
        // who called, from the call context.
        assert_eq!(body["output"], json!({"words": 3, "called_by": "api-key"}), "{example:?}");
        // The host checks the input schema the component declared.
        let (_, body) = api.post(&path, json!({"input": {"txt": "a"}})).await;
        assert_eq!((&body["status"], &body["error"]["kind"]), (&json!("failed"), &json!("invalid-input")), "{body}");
    }
    drop(host);

    // The same components under a setting they cannot read: the failure
    // each raises (a Python exception, a JavaScript throw) is `invalid-input`.
    let (host, runtime, _watch, api) = serving("three").await;
    for (example, file) in &builds {
        host.drop_plugin(file.to_str().unwrap(), &format!("{}.wasm", example.id()));
        loaded(&runtime, example.id()).await;
        let path = format!("/capabilities/{}/invoke", example.id());
        let (status, body) = api.post(&path, json!({"input": {"text": "a bb"}})).await;
        assert_eq!(body["status"], "failed", "{example:?}: {status} {body}");
        assert_eq!(body["error"]["kind"], "invalid-input", "{example:?}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("min_length=three"), "{example:?}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_or_javascript_component_cannot_carry_more_than_its_label() {
    // The same sources built against the execute world keep every host
    // import of it, writes included, while describing themselves `read`.
    let host = TestHost::new();
    let runtime = Runtime::new(host.config.clone(), &capstan::BUILT_INS).unwrap();
    for example in [Example::Python, Example::JavaScript] {
        let bytes = std::fs::read(languages::build(example, "execute-capability")).unwrap();
        let reason = match runtime.check(&bytes, "candidate.wasm".into()).await {
            Ok(loaded) => panic!("{} was accepted", loaded.descriptor.id),
            Err(reason) => reason.to_string(),
        };
        assert!(reason.contains(example.id()) && reason.contains("exceed its label"), "{example:?}: {reason}");
    }
}

/// A watched host with a compiled-code cache of its own, so a component
/// dropped in is really compiled (a Python one takes seconds).
fn with_an_empty_cache() -> TestHost {
    let mut host = TestHost::new();
    host.config.cache_dir = Some(host.dir.path().join("cache"));
    host
}

async fn host_with_an_empty_cache() -> (TestHost, Arc<Runtime>, watcher::DirWatcher) {
    let host = with_an_empty_cache();
    let runtime = host.start().await.unwrap();
    let watch = watcher::watch(runtime.clone()).unwrap();
    (host, runtime, watch)
}

/// Drops the Python example into `host`'s folder and waits until the
/// runtime lists it as compiling (never loaded before that).
async fn drop_python_and_see_it_compiling(host: &TestHost, runtime: &Runtime, python: &std::path::Path) -> PathBuf {
    let file = host.drop_plugin(python.to_str().unwrap(), "word-count-py.wasm");
    let started = Instant::now();
    while !runtime.snapshot().compiling.iter().any(|c| c.file == file) {
        assert!(runtime.snapshot().get(Example::Python.id()).is_none(), "loaded before it was seen compiling");
        assert!(started.elapsed() < Duration::from_secs(10), "the watcher did not start compiling it");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    file
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_component_compiles_in_the_background_while_the_others_keep_serving() {
    let python = languages::build(Example::Python, "read-capability");
    let (host, runtime, _watch) = host_with_an_empty_cache().await;
    // It is listed as compiling, by file and size, and not yet callable.
    let file = drop_python_and_see_it_compiling(&host, &runtime, &python).await;
    let started = Instant::now();
    let compiling = runtime.snapshot().compiling.iter().find(|c| c.file == file).cloned().unwrap();
    assert_eq!(compiling.bytes, std::fs::metadata(&python).unwrap().len());

    // Meanwhile the capabilities already loaded answer.
    let mut served_while_compiling = 0;
    while runtime.snapshot().get(Example::Python.id()).is_none() {
        assert!(started.elapsed() < Duration::from_secs(240), "it never finished compiling");
        let input = json!({"name": "Heat.1995.1080p.BluRay.x264-GRP"}).to_string();
        let report = runtime.call("release.inspect", &input, grant(EffectClass::Read)).await.unwrap();
        assert!(matches!(report.outcome, CallOutcome::Succeeded { .. }), "{:?}", report.outcome);
        if !runtime.snapshot().compiling.is_empty() {
            served_while_compiling += 1;
        }
        // Calls as a server gets them, not a loop that keeps a core busy:
        // the compile gets the rest of the machine, loaded or not.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served_while_compiling > 0, "no call was served while it compiled");
    assert!(runtime.snapshot().compiling.is_empty(), "still listed as compiling once loaded");
    let report = runtime
        .call(Example::Python.id(), &json!({"text": "a bb"}).to_string(), grant(EffectClass::Read))
        .await
        .unwrap();
    assert!(matches!(report.outcome, CallOutcome::Succeeded { .. }), "{:?}", report.outcome);
}

#[test]
fn capabilities_list_shows_a_component_not_compiled_yet_as_compiling() {
    let python = languages::build(Example::Python, "read-capability");
    let data = tempfile::tempdir().unwrap();
    let plugins = data.path().join("capabilities");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(&python, plugins.join("word-count-py.wasm")).unwrap();
    let data = data.path().to_str().unwrap();
    let out = capstan_tests::binary::run(&["--data-dir", data, "capabilities", "list", "--json"]);
    let text = capstan_tests::binary::stdout(&out);
    assert!(out.status.success(), "{text}{}", capstan_tests::binary::stderr(&out));
    let listed: serde_json::Value = serde_json::from_str(&text).unwrap();
    let compiling = listed["compiling"].as_array().unwrap();
    assert_eq!(compiling.len(), 1, "{listed}");
    assert!(compiling[0]["file"].as_str().unwrap().ends_with("word-count-py.wasm"), "{listed}");
    let ids: Vec<&str> = listed["capabilities"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"release.inspect") && !ids.contains(&Example::Python.id()), "{ids:?}");
    // Listing only looks: what a server keeps about this folder (known,
    // held and refused components, retained copies) is left to the server.
    let dir = std::path::Path::new(data);
    assert!(!dir.join("capabilities-state.json").exists(), "list recorded the folder's state");
    assert!(!dir.join("retained").exists(), "list retained copies");

    // `capabilities check` against the same data directory compiles it into
    // the cache, as docs/writing-a-capability.md says: now it is listed
    // loaded, from the cache.
    let file = plugins.join("word-count-py.wasm");
    let checked = capstan_tests::binary::run(&["--data-dir", data, "capabilities", "check", file.to_str().unwrap()]);
    assert!(checked.status.success(), "{}", capstan_tests::binary::stderr(&checked));
    let out = capstan_tests::binary::run(&["--data-dir", data, "capabilities", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&capstan_tests::binary::stdout(&out)).unwrap();
    assert_eq!(listed["compiling"], json!([]), "{listed}");
    assert!(listed["capabilities"].as_array().unwrap().iter().any(|c| c["id"] == Example::Python.id()), "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_shows_a_component_compiling_and_then_loaded() {
    let python = languages::build(Example::Python, "read-capability");
    let host = with_an_empty_cache();
    let db = Db::open(&Db::default_url(host.dir.path())).await.unwrap();
    capstan::http::session::set_password(&db, "ada", "correct horse battery").await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
    let runtime = app.caps().runtime().clone();
    let _watch = watcher::watch(runtime.clone()).unwrap();
    let root = serve(app).await.trim_end_matches("/api/v1").to_string();
    // Signed in before the file is dropped: starting a browser on a busy
    // machine can take longer than the compile.
    let browser = capstan_tests::browser::Browser::start().await;
    browser.sign_in(&root, "ada", "correct horse battery").await;
    drop_python_and_see_it_compiling(&host, &runtime, &python).await;
    // Opening the tab reads the list at once; a Python component compiles
    // for seconds: it is shown compiling, with its file.
    browser.click("nav button[data-tab=capabilities]").await;
    let shown = browser.wait_text("#compiling", "showed it compiling", |t| t.contains("word-count-py.wasm")).await;
    assert!(shown.contains("compiling since") && shown.contains("MB"), "{shown}");
    // Then listed as loaded, without a reload of the page, once the runtime
    // has it (a compile on a busy machine may take minutes).
    loaded(&runtime, Example::Python.id()).await;
    browser.wait_text("#capabilities", "listed it loaded", |t| t.contains(Example::Python.id())).await;
    browser.wait_text("#compiling", "stopped listing it as compiling", str::is_empty).await;
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_started_with_a_python_component_not_compiled_yet_says_so_then_serves_it() {
    let python = languages::build(Example::Python, "read-capability");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("capabilities")).unwrap();
    std::fs::copy(&python, data.join("capabilities/word-count-py.wasm")).unwrap();
    let db = Db::open(&Db::default_url(&data)).await.unwrap();
    let key = capstan::http::keys::create(&db, "reader", &[EffectClass::Read], "test").await.unwrap();
    // The start waits for the compile; the log says which file and how long.
    let server = capstan_tests::binary::Serving::start(dir.path(), &data, &[]).await;
    let log = server.log();
    let line =
        |text: &str| log.lines().find(|l| l.contains(text) && l.contains("word-count-py.wasm")).map(str::to_string);
    let compiling = line("compiling a component").unwrap_or_else(|| panic!("no compiling line:\n{log}"));
    let compiled = line("compiled a component").unwrap_or_else(|| panic!("no compiled line:\n{log}"));
    assert!(compiling.contains(&format!("bytes={}", std::fs::metadata(&python).unwrap().len())), "{compiling}");
    assert!(compiled.contains("elapsed_ms="), "{compiled}");
    assert!(log.find(&compiling) < log.find(&compiled), "{log}");
    // And it answers as soon as the server does.
    let api = Api::new(&server.base()).with_key(&key);
    let (status, answer) =
        api.post(&format!("/capabilities/{}/invoke", Example::Python.id()), json!({"input": {"text": "a bb"}})).await;
    assert_eq!((status, answer["status"].as_str()), (200, Some("succeeded")), "{answer}");
    assert_eq!(answer["output"]["words"], 2, "{answer}");
}
