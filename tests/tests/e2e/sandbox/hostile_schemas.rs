//! A component's schema cannot wedge the host: one built to explode (a
//! doubling chain of references) is refused when it loads, with the cap it
//! exceeds and what was measured, while the health check keeps answering;
//! and the built-ins' schemas stay well inside the caps.

use std::time::{Duration, Instant};

use capstan::runtime::EffectClass;
use capstan::runtime::schema_caps::{self, MAX_EXPANDED, MAX_EXPANDED_DEPTH, MAX_KEYWORDS, MAX_SCHEMA_BYTES};
use capstan::store::Db;
use capstan_tests::api::Api;
use capstan_tests::binary::{Serving, run, stderr, stdout};
use capstan_tests::components;
use capstan_tests::host::{TestHost, shared_cache};
use serde_json::Value;

/// The refusal of the file named `file` in a listing's `refused`.
fn refusal_in(listed: &Value, file: &str) -> Option<String> {
    listed["refused"]
        .as_array()?
        .iter()
        .find(|r| r["file"].as_str().is_some_and(|f| f.ends_with(file)))
        .and_then(|r| r["reason"].as_str().map(str::to_string))
}

fn says_the_cap(reason: &str) {
    assert!(reason.contains("test.hostile-schema"), "names the component: {reason}");
    assert!(reason.contains("the input schema expands to 4398046511102 nodes"), "says what it measured: {reason}");
    assert!(reason.contains(&format!("over the cap of {MAX_EXPANDED}")), "names the cap: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schema_built_to_explode_is_refused_at_load_while_health_answers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("capabilities")).unwrap();
    let config = dir.path().join("capstan.toml");
    std::fs::write(&config, format!("cache_dir = {:?}\n", shared_cache().display().to_string())).unwrap();
    let db = Db::open(&Db::default_url(&data)).await.unwrap();
    let key = capstan::http::keys::create(&db, "reader", &[EffectClass::Read], "test").await.unwrap();
    let server = Serving::start(dir.path(), &data, &[("CAPSTAN_CONFIG", config.to_str().unwrap())]).await;
    let api = Api::new(&server.base()).with_key(&key);
    let health = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();

    // Dropped into the watched folder of a running server: every health
    // check asked while it loads is answered, and then it is listed as
    // refused, with why.
    std::fs::copy(components::HOSTILE_SCHEMA, data.join("capabilities/hostile.wasm")).unwrap();
    let started = Instant::now();
    let reason = loop {
        let answer = health.get(format!("{}/health", server.base())).send().await;
        let answer = answer.unwrap_or_else(|e| panic!("health did not answer: {e}\n{}", server.log()));
        assert!(answer.status().is_success(), "health: {}", answer.status());
        let (status, listed) = api.get("/capabilities").await;
        assert_eq!(status, 200, "{listed}");
        if let Some(reason) = refusal_in(&listed, "hostile.wasm") {
            let ids: Vec<&str> =
                listed["capabilities"].as_array().unwrap().iter().filter_map(|c| c["id"].as_str()).collect();
            assert!(!ids.contains(&"test.hostile-schema"), "{ids:?}");
            break reason;
        }
        assert!(started.elapsed() < Duration::from_secs(240), "never refused:\n{}", server.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    says_the_cap(&reason);

    // The command line lists it refused in the same words.
    let (data, config) = (data.to_str().unwrap(), config.to_str().unwrap());
    let out = run(&["--data-dir", data, "--config", config, "capabilities", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    says_the_cap(&refusal_in(&listed, "hostile.wasm").unwrap_or_else(|| panic!("not refused: {listed}")));
    let out = run(&["--data-dir", data, "--config", config, "capabilities", "check", components::HOSTILE_SCHEMA]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    says_the_cap(&stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_built_in_schemas_are_well_inside_the_caps() {
    let host = TestHost::new();
    let runtime = host.start().await.unwrap();
    let snapshot = runtime.snapshot();
    assert!(snapshot.active.len() >= capstan::runtime::builtins::CORE_CAPABILITIES.len());
    for (id, loaded) in &snapshot.active {
        let text = loaded.descriptor.input_schema.to_string();
        let measured = loaded.input_validator.measured();
        eprintln!(
            "{id}: {} bytes, {} keywords, {} nodes expanded, {} deep, weight {}",
            text.len(),
            measured.keywords,
            measured.expanded,
            measured.depth,
            measured.weight
        );
        // Vetted again from the text, as the loader saw it.
        let again = schema_caps::parse(&text).and_then(|schema| schema_caps::vet(&schema));
        assert_eq!(again, Ok(measured), "{id}");
        // Half of each cap at most, so a built-in that grows toward one is
        // noticed here before a start refuses it.
        assert!(text.len() <= MAX_SCHEMA_BYTES / 2, "{id}: {} bytes", text.len());
        assert!(measured.keywords <= MAX_KEYWORDS / 2, "{id}: {measured:?}");
        assert!(measured.expanded <= MAX_EXPANDED / 2, "{id}: {measured:?}");
        assert!(measured.depth <= MAX_EXPANDED_DEPTH / 2, "{id}: {measured:?}");
    }
}
