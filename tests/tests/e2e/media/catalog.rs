//! `catalog.lookup` in the sandbox against a mock TMDB on loopback: the host
//! injects the key (the mock sees it, the output never holds it), and every
//! TMDB failure reaches the caller as a clear failure.

use std::sync::Arc;

use capstan::Runtime;
use capstan::config::{Auth, SecretRef, ServiceConfig};
use capstan::pipeline::Origin;
use capstan::runtime::{CallOutcome, CallReport, EffectClass, Status};
use capstan::store::Db;
use capstan_tests::host::TestHost;
use capstan_tests::mock_tmdb::{Catalog, Failure, MockTmdb};
use serde_json::{Value, json};

use crate::grant;

const KEY: &str = "tmdb-key-3f9a7c";

fn tmdb_service(mock: &MockTmdb, auth: Auth) -> ServiceConfig {
    ServiceConfig {
        base_url: mock.base_url(),
        auth,
        operations: Vec::new(),
        timeout_ms: 5_000,
        response_cap_bytes: 1 << 20,
    }
}

fn api_key(key: &str) -> Auth {
    Auth::Query { name: "api_key".into(), value: SecretRef(key.into()) }
}

fn host_with(service: Option<ServiceConfig>) -> TestHost {
    let mut host = TestHost::new();
    if let Some(service) = service {
        host.config.services.insert("tmdb".into(), service);
    }
    host
}

async fn start(service: Option<ServiceConfig>) -> (TestHost, Arc<Runtime>) {
    let host = host_with(service);
    let runtime = host.start().await.unwrap();
    (host, runtime)
}

async fn lookup(runtime: &Runtime, input: Value) -> CallReport {
    runtime.call("catalog.lookup", &input.to_string(), grant(EffectClass::Read)).await.unwrap()
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

#[tokio::test(flavor = "multi_thread")]
async fn search_details_and_external_ids_with_the_key_injected_by_the_host() {
    let mock = MockTmdb::start(KEY, Catalog::sample()).await;
    let (_h, runtime) = start(Some(tmdb_service(&mock, api_key(KEY)))).await;

    let found = lookup(&runtime, json!({"action": "search", "query": "dune"})).await;
    let hits: Vec<(&str, u64)> = output(&found)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), r["tmdb_id"].as_u64().unwrap()))
        .collect();
    assert_eq!(hits, [("movie", 693134), ("tv", 90228), ("movie", 438631)], "both catalogues, most popular first");
    assert_eq!(output(&found)["results"][0]["year"], 2024);

    let by_year = lookup(&runtime, json!({"action": "search", "query": "Dune", "kind": "movie", "year": 2021})).await;
    let results = output(&by_year)["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["title"], "Dune");

    let series = lookup(&runtime, json!({"action": "details", "kind": "tv", "tmdb_id": 126308})).await;
    let shogun = output(&series);
    assert_eq!(shogun["title"], "Shōgun");
    assert_eq!(shogun["original_title"], "SHOGUN");
    assert_eq!(shogun["number_of_seasons"], 1);
    assert_eq!(shogun["seasons"][0]["season_number"], 0, "specials are listed");
    assert_eq!(shogun["genres"], json!(["Drama", "War & Politics"]));

    let film = lookup(&runtime, json!({"action": "details", "kind": "movie", "tmdb_id": 693134})).await;
    let movie = output(&film);
    assert_eq!((movie["runtime_minutes"].as_u64(), movie["imdb_id"].as_str()), (Some(167), Some("tt15239678")));

    let ids = lookup(&runtime, json!({"action": "external-ids", "kind": "tv", "tmdb_id": 126308})).await;
    assert_eq!(output(&ids)["imdb_id"], "tt2788316");
    assert_eq!(output(&ids)["tvdb_id"], 392573);

    let received = mock.received();
    assert_eq!(received.len(), 6, "search both sends two requests, the rest one each");
    assert!(received.iter().all(|r| r.query.get("api_key").map(String::as_str) == Some(KEY)), "the host added the key");
    assert_eq!(received[2].path, "/3/search/movie");
    assert_eq!(received[2].query.get("year").map(String::as_str), Some("2021"));
    for report in [&found, &by_year, &series, &film, &ids] {
        assert!(!output(report).to_string().contains(KEY), "the key never reaches the output");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bearer_token_works_as_well_as_the_query_key() {
    let mock = MockTmdb::start(KEY, Catalog::sample()).await;
    let bearer = Auth::Header {
        name: "Authorization".into(),
        value: SecretRef(KEY.into()),
        prefix: "Bearer ".into(),
        suffix: String::new(),
    };
    let (_h, runtime) = start(Some(tmdb_service(&mock, bearer))).await;
    let report = lookup(&runtime, json!({"action": "external-ids", "kind": "movie", "tmdb_id": 438631})).await;
    assert_eq!(output(&report)["imdb_id"], "tt1160419");
    let received = mock.received();
    assert_eq!(received[0].authorization.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert!(!received[0].query.contains_key("api_key"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_id_is_not_found_and_a_wrong_key_is_unavailable() {
    let mock = MockTmdb::start(KEY, Catalog::sample()).await;
    let (_h, runtime) = start(Some(tmdb_service(&mock, api_key(KEY)))).await;
    let report = lookup(&runtime, json!({"action": "details", "kind": "movie", "tmdb_id": 99999999})).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, "not-found");
    assert_eq!(message, "TMDB has no movie with TMDB id 99999999");

    let (_h, runtime) = start(Some(tmdb_service(&mock, api_key("an-old-key")))).await;
    let report = lookup(&runtime, json!({"action": "search", "query": "Dune"})).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, "unavailable");
    assert!(message.contains("TMDB refused the configured credential"), "{message}");
    assert!(message.contains("Invalid API key"), "TMDB's own words are passed on: {message}");
    assert!(!message.contains("an-old-key"), "the refused key is not repeated: {message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn revoked_keys_rate_limits_server_errors_and_broken_bodies_are_unavailable() {
    let mock = MockTmdb::start(KEY, Catalog::sample()).await;
    let (_h, runtime) = start(Some(tmdb_service(&mock, api_key(KEY)))).await;
    let details = json!({"action": "details", "kind": "movie", "tmdb_id": 438631});

    let cases = [
        (Failure::RevokedKey, "TMDB refused the configured credential (TMDB code 7: Invalid API key"),
        (
            Failure::RateLimited { retry_after_secs: 7 },
            "rate-limited the lookup of movie with TMDB id 438631; retry after 7 s",
        ),
        (Failure::ServerError, "TMDB failed with status 503"),
        (Failure::Malformed, "not the expected JSON"),
    ];
    for (mode, expected) in cases {
        mock.fail_with(Some(mode));
        let (kind, message) = failure(&lookup(&runtime, details.clone()).await);
        assert_eq!(kind, "unavailable", "{mode:?}");
        assert!(message.contains(expected), "{mode:?}: {message}");
    }

    mock.fail_with(None);
    let report = lookup(&runtime, details).await;
    assert_eq!(output(&report)["title"], "Dune", "the next call after recovery succeeds");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_and_a_missing_service_are_clear_before_anything_is_sent() {
    let mock = MockTmdb::start(KEY, Catalog::sample()).await;
    let (_h, runtime) = start(Some(tmdb_service(&mock, api_key(KEY)))).await;
    for input in [
        json!({"action": "search", "query": ""}),
        json!({"action": "details", "kind": "movie"}),
        json!({"action": "details", "kind": "movie", "tmdb_id": 1, "extra": true}),
    ] {
        let (kind, _) = failure(&lookup(&runtime, input.clone()).await);
        assert_eq!(kind, "invalid-input", "{input}");
    }
    assert!(mock.received().is_empty());

    let (_h, runtime) = start(None).await;
    let (kind, message) = failure(&lookup(&runtime, json!({"action": "search", "query": "Dune"})).await);
    assert_eq!(kind, "unavailable");
    assert!(message.contains("[services.tmdb]"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_invoke_path_accepts_each_action_and_refuses_misspelt_fields_by_the_published_schema() {
    let mock = MockTmdb::start(KEY, Catalog::sample()).await;
    let host = host_with(Some(tmdb_service(&mock, api_key(KEY))));
    let db = Db::open(&Db::default_url(host.dir.path())).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    app.flush_component_events().await.unwrap();
    let origin = Origin::cli(EffectClass::Read);

    for input in [
        json!({"action": "search", "query": "Shōgun", "kind": "tv", "year": 2024, "language": "zh-CN", "limit": 5}),
        json!({"action": "details", "kind": "movie", "tmdb_id": 693134}),
        json!({"action": "external-ids", "kind": "tv", "tmdb_id": 126308}),
    ] {
        let done = caps.invoke(&origin, "catalog.lookup", &input).await.unwrap();
        assert_eq!(done.status, Status::Succeeded, "{input}: {:?}", done.error);
    }
    assert_eq!(mock.received().len(), 3);

    let misspelt = json!({"action": "details", "kind": "movie", "tmdbId": 693134});
    let refused = caps.invoke(&origin, "catalog.lookup", &misspelt).await.unwrap();
    let error = refused.error.unwrap();
    assert_eq!(error.kind, "invalid-input");
    assert!(error.message.contains("does not match the schema of catalog.lookup"), "{}", error.message);
    assert_eq!(mock.received().len(), 3, "the host refused it before the component ran");
}
