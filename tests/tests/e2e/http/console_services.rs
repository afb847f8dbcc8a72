//! The Services page in a real Chromium: a newcomer connects TMDB and an
//! indexer (mock servers on loopback) and a real qBittorrent, sets the
//! folders, presses Test on each and reads what was found; a wrong key
//! says why; a value from capstan.toml is shown and cannot be edited;
//! Forget removes a service and its secret.

use capstan::store::Db;
use capstan_tests::browser::Browser;
use capstan_tests::console::{self, Walk};
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::mock_tmdb::{Catalog, MockTmdb};
use capstan_tests::mock_torznab::{Indexer, MockTorznab};
use capstan_tests::qbittorrent::QBittorrent;

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_connects_tmdb_an_indexer_and_qbittorrent_from_the_console() {
    let tmdb = MockTmdb::start("console-tmdb-key", Catalog::sample()).await;
    let indexer = MockTorznab::start(
        "console-indexer-key",
        Indexer { title: "Console Indexer", movie_params: Some("q,imdbid"), tv_params: None, items: Vec::new() },
    )
    .await;
    let qbt = QBittorrent::start().await;
    // torznab-3 is the file's; the console shows it and leaves it alone.
    let (host, downloads, library) = TestHost::with_a_file_indexer();
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    let base = capstan_tests::api::serve(app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    capstan::http::session::set_password(&db, "newcomer", "correct horse battery").await.unwrap();

    let browser = Browser::start().await;
    browser.sign_in(&root, "newcomer", "correct horse battery").await;
    browser.click("nav button[data-tab=services]").await;
    browser.wait_text("#services", "listed the services", |t| t.contains("TMDB") && t.contains("qBittorrent")).await;

    // The file's indexer is shown, not editable.
    let file_card = browser.text("fieldset[data-service='torznab-3']").await;
    assert!(file_card.contains("Set in capstan.toml"), "{file_card}");
    assert_eq!(browser.attr("#svc-torznab-3-url", "disabled").await.as_deref(), Some("true"));

    // TMDB: a wrong key says so; the right one is accepted.
    browser.fill("#svc-tmdb-url", &tmdb.base_url()).await;
    browser.fill("#svc-tmdb-secret", "not-the-key").await;
    browser.click("#svc-tmdb-save").await;
    browser.wait_text("#svc-tmdb-result", "saved", |t| t == "Saved.").await;
    browser.click("#svc-tmdb-test").await;
    browser.wait_text("#svc-tmdb-result", "said the key is wrong", |t| t.contains("refused the credential")).await;
    browser.fill("#svc-tmdb-secret", "console-tmdb-key").await;
    browser.click("#svc-tmdb-save").await;
    browser.wait_text("#svc-tmdb-result", "saved", |t| t == "Saved.").await;
    browser.click("#svc-tmdb-test").await;
    browser.wait_text("#svc-tmdb-result", "accepted", |t| t.contains("TMDB accepted the credential")).await;

    // The indexer is tried before it is saved, with what the form holds;
    // then saved. qBittorrent's version.
    browser.fill("#svc-torznab-url", &indexer.base_url()).await;
    browser.fill("#svc-torznab-secret", "console-indexer-key").await;
    browser.click("#svc-torznab-test").await;
    let said = browser
        .wait_text("#svc-torznab-result", "read the caps from the form's values", |t| t.contains("Console Indexer"))
        .await;
    assert!(said.contains("tested with the form's values, not saved"), "{said}");
    assert!(!app.setup().effective(caps.runtime().config()).await.unwrap().services.contains_key("torznab"));
    browser.click("#svc-torznab-save").await;
    browser.wait_text("#svc-torznab-result", "saved", |t| t == "Saved.").await;
    browser.fill("#svc-qbittorrent-url", &qbt.base_url()).await;
    browser.fill("#svc-qbittorrent-user", qbt.username()).await;
    browser.fill("#svc-qbittorrent-secret", qbt.password()).await;
    browser.click("#svc-qbittorrent-save").await;
    browser.wait_text("#svc-qbittorrent-result", "saved", |t| t == "Saved.").await;
    browser.click("#svc-qbittorrent-test").await;
    browser.wait_text("#svc-qbittorrent-result", "logged in", |t| t.contains("qBittorrent v")).await;

    // The folders, tried as typed, then saved: whether files can be
    // hard-linked between them.
    browser.fill("#root-downloads", downloads.to_str().unwrap()).await;
    browser.fill("#root-library", library.to_str().unwrap()).await;
    browser.click("#roots-test").await;
    let said = browser.wait_text("#roots-found", "tried the typed folders", |t| t.contains("can be hard-linked")).await;
    assert!(said.contains("library from the form, not saved"), "{said}");
    browser.click("#root-downloads-save").await;
    browser.wait_text("#root-downloads-result", "saved", |t| t.contains("Saved.")).await;
    browser.fill("#root-library", "not/absolute").await;
    browser.click("#root-library-save").await;
    browser.wait_text("#root-library-result", "refused", |t| t.contains("absolute path")).await;
    browser.fill("#root-library", library.to_str().unwrap()).await;
    browser.click("#root-library-save").await;
    browser.wait_text("#root-library-result", "saved", |t| t.contains("Saved.")).await;
    browser.click("#roots-test").await;
    browser.wait_text("#roots-found", "tested the folders", |t| t.contains("can be hard-linked")).await;

    // A reload shows what was saved, secrets only as set.
    browser.client.refresh().await.unwrap();
    browser.click("nav button[data-tab=services]").await;
    browser.wait_text("#services", "listed again", |t| t.contains("TMDB")).await;
    let url = browser.prop("#svc-tmdb-url", "value").await;
    assert_eq!(url.as_deref(), Some(tmdb.base_url().as_str()));
    assert_eq!(browser.attr("#svc-tmdb-secret", "placeholder").await.as_deref(), Some("set — leave empty to keep"));
    assert_eq!(caps.runtime().root_paths()["library"], library);

    // Forgetting a service removes it with its secret.
    browser.click("#svc-tmdb-forget").await;
    browser.wait_attr("#svc-tmdb-secret", "placeholder", "not set").await;
    let setup = app.setup().view(caps.runtime().config()).await.unwrap();
    let tmdb_now = setup["services"].as_array().unwrap().iter().find(|s| s["name"] == "tmdb").unwrap().clone();
    assert_eq!((tmdb_now["source"].as_str(), &tmdb_now["secretSet"]), (Some("unset"), &serde_json::json!(false)));
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_connects_transmission_instead_of_qbittorrent() {
    let daemon = capstan_tests::transmission::Transmission::start().await;
    let Walk { host: _host, browser, .. } = console::signed_in(TestHost::new()).await;
    browser.click("nav button[data-tab=services]").await;
    browser.wait_text("#services", "listed Transmission", |t| t.contains("Transmission")).await;

    browser.fill("#svc-transmission-url", &daemon.base_url()).await;
    browser.fill("#svc-transmission-user", daemon.username()).await;
    browser.fill("#svc-transmission-secret", "not-the-password").await;
    browser.click("#svc-transmission-test").await;
    browser.wait_text("#svc-transmission-result", "refused", |t| t.contains("refused the user and password")).await;
    browser.fill("#svc-transmission-secret", daemon.password()).await;
    browser.click("#svc-transmission-test").await;
    browser.wait_text("#svc-transmission-result", "answered", |t| t.contains("Transmission's RPC answered")).await;
    browser.click("#svc-transmission-save").await;
    browser.wait_text("#svc-transmission-result", "saved", |t| t == "Saved.").await;
    // The checklist counts it as the download client.
    let listed = browser.text("#checklist-items").await;
    assert!(listed.contains("✓ a download client"), "{listed}");
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_pastes_a_trackers_feed_url_and_the_passkey_stays_hidden() {
    use capstan_tests::mock_rss::{Listed, MockRss};
    let passkey = "c0ffee15900dfeed4321";
    let payload = capstan_tests::torrent::payload(20_000, 61);
    let files = tempfile::tempdir().unwrap();
    let dune = capstan_tests::torrent::single_file(files.path(), "Dune.Part.Two.2024.2160p.WEB-DL-FLUX.mkv", &payload);
    let tracker = MockRss::start(passkey, vec![Listed { torrent: dune, category: 2000, seeds: 12 }]).await;
    let Walk { host: _host, db, app, base, browser } = console::signed_in(TestHost::new()).await;
    browser.click("nav button[data-tab=services]").await;
    browser.wait_text("#services", "listed the feed", |t| t.contains("Tracker RSS feed")).await;

    // Something that is not a feed URL, then a wrong passkey, then the right one.
    browser.fill("#svc-rss-secret", "tracker.example/rss.php").await;
    browser.click("#svc-rss-test").await;
    browser.wait_text("#svc-rss-result", "not a URL", |t| t.contains("paste the feed's whole URL")).await;
    let feed = |key: &str| format!("{}/rss.php?passkey={key}&cat=2000", tracker.base_url());
    browser.fill("#svc-rss-secret", &feed("not-the-passkey")).await;
    browser.click("#svc-rss-test").await;
    browser.wait_text("#svc-rss-result", "refused", |t| t.contains("refused the feed (403)")).await;
    browser.fill("#svc-rss-secret", &feed(passkey)).await;
    browser.click("#svc-rss-test").await;
    let said = browser.wait_text("#svc-rss-result", "read it", |t| t.contains("the feed lists 1 release")).await;
    assert!(said.contains("Dune.Part.Two.2024.2160p.WEB-DL-FLUX"), "{said}");
    browser.click("#svc-rss-save").await;
    browser.wait_text("#svc-rss-result", "saved", |t| t == "Saved.").await;

    // The card shows the feed without its passkey, and so does the API.
    let shown = browser.text("fieldset[data-service=rss]").await;
    assert!(shown.contains(&format!("Reads {}/rss.php?cat=2000", tracker.base_url())), "{shown}");
    let page = browser.client.source().await.unwrap();
    assert!(!page.contains(passkey), "the page never holds the passkey");
    browser.close().await;
    let api = capstan_tests::api::Api::new(&base).signed_in(&db, "api-admin").await;
    let (_, setup) = api.send(reqwest::Method::GET, "/setup", serde_json::Value::Null).await;
    assert!(!setup.to_string().contains(passkey), "{setup}");

    // The feed sync's search reads it with the passkey the host adds.
    let origin = capstan::pipeline::Origin::cli(capstan::runtime::EffectClass::Read);
    let read = app.caps().invoke(&origin, "release.search", &serde_json::json!({"recent": true})).await.unwrap();
    let output = read.output.unwrap_or_else(|| panic!("{:?}", read.error));
    assert_eq!(output["releases"][0]["title"], "Dune.Part.Two.2024.2160p.WEB-DL-FLUX", "{output}");
    let asked = tracker.requests();
    let last = asked.last().unwrap();
    assert_eq!((last.0.as_str(), last.1["passkey"].as_str(), last.1["cat"].as_str()), ("/rss.php", passkey, "2000"));
}
