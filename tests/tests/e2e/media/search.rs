//! `release.search` in the sandbox against two mock Torznab indexers on
//! loopback: caps decide the request each one gets, overlapping results are
//! merged by info-hash, keys are injected by the host and never returned,
//! and a failing indexer is reported without sinking the search.

use std::sync::Arc;

use capstan::Runtime;
use capstan::config::{Auth, SecretRef, ServiceConfig};
use capstan::pipeline::Origin;
use capstan::runtime::{CallOutcome, CallReport, EffectClass, Status};
use capstan::store::Db;
use capstan_tests::host::TestHost;
use capstan_tests::mock_torznab::{Failure, Indexer, Item, MockTorznab};
use serde_json::{Value, json};

use crate::grant;

const ALPHA_KEY: &str = "alpha-key-77d1";
const BETA_KEY: &str = "beta-key-0c52";

const UHD_HASH: &str = "dd8255ecdc7ca55fb0bbf81323d87062db1f6d1c";
/// `UHD_HASH` in base32, as beta's magnet carries it.
const UHD_MAGNET: &str =
    "magnet:?xt=urn:btih:3WBFL3G4PSSV7MF37AJSHWDQMLNR63I4&dn=Dune.Part.Two&tr=udp%3A%2F%2Ftracker.example%3A80";

const UHD: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX";
const DATE: &str = "Sat, 02 Mar 2024 10:00:00 +0000";

fn dune(title: &'static str, seeders: u32, categories: &'static [u32]) -> Item {
    Item {
        title,
        size: 20 << 30,
        seeders,
        peers: seeders + 10,
        categories,
        imdb_id: Some("tt15239678"),
        tmdb_id: Some(693134),
        pub_date: DATE,
        ..Item::default()
    }
}

fn shogun(title: &'static str, seeders: u32, infohash: &'static str) -> Item {
    Item {
        title,
        size: 3 << 30,
        seeders,
        peers: seeders,
        infohash: Some(infohash),
        categories: &[5000, 5040],
        imdb_id: Some("tt2788316"),
        tvdb_id: Some(392573),
        season: Some(1),
        episode: Some(2),
        pub_date: DATE,
        ..Item::default()
    }
}

/// An indexer with typed movie and tv search by id.
fn alpha() -> Indexer {
    Indexer {
        title: "Alpha",
        movie_params: Some("q,imdbid,tmdbid"),
        tv_params: Some("q,season,ep,imdbid,tvdbid"),
        items: vec![
            Item { infohash: Some(UHD_HASH), ..dune(UHD, 250, &[2000, 2045]) },
            Item {
                infohash: Some("1111111111111111111111111111111111111111"),
                ..dune("Dune.Part.Two.2024.1080p.BluRay.x264-GRP", 40, &[2000, 2040])
            },
            shogun("Shogun.2024.S01E02.1080p.WEB.h264-ETHEL", 80, "3333333333333333333333333333333333333333"),
        ],
    }
}

/// An indexer that only knows text search; it lists the UHD release again
/// (by magnet only, fewer seeders) and one of its own.
fn beta() -> Indexer {
    Indexer {
        title: "Beta",
        movie_params: None,
        tv_params: None,
        items: vec![
            Item { magnet: Some(UHD_MAGNET), ..dune(UHD, 90, &[2000, 2045]) },
            Item {
                infohash: Some("2222222222222222222222222222222222222222"),
                ..dune("Dune.Part.Two.2024.720p.WEB.H264-BETA", 12, &[2000, 2040])
            },
            shogun("Shogun.2024.S01E02.720p.WEB.h264-BETA", 20, "4444444444444444444444444444444444444444"),
        ],
    }
}

fn indexer_service(mock: &MockTorznab, key: &str) -> ServiceConfig {
    ServiceConfig {
        base_url: mock.base_url(),
        auth: Auth::Query { name: "apikey".into(), value: SecretRef(key.into()) },
        operations: Vec::new(),
        timeout_ms: 5_000,
        response_cap_bytes: 1 << 20,
    }
}

fn host_with(indexers: &[(&str, ServiceConfig)]) -> TestHost {
    let mut host = TestHost::new();
    for (name, service) in indexers {
        host.config.services.insert(name.to_string(), service.clone());
    }
    host
}

async fn start(indexers: &[(&str, ServiceConfig)]) -> (TestHost, Arc<Runtime>) {
    let host = host_with(indexers);
    let runtime = host.start().await.unwrap();
    (host, runtime)
}

async fn search(runtime: &Runtime, input: Value) -> CallReport {
    runtime.call("release.search", &input.to_string(), grant(EffectClass::Read)).await.unwrap()
}

fn output(report: &CallReport) -> &Value {
    match &report.outcome {
        CallOutcome::Succeeded { output } => output,
        other => panic!("expected success, got {other:?}"),
    }
}

fn failure(report: &CallReport) -> (String, String) {
    match &report.outcome {
        CallOutcome::Failed { failure } => (failure.kind.clone(), failure.message.clone()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn param<'a>(query: &'a std::collections::BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    query.get(name).map(String::as_str)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_indexers_are_searched_by_their_caps_and_merged_by_infohash() {
    let a = MockTorznab::start(ALPHA_KEY, alpha()).await;
    let b = MockTorznab::start(BETA_KEY, beta()).await;
    let (_h, runtime) =
        start(&[("torznab", indexer_service(&a, ALPHA_KEY)), ("torznab-2", indexer_service(&b, BETA_KEY))]).await;

    let report = search(
        &runtime,
        json!({"kind": "movie", "query": "Dune Part Two", "imdb_id": "tt15239678", "tmdb_id": 693134}),
    )
    .await;
    let out = output(&report);
    let releases = out["releases"].as_array().unwrap();
    let listed: Vec<(&str, u64)> =
        releases.iter().map(|r| (r["title"].as_str().unwrap(), r["seeders"].as_u64().unwrap())).collect();
    assert_eq!(
        listed,
        [(UHD, 250), ("Dune.Part.Two.2024.1080p.BluRay.x264-GRP", 40), ("Dune.Part.Two.2024.720p.WEB.H264-BETA", 12)],
        "the UHD release listed by both indexers appears once, with alpha's seeders"
    );
    let uhd = &releases[0];
    assert_eq!(uhd["infohash"], UHD_HASH);
    assert_eq!(uhd["indexers"], json!(["torznab", "torznab-2"]));
    assert_eq!(uhd["magnet_url"], UHD_MAGNET, "the magnet only beta had is kept");
    assert_eq!(uhd["imdb_id"], "tt15239678");
    assert_eq!(uhd["tmdb_id"], 693134);
    assert_eq!(uhd["categories"], json!([2000, 2045]));
    assert_eq!(uhd["size_bytes"], 20u64 << 30);
    assert_eq!(uhd["published"], "2024-03-02T10:00:00Z");
    assert_eq!(out["total"], 3);
    assert_eq!(
        out["indexers"][0],
        json!({"indexer": "torznab", "function": "movie", "searched_by": ["imdbid", "tmdbid"], "results": 2})
    );
    assert_eq!(
        out["indexers"][1],
        json!({"indexer": "torznab-2", "function": "search", "searched_by": ["q"], "results": 2})
    );

    let alpha_search = &a.searches()[0];
    assert_eq!(param(alpha_search, "t"), Some("movie"));
    assert_eq!(param(alpha_search, "imdbid"), Some("15239678"));
    assert_eq!(param(alpha_search, "q"), None, "an id search does not also filter by title");
    assert_eq!(param(alpha_search, "cat"), Some("2000"));
    let beta_search = &b.searches()[0];
    assert_eq!(param(beta_search, "t"), Some("search"));
    assert_eq!(param(beta_search, "q"), Some("Dune Part Two"));
    assert_eq!(param(beta_search, "imdbid"), None, "beta's caps list no ids");

    assert!(a.received().iter().all(|q| param(q, "apikey") == Some(ALPHA_KEY)), "the host added alpha's key");
    assert!(b.received().iter().all(|q| param(q, "apikey") == Some(BETA_KEY)), "the host added beta's key");
    assert_eq!(a.received().len(), 2, "caps, then one search");
    let text = out.to_string();
    assert!(!text.contains(ALPHA_KEY) && !text.contains(BETA_KEY), "no key reaches the output");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_episode_search_uses_season_and_episode_where_supported() {
    let a = MockTorznab::start(ALPHA_KEY, alpha()).await;
    let b = MockTorznab::start(BETA_KEY, beta()).await;
    let (_h, runtime) =
        start(&[("torznab", indexer_service(&a, ALPHA_KEY)), ("torznab-3", indexer_service(&b, BETA_KEY))]).await;

    let report = search(&runtime, json!({"query": "Shogun", "tvdb_id": 392573, "season": 1, "episode": 2})).await;
    let out = output(&report);
    let titles: Vec<&str> = out["releases"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Shogun.2024.S01E02.1080p.WEB.h264-ETHEL", "Shogun.2024.S01E02.720p.WEB.h264-BETA"]);
    assert_eq!(out["releases"][0]["tvdb_id"], 392573);
    assert_eq!(out["indexers"][1]["indexer"], "torznab-3", "a gap in the service names is fine");

    let alpha_search = &a.searches()[0];
    assert_eq!(
        (
            param(alpha_search, "t"),
            param(alpha_search, "tvdbid"),
            param(alpha_search, "season"),
            param(alpha_search, "ep")
        ),
        (Some("tvsearch"), Some("392573"), Some("1"), Some("2"))
    );
    assert_eq!(param(alpha_search, "cat"), Some("5000"));
    let beta_search = &b.searches()[0];
    assert_eq!(param(beta_search, "q"), Some("Shogun S01E02"), "text search carries the episode in the query");
}

#[tokio::test(flavor = "multi_thread")]
async fn one_failing_indexer_is_reported_and_the_others_results_returned() {
    let a = MockTorznab::start(ALPHA_KEY, alpha()).await;
    let b = MockTorznab::start(BETA_KEY, beta()).await;
    let (_h, runtime) =
        start(&[("torznab", indexer_service(&a, "a-revoked-key")), ("torznab-2", indexer_service(&b, BETA_KEY))]).await;
    let report = search(&runtime, json!({"query": "Dune Part Two", "kind": "movie"})).await;
    let out = output(&report);
    assert_eq!(out["releases"].as_array().unwrap().len(), 2);
    assert!(out["releases"].as_array().unwrap().iter().all(|r| r["indexers"] == json!(["torznab-2"])));
    assert_eq!(out["indexers"][0]["error"], "refused the configured API key (error 100: Invalid API Key)");
    assert!(!out.to_string().contains("a-revoked-key"));

    b.fail_with(Some(Failure::SearchServerError));
    let report = search(&runtime, json!({"query": "Dune Part Two", "kind": "movie"})).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, "unavailable", "every configured indexer failed");
    assert!(message.contains("torznab: refused the configured API key"), "{message}");
    assert!(message.contains("torznab-2: failed with status 500"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_indexer_failure_mode_is_named() {
    let a = MockTorznab::start(ALPHA_KEY, alpha()).await;
    let (_h, runtime) = start(&[("torznab", indexer_service(&a, ALPHA_KEY))]).await;
    let cases = [
        (Failure::ErrorDocument, "refused the configured API key (error 100: Incorrect user credentials)"),
        (Failure::RateLimited { retry_after_secs: 30 }, "rate-limited the search; retry after 30 s"),
        (Failure::ServerError, "failed with status 500"),
        (Failure::Malformed, "answered a caps document that is not valid Torznab XML"),
    ];
    for (mode, expected) in cases {
        a.fail_with(Some(mode));
        let (kind, message) = failure(&search(&runtime, json!({"query": "Dune"})).await);
        assert_eq!(kind, "unavailable", "{mode:?}");
        assert!(message.contains(&format!("torznab: {expected}")), "{mode:?}: {message}");
    }
    a.fail_with(None);
    let report = search(&runtime, json!({"query": "Dune"})).await;
    assert_eq!(output(&report)["releases"].as_array().unwrap().len(), 2, "recovered");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_indexer_and_bad_input_are_clear_failures() {
    let (_h, runtime) = start(&[]).await;
    let (kind, message) = failure(&search(&runtime, json!({"query": "Dune"})).await);
    assert_eq!(kind, "unavailable");
    assert!(message.contains("no Torznab indexer is configured"), "{message}");

    let a = MockTorznab::start(ALPHA_KEY, alpha()).await;
    let (_h, runtime) = start(&[("torznab", indexer_service(&a, ALPHA_KEY))]).await;
    for input in [json!({}), json!({"imdb_id": "nm0000123"}), json!({"query": "Dune", "season": 1, "kind": "movie"})] {
        let (kind, _) = failure(&search(&runtime, input.clone()).await);
        assert_eq!(kind, "invalid-input", "{input}");
    }
    assert!(a.received().is_empty(), "nothing is sent for bad input");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_invoke_path_checks_search_input_against_the_published_schema() {
    let a = MockTorznab::start(ALPHA_KEY, alpha()).await;
    let host = host_with(&[("torznab", indexer_service(&a, ALPHA_KEY))]);
    let db = Db::open(&Db::default_url(host.dir.path())).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    app.flush_component_events().await.unwrap();
    let origin = Origin::cli(EffectClass::Read);

    let input = json!({"kind": "tv", "query": "Shogun", "imdb_id": "tt2788316", "season": 1, "episode": 2,
        "categories": [5040], "indexers": ["torznab"], "limit": 10});
    let done = caps.invoke(&origin, "release.search", &input).await.unwrap();
    assert_eq!(done.status, Status::Succeeded, "{:?}", done.error);
    assert_eq!(done.output.unwrap()["releases"][0]["title"], "Shogun.2024.S01E02.1080p.WEB.h264-ETHEL");

    let before = a.received().len();
    let refused = caps.invoke(&origin, "release.search", &json!({"query": "Dune", "sort": "seeders"})).await.unwrap();
    let error = refused.error.unwrap();
    assert_eq!(error.kind, "invalid-input");
    assert!(error.message.contains("does not match the schema of release.search"), "{}", error.message);
    assert_eq!(a.received().len(), before, "the host refused it before the component ran");
}
