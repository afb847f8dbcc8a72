//! A newcomer in a real Chromium gets titles into the library: searches
//! TMDB (a mock on loopback) from the Library tab, sees posters and years
//! (from TMDB's image host, then from a mirror the settings name),
//! picks a movie and a quality and wants it, is offered the grants that let
//! it arrive unattended (for that title alone), is told clearly when it is
//! already wanted, wants one season of a series, sees its row say that a
//! plan waits for approval (with the way there) and then what qBittorrent
//! says of the download, and stops wanting a title.

use capstan_tests::browser::Browser;
use capstan_tests::db::Backend;

use crate::media::titles::env;

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_adds_a_movie_and_a_series_from_the_console() {
    let env = env(Backend::Sqlite).await;
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    capstan::http::session::set_password(&env.db, "newcomer", "correct horse battery").await.unwrap();
    let browser = Browser::start().await;
    browser.sign_in(&root, "newcomer", "correct horse battery").await;
    browser.click("nav button[data-tab=library]").await;

    // Search, see what TMDB knows, pick the movie, want it at 2160p.
    browser.fill("#add-query", "Dune").await;
    browser.click("#add-search-button").await;
    let results =
        browser.wait_text("#add-results", "listed TMDB's matches", |t| t.contains("Dune: Part Two (2024)")).await;
    assert!(results.contains("Dune: Prophecy (2024)") && results.contains("series"), "{results}");
    let poster = browser.attr("#add-results li[data-tmdb-id='693134'] img", "src").await.unwrap();
    assert_eq!(poster, "https://image.tmdb.org/t/p/w92/poster-693134.jpg");
    browser.click("#add-results li[data-tmdb-id='693134'] .choose").await;
    browser.wait_text("#add-picked", "showed the pick", |t| t == "Dune: Part Two (2024)").await;
    assert!(!browser.shown("#add-seasons").await, "a movie has no seasons to pick");
    browser.click("#add-quality option[value='2160p']").await;
    browser.click("#add-save").await;
    browser.wait_text("#add-done", "confirmed", |t| t.contains("Wanted: Dune: Part Two (2024)")).await;
    browser
        .wait_text("#library", "listed it", |t| t.contains("Dune: Part Two (2024)") && t.contains("2160p wanted"))
        .await;

    // The grants that let it arrive unattended are offered, for it alone.
    assert!(browser.shown("#add-unattended").await, "the offer follows Want it");
    browser.click("#add-grant").await;
    browser
        .wait_text("#add-done", "said what it granted", |t| {
            t.contains("Granted download.submit, organize.execute, organize.replace")
        })
        .await;
    let dune = env.svc.domain.entities(Some(capstan::domain::EntityKind::Movie), 10).await.unwrap().remove(0);
    let grants = env.svc.authz.grants().await.unwrap();
    let mut granted: Vec<(&str, &[String])> =
        grants.iter().map(|g| (g.action.as_str(), g.scope.entity_ids.as_slice())).collect();
    granted.sort();
    let only_dune = std::slice::from_ref(&dune.id);
    assert_eq!(
        granted,
        [("download.submit", only_dune), ("organize.execute", only_dune), ("organize.replace", only_dune)]
    );

    // Posters from a mirror the settings name: the page's policy admits it.
    let mirror = serde_json::json!({"library.poster_base_url": "https://posters.example:8443/t/p/w92/"});
    env.app.settings().update(mirror.as_object().unwrap()).await.unwrap();
    let page = reqwest::get(format!("{root}/")).await.unwrap();
    let policy = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(policy.contains("img-src 'self' https://image.tmdb.org https://posters.example:8443;"), "{policy}");

    // The same again is refused, with the reason, next to the form.
    browser.fill("#add-query", "Dune").await;
    browser.click("#add-search-button").await;
    browser.wait_text("#add-results", "listed it again", |t| t.contains("Dune: Part Two (2024)")).await;
    let poster = browser.attr("#add-results li[data-tmdb-id='693134'] img", "src").await.unwrap();
    assert_eq!(poster, "https://posters.example:8443/t/p/w92/poster-693134.jpg");
    browser.click("#add-results li[data-tmdb-id='693134'] .choose").await;
    browser.wait_text("#add-picked", "showed the pick", |t| t == "Dune: Part Two (2024)").await;
    browser.click("#add-save").await;
    browser.wait_text("#add-error", "said why", |t| t.contains("is already wanted")).await;

    // A series: its seasons are offered, the specials unticked.
    browser.fill("#add-query", "Shogun").await;
    browser.click("#add-kind option[value='tv']").await;
    browser.click("#add-search-button").await;
    browser.wait_text("#add-results", "found the series", |t| t.contains("Shōgun (2024)")).await;
    browser.click("#add-results li[data-tmdb-id='126308'] .choose").await;
    let seasons = browser.wait_text("#add-seasons", "offered the seasons", |t| t.contains("Season 1")).await;
    assert!(seasons.contains("Specials"), "{seasons}");
    browser.click("#add-quality option[value='1080p']").await;
    browser.click("#add-save").await;
    browser
        .wait_text("#library", "listed the season", |t| {
            t.contains("Shōgun (2024)") && t.contains("season 1 1080p wanted")
        })
        .await;
    let slots = env.svc.domain.slots_with_status(capstan::domain::SlotStatus::Wanted, 100).await.unwrap();
    assert_eq!(slots.iter().filter(|s| s.season == Some(0)).count(), 0, "the specials were not wanted");
    let season_one = slots.into_iter().find(|s| s.season == Some(1)).unwrap();
    browser.wait_text("#add-done", "announced the series", |t| t.contains("Wanted: Shōgun (2024)")).await;

    // The season's line counts its episodes; its list wants them one by one.
    let series_row = format!("#library tr[data-entity-id='{}']", season_one.entity_id);
    let counted = |t: &str| t.contains("(0 of 10 episodes, 10 missing)");
    browser.wait_text(&series_row, "counted the episodes", counted).await;
    browser.click(&format!("{series_row} .episodes-toggle")).await;
    let list = format!("{series_row} .episode-list");
    let listed = browser.wait_text(&list, "listed the episodes", |t| t.contains("E10 A Dream of a Dream")).await;
    assert!(listed.contains("E02 Servants of Two Masters · 2024-02-27 · missing"), "{listed}");
    browser.click(&format!("{list} li[data-episode='10'] input")).await;
    let nine = |t: &str| t.contains("(0 of 9 episodes, 9 missing)");
    browser.wait_text(&series_row, "stopped wanting episode 10", nine).await;
    browser.wait_text(&format!("{list} li[data-episode='10']"), "said so", |t| t.contains("not wanted")).await;

    // The sweep drafts a plan it may not submit: the row says it waits for
    // approval and leads there, the tab counts it, the banner has done its job.
    let domain = &env.svc.domain;
    let release = domain
        .record_release(&capstan::domain::NewRelease {
            indexer: "torznab".into(),
            title: "Shogun.2024.S01.1080p.WEB.h264-ETHEL".into(),
            parsed: serde_json::json!({"title": "Shogun", "year": 2024, "seasons": [1]}),
            size: Some(30_000_000_000),
            infohash: Some("e".repeat(40)),
            download_url: None,
            magnet_url: None,
        })
        .await
        .unwrap();
    let series = season_one.entity_id.clone();
    domain
        .match_identity(&release.id, Some(&series), capstan::domain::IdentityStatus::Resolved, &serde_json::json!({}))
        .await
        .unwrap();
    let sweep = capstan::domain::Author::new("task:evaluateAcquisition");
    let new = capstan::domain::NewPlan { slot_id: season_one.id.clone(), source_release_id: release.id, note: None };
    let plan = domain.draft_plan(&sweep, &new).await.unwrap();
    let row = format!("#library tr[data-entity-id='{series}']");
    let waiting = |t: &str| t.contains("waiting for your approval: Shogun.2024.S01.1080p.WEB.h264-ETHEL");
    browser.wait_text(&row, "said the plan waits for approval", waiting).await;
    browser.wait_text("#add-done", "cleared the banner", str::is_empty).await;
    browser.wait_text("nav button[data-tab=approvals]", "counted the draft", |t| t == "Approvals (1)").await;
    browser.click(&format!("{row} button.link")).await;
    browser.wait_text("#drafts", "opened the approvals", |t| t.contains(&plan.id)).await;

    // Handed to qBittorrent: the row shows what the client says of it.
    domain.reserve_plan(&plan.id).await.unwrap();
    let (_, download) = domain.mark_submitted(&plan.id, &"e".repeat(40)).await.unwrap();
    let view = capstan::domain::ClientView {
        state: Some("downloading"),
        download_speed: Some(1_572_864),
        seeds: Some(3),
        eta_seconds: Some(600),
    };
    domain
        .update_download(&download.id, capstan::domain::DownloadStatus::Downloading, 0.42, None, Some(&view))
        .await
        .unwrap();
    browser.click("nav button[data-tab=library]").await;
    let shown = browser.wait_text(&row, "showed the download", |t| t.contains("downloading 42%")).await;
    for said in ["1.5 MB/s", "3 seeds", "10 min left", "qBittorrent: downloading", "season 1 1080p being fetched"] {
        assert!(shown.contains(said), "{said:?} is not in {shown:?}");
    }
    // The calendar lists today's grab.
    let grabbed = |t: &str| t.contains("grabbed Shogun.2024.S01.1080p.WEB.h264-ETHEL for Shōgun");
    browser.wait_text("#calendar", "listed the grab", grabbed).await;

    // Search for the movie now, then stop wanting it.
    let movie = env.svc.domain.entities(Some(capstan::domain::EntityKind::Movie), 10).await.unwrap().remove(0);
    let movie_row = format!("#library tr[data-entity-id='{}']", movie.id);
    browser.click(&format!("{movie_row} .search-now")).await;
    let searching = |t: &str| t == "Searching the indexers for Dune: Part Two now.";
    browser.wait_text("#library-done", "said it searches", searching).await;
    browser.click(&format!("#library tr[data-entity-id='{}'] .unwant", movie.id)).await;
    browser.wait_text("#library", "gave it up", |t| t.contains("2160p not wanted")).await;
    browser.close().await;
}
