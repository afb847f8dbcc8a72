//! TMDB's credential and base URL from the environment Capstan is started
//! with, for the real binary: `TMDB_API_KEY` is sent as `api_key`,
//! `TMDB_ACCESS_TOKEN` as a bearer token (preferred when both are set),
//! `TMDB_BASE_URL` is where they go — until something is configured: a
//! base URL or a key stored on the Services page wins over the
//! environment's, value by value (a base URL may be stored alone while the
//! environment holds the key). The key is added by the host to each
//! request and shows up in no answer and no log line.

use capstan::runtime::EffectClass;
use capstan::store::Db;
use capstan_tests::api::Api;
use capstan_tests::binary::Serving;
use capstan_tests::mock_tmdb::{Catalog, MockTmdb};
use serde_json::{Value, json};

use crate::cli::paths::workdir;

const ENV_KEY: &str = "env-v3-key-5f0c2a9e41";
const ENV_TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.env-read-token.7d1e";
const CONFIGURED_KEY: &str = "configured-v3-key-b83d6c";

/// A server over a fresh data folder started with `env`, a key for reading
/// and a signed-in administrator, with the folder kept alive beside them.
async fn start(env: &[(&str, &str)]) -> (tempfile::TempDir, Serving, Api, Api) {
    let dir = workdir();
    let data = dir.path().join("data");
    let db = Db::open(&Db::default_url(&data)).await.unwrap();
    let key = capstan::http::keys::create(&db, "reader", &[EffectClass::Read], "test").await.unwrap();
    let server = Serving::start(dir.path(), &data, env).await;
    let api = Api::new(&server.base());
    let admin = api.signed_in(&db, "admin").await;
    (dir, server, api.with_key(&key), admin)
}

/// Searches TMDB for Dune through `catalog.lookup`; the titles found.
async fn dune(api: &Api) -> Vec<String> {
    let input = json!({"input": {"action": "search", "query": "Dune", "kind": "movie"}});
    let (status, answer) = api.post("/capabilities/catalog.lookup/invoke", input).await;
    assert_eq!((status, answer["status"].as_str()), (200, Some("succeeded")), "{answer}");
    for secret in [ENV_KEY, ENV_TOKEN, CONFIGURED_KEY] {
        assert!(!answer.to_string().contains(secret), "the answer shows a key: {answer}");
    }
    answer["output"]["results"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap().to_string()).collect()
}

fn tmdb_view(setup: &Value) -> Value {
    setup["services"].as_array().unwrap().iter().find(|s| s["name"] == "tmdb").unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn tmdb_takes_its_key_and_base_url_from_the_environment_until_they_are_configured() {
    let from_env = MockTmdb::start(ENV_KEY, Catalog::sample()).await;
    let mirror = MockTmdb::start(ENV_KEY, Catalog::sample()).await;
    let configured = MockTmdb::start(CONFIGURED_KEY, Catalog::sample()).await;
    let env_base = from_env.base_url();
    let (_dir, server, reader, admin) = start(&[("TMDB_API_KEY", ENV_KEY), ("TMDB_BASE_URL", &env_base)]).await;

    // Nothing configured: the environment's key, as api_key, to its base URL.
    assert!(dune(&reader).await.contains(&"Dune: Part Two".to_string()));
    let sent = from_env.received();
    assert!(!sent.is_empty());
    assert!(
        sent.iter().all(|r| r.query.get("api_key").map(String::as_str) == Some(ENV_KEY) && r.authorization.is_none())
    );
    let view = tmdb_view(&reader.json("/setup").await);
    assert_eq!((view["source"].as_str(), view["secretSet"].as_bool()), (Some("environment"), Some(false)), "{view}");
    assert_eq!(view["fromEnvironment"], json!(["TMDB_API_KEY", "TMDB_BASE_URL"]), "{view}");
    assert_eq!(view["baseUrl"], env_base.as_str());

    // A configured base URL wins over TMDB_BASE_URL; the key is still the
    // environment's, for there is no other.
    let (status, answer) =
        admin.send(reqwest::Method::PUT, "/setup/services/tmdb", json!({"baseUrl": mirror.base_url()})).await;
    assert_eq!(status, 200, "{answer}");
    dune(&reader).await;
    assert_eq!(from_env.received().len(), sent.len(), "TMDB_BASE_URL is no longer asked");
    assert!(mirror.received().iter().all(|r| r.query.get("api_key").map(String::as_str) == Some(ENV_KEY)));
    assert!(!mirror.received().is_empty());
    let view = tmdb_view(&reader.json("/setup").await);
    assert_eq!((view["source"].as_str(), view["fromEnvironment"].clone()), (Some("console"), json!(["TMDB_API_KEY"])));

    // A configured key wins over TMDB_API_KEY.
    let both = json!({"baseUrl": configured.base_url(), "secret": CONFIGURED_KEY});
    let (status, answer) = admin.send(reqwest::Method::PUT, "/setup/services/tmdb", both).await;
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.to_string().contains(CONFIGURED_KEY));
    dune(&reader).await;
    let got = configured.received();
    assert!(!got.is_empty() && got.iter().all(|r| r.query.get("api_key").map(String::as_str) == Some(CONFIGURED_KEY)));
    let view = tmdb_view(&reader.json("/setup").await);
    assert_eq!((view["secretSet"].as_bool(), view["fromEnvironment"].clone()), (Some(true), json!([])), "{view}");

    let log = server.log();
    assert!(log.contains("capstan is serving"), "the log is kept: {log}");
    for secret in [ENV_KEY, CONFIGURED_KEY] {
        assert!(!log.contains(secret), "a key is in the log:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_access_token_in_the_environment_is_sent_as_a_bearer_token() {
    let tmdb = MockTmdb::start(ENV_TOKEN, Catalog::sample()).await;
    let base = tmdb.base_url();
    let env = [("TMDB_ACCESS_TOKEN", ENV_TOKEN), ("TMDB_API_KEY", ENV_KEY), ("TMDB_BASE_URL", base.as_str())];
    let (_dir, server, reader, _admin) = start(&env).await;
    assert!(dune(&reader).await.contains(&"Dune".to_string()));
    let sent = tmdb.received();
    assert!(!sent.is_empty());
    let bearer = format!("Bearer {ENV_TOKEN}");
    assert!(
        sent.iter().all(|r| r.authorization.as_deref() == Some(bearer.as_str()) && !r.query.contains_key("api_key"))
    );
    assert_eq!(
        tmdb_view(&reader.json("/setup").await)["fromEnvironment"],
        json!(["TMDB_ACCESS_TOKEN", "TMDB_BASE_URL"])
    );
    assert!(!server.log().contains(ENV_TOKEN));
}
