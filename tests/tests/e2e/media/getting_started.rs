//! docs/getting-started.md, followed step by step in a real Chromium: a
//! newcomer signs in to a Capstan that has nothing set up, follows the
//! setup checklist to the Services page, tries TMDB and an indexer (mock
//! servers on loopback) and a real qBittorrent with Test before saving
//! each, does the same with the folders (qBittorrent saves into the
//! downloads folder without being told), sees the checklist go, adds a
//! movie on the Library tab (a tab with its own address, kept by a reload
//! and left by Back), grants the automation, and watches the
//! background sweep search, download and put it in the library — ending
//! with the file there under the library's name for it.
//!
//! The server runs as `capstan serve` does: the API, a worker with the
//! acquisition handlers, and the sweep's schedule (every second here). The
//! movie comes over a real swarm: opentracker on loopback, a `.torrent`
//! made by mktorrent that the indexer serves only with its key, and a
//! second qbittorrent-nox seeding the data.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::store::Db;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::browser::Browser;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::mock_tmdb::{Catalog, MockTmdb};
use capstan_tests::mock_torznab::MockTorznab;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::swarm::Swarm;
use capstan_tests::torrent;

const RELEASE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";

/// Fills a service's card on the Services page, presses Test (which tries
/// what the form holds), and saves it once it passes.
async fn connect(browser: &Browser, service: &str, url: &str, user: Option<&str>, secret: &str, found: &str) {
    let id = |part: &str| format!("#svc-{service}-{part}");
    browser.fill(&id("url"), url).await;
    if let Some(user) = user {
        browser.fill(&id("user"), user).await;
    }
    browser.fill(&id("secret"), secret).await;
    browser.click(&id("test")).await;
    let said = browser.wait_text(&id("result"), "tested", |t| t.starts_with('✓') || t.starts_with('✗')).await;
    assert!(said.starts_with('✓') && said.contains(found), "{service}: {said}");
    assert!(said.contains("the form's values, not saved"), "{service}: {said}");
    browser.click(&id("save")).await;
    browser.wait_text(&id("result"), "saved", |t| t == "Saved.").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_follows_getting_started_and_the_movie_lands_in_the_library() {
    let payload = torrent::payload(2 << 20, 31);
    let swarm = Swarm::seeding(RELEASE, &payload).await;
    let qbt = QBittorrent::start().await;
    let tmdb = MockTmdb::start("newcomer-tmdb-key", Catalog::sample()).await;
    let indexer = MockTorznab::offering_dune("newcomer-indexer-key", "Newcomer's indexer", swarm.torrent()).await;
    indexer.require_key_for_downloads();

    // A first start: nothing set up but the built-in capabilities.
    let host = TestHost::new();
    let library = host.dir.path().join("library");
    std::fs::create_dir_all(&library).unwrap();
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();
    let config = WorkerConfig { poll: Duration::from_millis(100), ..WorkerConfig::default() };
    let mut worker = Worker::new(Tasks::new(db.clone()), "newcomer".into(), config);
    capstan::acquisition::register(&mut worker, &svc, app.settings());
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    let sweeps = tokio_util::sync::CancellationToken::new();
    let _stop_sweeps = sweeps.clone().drop_guard();
    // The sweeps often, the feeds at their default interval, as installed.
    let feeds = Some(Duration::from_secs(900));
    tokio::spawn(capstan::acquisition::schedule(svc.clone(), Duration::from_secs(1), feeds, &[], sweeps));
    let base = capstan_tests::api::serve(app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    // Step 2: the password, as `capstan admin set-password` sets it.
    capstan::http::session::set_password(&db, "admin", "a long passphrase").await.unwrap();

    // Step 3: sign in.
    let browser = Browser::start().await;
    browser.sign_in(&root, "admin", "a long passphrase").await;

    // The checklist says what is missing and leads to the Services page.
    let checklist = browser.wait_text("#checklist", "listed what is missing", |t| t.contains("qBittorrent")).await;
    assert!(
        checklist.contains("TMDB") && checklist.contains("indexer") && checklist.contains("folders"),
        "{checklist}"
    );
    browser.click("#checklist li[data-item=tmdb] button").await;

    // Step 4: the Services page — TMDB, the indexer, qBittorrent, the folders.
    browser.wait_text("#services", "listed the services", |t| t.contains("TMDB")).await;
    connect(&browser, "tmdb", &tmdb.base_url(), None, "newcomer-tmdb-key", "TMDB accepted").await;
    connect(&browser, "torznab", &indexer.base_url(), None, "newcomer-indexer-key", "Newcomer's indexer").await;
    let qbt_url = qbt.base_url();
    connect(&browser, "qbittorrent", &qbt_url, Some(qbt.username()), qbt.password(), "qBittorrent v").await;
    let downloads = qbt.downloads().display().to_string();
    for (name, path) in [("downloads", downloads.as_str()), ("library", library.to_str().unwrap())] {
        browser.fill(&format!("#root-{name}"), path).await;
    }
    browser.click("#roots-test").await;
    let said = browser.wait_text("#roots-found", "tested the folders", |t| t.contains("can be hard-linked")).await;
    assert!(said.contains("downloads from the form, not saved"), "{said}");
    for name in ["downloads", "library"] {
        browser.click(&format!("#root-{name}-save")).await;
        browser.wait_text(&format!("#root-{name}-result"), "saved", |t| t.contains("Saved.")).await;
    }
    // qBittorrent saves into the downloads folder unless told otherwise.
    let placeholder = browser.attr("#lib-save-path", "placeholder").await.unwrap_or_default();
    assert!(placeholder.contains(&downloads), "{placeholder}");
    browser.wait_attr("#checklist", "hidden", "true").await;

    // Step 5: add the movie. The Library tab has its own address: a
    // reload stays there, and Back returns to the Services page.
    browser.click("nav button[data-tab=library]").await;
    assert!(browser.client.current_url().await.unwrap().as_str().ends_with("#library"));
    browser.client.back().await.unwrap();
    browser.wait_attr("#tab-library", "hidden", "true").await;
    assert!(browser.shown("#tab-services").await, "Back shows the Services page");
    browser.client.forward().await.unwrap();
    browser.client.refresh().await.unwrap();
    browser.wait_text("#tab-library", "opened the Library tab again", |t| t.contains("Add title")).await;
    browser.fill("#add-query", "Dune").await;
    browser.click("#add-search-button").await;
    browser.wait_text("#add-results", "found it", |t| t.contains("Dune: Part Two (2024)")).await;
    browser.click("#add-results li[data-tmdb-id='693134'] .choose").await;
    browser.click("#add-quality option[value='2160p']").await;
    browser.click("#add-save").await;
    browser.wait_text("#add-done", "wanted it", |t| t.contains("Wanted: Dune: Part Two (2024)")).await;
    browser.wait_text("#library", "listed it as wanted", |t| t.contains("2160p wanted")).await;

    // Step 6: let the sweep fetch and import under standing grants.
    browser.click("nav button[data-tab=grants]").await;
    for action in ["policy.acquisition", "policy.library"] {
        browser.wait_text("#grant-action", "offered the policy", |t| t.contains(action)).await;
        browser.select("#grant-action", action).await;
        browser.click("#grant-create").await;
        browser.wait_text("#grants", "listed the grant", |t| t.contains(action)).await;
    }

    // Step 7: watch it arrive — the Library tab says so.
    browser.click("nav button[data-tab=library]").await;
    let started = Instant::now();
    loop {
        let shown = browser.text("#library").await;
        if shown.contains("2160p in the library") {
            break;
        }
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(120), "never in the library; the Library tab shows {shown:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    browser.click("nav button[data-tab=tasks]").await;
    // The list is read again on opening the tab; until that answer arrives
    // it may still show the import queued, so wait for the row to say so.
    let imported = |t: &str| t.lines().any(|row| row.contains("verifyAndImport") && row.contains("succeeded"));
    browser.wait_text("#tasks", "listed the import as succeeded", imported).await;

    // The file is in the library under its name, a hard link of the download.
    let placed = library.join("Dune - Part Two (2024)");
    let files: Vec<_> = std::fs::read_dir(&placed).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with("Dune - Part Two (2024)") && name.ends_with(".mkv"), "{name}");
    {
        use std::os::unix::fs::MetadataExt;
        let fetched = qbt.downloads().join(RELEASE);
        let (a, b) = (std::fs::metadata(&files[0]).unwrap(), std::fs::metadata(&fetched).unwrap());
        assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "a hard link of the download");
        assert_eq!(std::fs::read(&fetched).unwrap(), payload, "every byte came from the seeder");
    }
    assert!(indexer.keyed_downloads() >= 1, "the .torrent was fetched with the indexer's key");
    browser.close().await;
}
