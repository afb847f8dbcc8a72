//! What the library wants, through the API and the command line, against a
//! mock TMDB on loopback: want a movie and a series' seasons, a title
//! already wanted is a conflict and an unknown TMDB id a 404, change the
//! profile, stop wanting; an API key is an automated caller and needs a
//! grant. On SQLite and on PostgreSQL.

use std::sync::Arc;

use capstan::config::{Auth, SecretRef, ServiceConfig};
use capstan::runtime::EffectClass;
use capstan::store::Db;
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::mock_tmdb::{Catalog, MockTmdb};
use serde_json::{Value, json};

pub const KEY: &str = "tmdb-key-9c1e";

pub struct Env {
    pub _host: TestHost,
    pub tmdb: MockTmdb,
    pub db: Db,
    pub app: Arc<capstan::app::App>,
    pub svc: capstan::pipeline::Services,
}

pub fn tmdb_service(tmdb: &MockTmdb) -> ServiceConfig {
    ServiceConfig {
        base_url: tmdb.base_url(),
        auth: Auth::Query { name: "api_key".into(), value: SecretRef(KEY.into()) },
        operations: Vec::new(),
        timeout_ms: 5_000,
        response_cap_bytes: 1 << 20,
    }
}

pub async fn env(backend: Backend) -> Env {
    env_with(backend, Catalog::sample()).await
}

/// A host on `backend` whose TMDB answers from `catalog`.
pub async fn env_with(backend: Backend, catalog: Catalog) -> Env {
    let tmdb = MockTmdb::start(KEY, catalog).await;
    let mut host = TestHost::new();
    host.config.services.insert("tmdb".into(), tmdb_service(&tmdb));
    let db = Db::open(&fresh_url(backend, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();
    Env { _host: host, tmdb, db, app, svc }
}

async fn titles_are_wanted_changed_and_given_up(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.db, "admin").await;
    use reqwest::Method;

    let dune = json!({"tmdbId": 693134, "kind": "movie", "quality": "2160p"});
    let (status, added) = admin.send(Method::POST, "/library/titles", dune.clone()).await;
    assert_eq!(status, 201, "{added}");
    assert_eq!(
        (added["entity"]["title"].as_str(), added["entity"]["year"].as_i64()),
        (Some("Dune: Part Two"), Some(2024))
    );
    assert_eq!(added["slots"].as_array().unwrap().len(), 1);
    assert_eq!(
        (added["slots"][0]["quality"].as_str(), added["slots"][0]["status"].as_str()),
        (Some("2160p"), Some("wanted"))
    );
    let entity = added["entity"]["id"].as_str().unwrap().to_string();

    let (status, again) = admin.send(Method::POST, "/library/titles", dune).await;
    assert_eq!(status, 409, "{again}");
    assert!(again["error"]["message"].as_str().unwrap().contains("Dune: Part Two (2024) is already wanted"), "{again}");
    let (status, unknown) = admin
        .send(Method::POST, "/library/titles", json!({"tmdbId": 999999, "kind": "movie", "quality": "1080p"}))
        .await;
    assert_eq!(status, 404, "{unknown}");
    for bad in [
        json!({"tmdbId": 0, "kind": "movie", "quality": "1080p"}),
        json!({"tmdbId": 5, "kind": "book", "quality": "1080p"}),
        json!({"tmdbId": 693134, "kind": "movie"}),
        json!({"tmdbId": 126308, "kind": "tv", "quality": "1080p", "seasons": [5]}),
        json!({"tmdbId": 438631, "kind": "movie", "quality": "1080p", "profile": "movies"}),
    ] {
        let (status, answer) = admin.send(Method::POST, "/library/titles", bad.clone()).await;
        assert_eq!(status, 422, "{bad}: {answer}");
    }

    // A series: every season after the specials, unless seasons are named.
    let (status, shogun) =
        admin.send(Method::POST, "/library/titles", json!({"tmdbId": 126308, "kind": "tv", "quality": "1080p"})).await;
    assert_eq!(status, 201, "{shogun}");
    let seasons: Vec<i64> = shogun["slots"].as_array().unwrap().iter().filter_map(|s| s["season"].as_i64()).collect();
    assert_eq!(seasons, [1], "the specials are not wanted by default");

    // Another profile; then no longer wanted.
    let (status, changed) =
        admin.send(Method::PATCH, &format!("/library/titles/{entity}"), json!({"profile": "quality.movies"})).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["slots"][0]["profile"], "quality.movies");
    let (status, _) = admin.send(Method::PATCH, &format!("/library/titles/{entity}"), json!({"quality": ""})).await;
    assert_eq!(status, 422);
    let (status, removed) = admin.send(Method::DELETE, &format!("/library/titles/{entity}"), Value::Null).await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["slots"][0]["status"], "unwanted");
    let (status, _) = admin.send(Method::DELETE, &format!("/library/titles/{entity}"), Value::Null).await;
    assert_eq!(status, 404, "nothing of it is wanted any more");
    let (status, _) = admin.send(Method::DELETE, "/library/titles/no-such-entity", Value::Null).await;
    assert_eq!(status, 404);
    // Wanted again after giving it up: a new slot.
    let (status, _) = admin
        .send(Method::POST, "/library/titles", json!({"tmdbId": 693134, "kind": "movie", "quality": "1080p"}))
        .await;
    assert_eq!(status, 201);

    // An API key is an automated caller: it needs the execute scope and a grant.
    let key = capstan::http::keys::create(&env.db, "automation", &[EffectClass::Execute], "admin:admin").await.unwrap();
    let keyed = Api::new(&base).with_key(&key);
    let alien = json!({"tmdbId": 438631, "kind": "movie", "quality": "1080p"});
    let (status, refused) = keyed.post("/library/titles", alien.clone()).await;
    assert_eq!(status, 403, "{refused}");
    let library = serde_json::to_value(env.svc.domain.inventory(None, 100).await.unwrap()).unwrap();
    assert!(!library.to_string().contains("\"Dune\""), "nothing was added: {library}");
    env.svc.authz.create_grant(&capstan_tests::grants::for_an_hour("library.want"), "admin:admin").await.unwrap();
    assert_eq!(keyed.post("/library/titles", alien).await.0, 201);

    // What TMDB was asked carried the key, and nothing answered showed it.
    assert!(env.tmdb.received().iter().all(|r| r.query.get("api_key").map(String::as_str) == Some(KEY)));
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    let wanted =
        audit.iter().filter(|e| e.event.subject == "library.want" && e.event.action == "capability.invoke").count();
    assert!(wanted >= 6, "each change is audited ({wanted})");
}

both_backends!(titles_are_wanted_changed_and_given_up);

#[test]
fn the_command_line_adds_lists_and_removes_titles() {
    use capstan_tests::binary::{run, stderr, stdout};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmdb = rt.block_on(MockTmdb::start(KEY, Catalog::sample()));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("capstan.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\ncache_dir = {:?}\n[services.tmdb]\nbase_url = {:?}\nauth = {{ kind = \"query\", name = \"api_key\", value = {KEY:?} }}\n",
            dir.path().join("data").display().to_string(),
            capstan_tests::host::shared_cache().display().to_string(),
            tmdb.base_url()
        ),
    )
    .unwrap();
    let cli = |args: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap(), "library"];
        all.extend_from_slice(args);
        run(&all)
    };
    let out = cli(&["add", "--tmdb-id", "90228", "--kind", "tv", "--quality", "1080p", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let added: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let entity = added["output"]["entity"]["id"].as_str().unwrap().to_string();
    let out = cli(&["list"]);
    assert!(
        stdout(&out).contains("Dune: Prophecy (2024)") && stdout(&out).contains("season 1 1080p wanted"),
        "{}",
        stdout(&out)
    );
    let again = cli(&["add", "--tmdb-id", "90228", "--kind", "tv", "--quality", "1080p"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("already wanted"), "{}", stderr(&again));
    let out = cli(&["remove", &entity]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("unwanted"), "{}", stdout(&out));
    let out = cli(&["remove", &entity]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nothing of Dune: Prophecy (2024) is wanted"), "{}", stderr(&out));
    drop(rt);
}
