//! Services set up from the console rather than capstan.toml: TMDB, a
//! Torznab indexer (mock servers on loopback) and a real qBittorrent, the
//! roots and the library's naming — saved with their secrets encrypted, in
//! effect at once (a capability call uses them with no restart), each with
//! a Test that makes a real request and says what it found; what the file
//! sets is shown as the file's and cannot be changed; bad values are
//! refused with the reason and change nothing. On SQLite and on PostgreSQL.

use capstan::pipeline::Origin;
use capstan::runtime::{EffectClass, Status};
use capstan::store::Db;
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::mock_tmdb::{Catalog, MockTmdb};
use capstan_tests::mock_torznab::{Indexer, MockTorznab};
use capstan_tests::qbittorrent::QBittorrent;
use reqwest::Method;
use serde_json::{Value, json};

const TMDB_KEY: &str = "tmdb-setup-key-41";
const INDEXER_KEY: &str = "indexer-setup-key-77";

fn service<'a>(view: &'a Value, name: &str) -> &'a Value {
    view["services"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap()
}

async fn services_are_set_up_tested_and_in_effect_at_once(backend: Backend) {
    let tmdb = MockTmdb::start(TMDB_KEY, Catalog::sample()).await;
    let indexer = MockTorznab::start(
        INDEXER_KEY,
        Indexer {
            title: "Mock Indexer",
            movie_params: Some("q,imdbid"),
            tv_params: Some("q,season,ep"),
            items: Vec::new(),
        },
    )
    .await;
    let qbt = QBittorrent::start().await;
    // torznab-3 is the file's; the console shows it and leaves it alone.
    let (host, downloads, library) = TestHost::with_a_file_indexer();
    let db = Db::open(&fresh_url(backend, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    let base = serve(app.clone()).await;
    // Another process on the same database (a worker) follows the changes.
    // (As `capstan worker` does, it shares the data folder and so the master key.)
    let mut other_host = TestHost::new();
    other_host.config = host.config.clone();
    let other_app =
        capstan::app::App::start(other_host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let following = tokio_util::sync::CancellationToken::new();
    let _stop_following = following.clone().drop_guard();
    tokio::spawn(other_app.clone().follow_setup(following));
    let other = other_app.caps().clone();
    let admin = Api::new(&base).signed_in(&db, "admin").await;

    // Before: TMDB is not set up, and a lookup says so.
    let lookup = json!({"action": "search", "query": "Dune"});
    let inv = caps.invoke(&Origin::cli(EffectClass::Read), "catalog.lookup", &lookup).await.unwrap();
    assert!(inv.error.unwrap().message.contains("TMDB is not set up"));
    let (status, view) = admin.send(Method::GET, "/setup", Value::Null).await;
    assert_eq!(status, 200);
    assert_eq!(service(&view, "tmdb")["source"], "unset");
    assert_eq!(service(&view, "torznab-3")["source"], "file");

    // Refusals change nothing.
    for (path, body, want) in [
        ("/setup/services/tmdb", json!({"baseUrl": tmdb.base_url()}), 422),
        ("/setup/services/tmdb", json!({"baseUrl": "ftp://tmdb", "secret": "k"}), 422),
        ("/setup/services/sonarr", json!({"baseUrl": "http://x", "secret": "k"}), 404),
        ("/setup/services/torznab-3", json!({"baseUrl": "http://x", "secret": "k"}), 409),
        ("/setup/services/qbittorrent", json!({"baseUrl": qbt.base_url(), "secret": "p"}), 422),
        ("/setup/roots/downloads", json!({"path": "relative/dir"}), 422),
        ("/setup/roots/library", json!({"path": "/no/such/folder"}), 422),
        ("/setup/roots/downloads", json!({"path": host.dir.path()}), 422),
    ] {
        let (status, answer) = admin.send(Method::PUT, path, body.clone()).await;
        assert_eq!(status, want, "{path} {body}: {answer}");
    }
    let (status, _) = admin.send(Method::PUT, "/setup/library", json!({"mode": "teleport"})).await;
    assert_eq!(status, 422);
    assert_eq!(app.setup().version().await.unwrap().0, 0, "nothing was stored");

    // TMDB: saved, tested, and used by the next call with no restart.
    let (status, view) = admin
        .send(Method::PUT, "/setup/services/tmdb", json!({"baseUrl": tmdb.base_url(), "secret": "wrong-key"}))
        .await;
    assert_eq!(status, 200, "{view}");
    assert!(!view.to_string().contains("wrong-key"), "a secret is never shown back");
    let (_, tested) = admin.send(Method::POST, "/setup/services/tmdb/test", Value::Null).await;
    assert_eq!(tested["ok"], false, "{tested}");
    assert!(tested["found"].as_str().unwrap().contains("refused the credential"), "{tested}");
    admin.send(Method::PUT, "/setup/services/tmdb", json!({"baseUrl": tmdb.base_url(), "secret": TMDB_KEY})).await;
    let (_, tested) = admin.send(Method::POST, "/setup/services/tmdb/test", Value::Null).await;
    assert_eq!(tested["ok"], true, "{tested}");
    assert!(tested["found"].as_str().unwrap().contains("TMDB accepted the credential"), "{tested}");
    let inv = caps.invoke(&Origin::cli(EffectClass::Read), "catalog.lookup", &lookup).await.unwrap();
    assert_eq!(inv.status, Status::Succeeded, "{:?}", inv.error);
    let started = std::time::Instant::now();
    loop {
        let inv = other.invoke(&Origin::cli(EffectClass::Read), "catalog.lookup", &lookup).await.unwrap();
        if inv.status == Status::Succeeded {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the other process never took the change up");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let stored: String =
        sqlx::query_scalar("SELECT secret FROM setup_entry WHERE name = 'tmdb'").fetch_one(&db.pool).await.unwrap();
    assert!(!stored.contains(TMDB_KEY), "the key is encrypted at rest");
    // A later save without the secret keeps it.
    let (status, view) = admin.send(Method::PUT, "/setup/services/tmdb", json!({"baseUrl": tmdb.base_url()})).await;
    assert_eq!(status, 200);
    assert_eq!(
        (service(&view, "tmdb")["source"].as_str(), service(&view, "tmdb")["secretSet"].as_bool()),
        (Some("console"), Some(true))
    );

    // An indexer: its caps are read; release.search then knows it.
    let (status, _) = admin
        .send(Method::PUT, "/setup/services/torznab", json!({"baseUrl": indexer.base_url(), "secret": INDEXER_KEY}))
        .await;
    assert_eq!(status, 200);
    let (_, tested) = admin.send(Method::POST, "/setup/services/torznab/test", Value::Null).await;
    assert_eq!(tested["ok"], true, "{tested}");
    assert!(tested["found"].as_str().unwrap().contains("Mock Indexer"), "{tested}");
    let (_, tested) = admin.send(Method::POST, "/setup/services/torznab-3/test", Value::Null).await;
    assert_eq!(tested["ok"], false, "the file's indexer is unreachable: {tested}");

    // qBittorrent, real: the login and the version.
    let qb = json!({"baseUrl": qbt.base_url(), "username": qbt.username(), "secret": qbt.password()});
    let (status, _) = admin.send(Method::PUT, "/setup/services/qbittorrent", qb).await;
    assert_eq!(status, 200);
    let (_, tested) = admin.send(Method::POST, "/setup/services/qbittorrent/test", Value::Null).await;
    assert_eq!(tested["ok"], true, "{tested}");
    assert!(tested["found"].as_str().unwrap().starts_with("qBittorrent v"), "{tested}");

    // Roots, and whether downloads hard-link into the library.
    for (name, dir) in [("downloads", &downloads), ("library", &library)] {
        let (status, answer) = admin.send(Method::PUT, &format!("/setup/roots/{name}"), json!({"path": dir})).await;
        assert_eq!(status, 200, "{answer}");
    }
    let (_, tested) = admin.send(Method::POST, "/setup/roots/test", Value::Null).await;
    assert_eq!(tested["ok"], true, "{tested}");
    assert!(tested["found"].as_str().unwrap().contains("can be hard-linked"), "{tested}");
    assert_eq!(caps.runtime().root_paths()["library"], library);

    // The library's naming becomes the organizer's and the submitter's settings.
    let naming = json!({"movieTemplate": "{Movie Title} ({Release Year})", "savePath": "/srv/downloads/movies"});
    let (status, _) = admin.send(Method::PUT, "/setup/library", naming).await;
    assert_eq!(status, 200);
    let config = caps.runtime().config().clone();
    let effective = app.setup().effective(&config).await.unwrap();
    assert_eq!(effective.settings["organize.plan"]["movie_template"], "{Movie Title} ({Release Year})");
    assert_eq!(effective.settings["download.submit"]["save_path"], "/srv/downloads/movies");

    // Keys cannot set services up; every change is audited.
    let key = capstan::http::keys::create(&db, "automation", &[EffectClass::Execute], "admin:admin").await.unwrap();
    let keyed = Api::new(&base).with_key(&key);
    let (status, _) =
        keyed.send(Method::PUT, "/setup/services/tmdb", json!({"baseUrl": "http://evil", "secret": "x"})).await;
    assert_eq!(status, 403);
    let audit = app.audit().list(0, 1000).await.unwrap();
    let changes = audit.iter().filter(|e| e.event.action.starts_with("setup.")).count();
    assert_eq!(changes, 8, "every accepted change is audited once");

    // Forgotten: TMDB is no longer set up, at once.
    let (status, _) = admin.send(Method::DELETE, "/setup/services/tmdb", Value::Null).await;
    assert_eq!(status, 200);
    let inv = caps.invoke(&Origin::cli(EffectClass::Read), "catalog.lookup", &lookup).await.unwrap();
    assert!(inv.error.unwrap().message.contains("TMDB is not set up"));
}

both_backends!(services_are_set_up_tested_and_in_effect_at_once);

/// A Test tries what the form holds, saved or not, and says what it used:
/// the key typed, else the saved one; the folders typed, checked as saving
/// would check them. Nothing is stored by a Test, and no key is said back.
#[tokio::test]
async fn a_test_tries_the_forms_values_and_says_which_it_used() {
    let tmdb = MockTmdb::start(TMDB_KEY, Catalog::sample()).await;
    let items = Vec::new();
    let indexer = MockTorznab::start(
        INDEXER_KEY,
        Indexer { title: "Form Indexer", movie_params: Some("q"), tv_params: None, items },
    )
    .await;
    let (host, downloads, library) = TestHost::with_a_file_indexer();
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let base = serve(app.clone()).await;
    let admin = Api::new(&base).signed_in(&db, "admin").await;
    let test = |path: &str, body: Value| {
        let admin = &admin;
        let path = path.to_string();
        async move {
            let (status, found) = admin.send(Method::POST, &path, body).await;
            assert_eq!(status, 200, "{path}: {found}");
            assert!(!found.to_string().contains(INDEXER_KEY), "a key is never said back: {found}");
            let used = found["used"].as_str().unwrap_or_default().to_string();
            (found["ok"].as_bool().unwrap(), found["found"].as_str().unwrap().to_string(), used)
        }
    };

    // Nothing saved: the form's values are what is tried.
    let typed = json!({"baseUrl": indexer.base_url(), "secret": INDEXER_KEY});
    let (ok, found, used) = test("/setup/services/torznab/test", typed).await;
    assert!(ok && found.contains("Form Indexer"), "{found}");
    assert!(used.contains("not saved") && used.contains(&indexer.base_url()), "{used}");
    assert!(used.contains("API key typed in the form"), "{used}");
    let wrong = json!({"baseUrl": indexer.base_url(), "secret": "not-the-key"});
    let (ok, found, _) = test("/setup/services/torznab/test", wrong).await;
    assert!(!ok, "a wrong key typed is what fails: {found}");
    let (ok, found, _) = test("/setup/services/torznab/test", json!({"baseUrl": indexer.base_url()})).await;
    assert!(!ok && found.contains("needs its API key"), "{found}");
    let (ok, found, _) = test("/setup/services/torznab/test", Value::Null).await;
    assert!(!ok && found.contains("not set up"), "{found}");
    let (ok, found, _) = test("/setup/services/tmdb/test", json!({"baseUrl": tmdb.base_url()})).await;
    assert!(!ok && found.contains("needs its key"), "{found}");
    assert_eq!(app.setup().version().await.unwrap().0, 0, "a Test stores nothing");

    // Saved: a form without a key uses the saved key with the form's URL.
    let (status, _) =
        admin.send(Method::PUT, "/setup/services/tmdb", json!({"baseUrl": tmdb.base_url(), "secret": TMDB_KEY})).await;
    assert_eq!(status, 200);
    let (ok, found, used) = test("/setup/services/tmdb/test", json!({"baseUrl": tmdb.base_url()})).await;
    assert!(ok && found.contains("accepted"), "{found}");
    assert!(used.contains("the saved key"), "{used}");
    let moved = json!({"baseUrl": "http://127.0.0.1:9/3"});
    let (ok, _, used) = test("/setup/services/tmdb/test", moved).await;
    assert!(!ok && used.contains("127.0.0.1:9"), "the form's URL, not the saved one, was tried: {used}");
    let (ok, _, used) = test("/setup/services/tmdb/test", Value::Null).await;
    assert!(ok && used.contains("the saved setup"), "{used}");
    let (ok, _, _) =
        test("/setup/services/tmdb/test", json!({"baseUrl": tmdb.base_url(), "secret": "typed-wrong"})).await;
    assert!(!ok, "a key typed wins over the saved one");

    // The file's indexer is the file's, whatever the form says.
    let typed = json!({"baseUrl": indexer.base_url(), "secret": INDEXER_KEY});
    let (_, _, used) = test("/setup/services/torznab-3/test", typed).await;
    assert!(used.contains("capstan.toml") && used.contains("not used"), "{used}");

    // Folders typed but not saved, checked as saving would check them.
    let folders = json!({"downloads": downloads, "library": library});
    let (ok, found, used) = test("/setup/roots/test", folders).await;
    assert!(ok && found.contains("hard-linked"), "{found}");
    assert!(used.contains("downloads from the form, not saved"), "{used}");
    let (ok, found, _) = test("/setup/roots/test", json!({"library": "relative/dir"})).await;
    assert!(!ok && found.contains("absolute"), "{found}");
    let (ok, found, _) = test("/setup/roots/test", json!({"downloads": host.dir.path()})).await;
    assert!(!ok, "the host's own folder is refused as when saving: {found}");
    let (ok, found, used) = test("/setup/roots/test", Value::Null).await;
    assert!(!ok && used.contains("downloads unset"), "{found} / {used}");
    let (status, answer) = admin.send(Method::POST, "/setup/roots/test", json!({"downloads": 7})).await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(app.setup().version().await.unwrap().0, 1, "only the one Save stored anything");
}
