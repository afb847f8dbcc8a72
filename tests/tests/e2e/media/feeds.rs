//! The indexers' feeds and when the sweep searches, on both backends, with
//! a real qBittorrent: a feed read offers its new releases to every wanted
//! slot of their title at once (a wanted episode in the feed is fetched
//! without a search for it), passes over listings of titles nobody wants
//! and, next time, what it has seen; the sweep searches a slot when it is
//! new and then leaves it to the feeds until someone asks; the calendar
//! lists the wanted episodes of a span and what was grabbed in it.

use std::time::{Duration, Instant};

use capstan::acquisition::{EVALUATE_ACQUISITION, SYNC_FEEDS};
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::mock_torznab::MockTorznab;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use reqwest::Method;
use serde_json::{Value, json};

use super::series_env::{start_with_tmdb, task_result, tv_indexer, tv_item, want};

const SHOGUN_E02: &str = "Shogun.2024.S01E02.1080p.WEB-DL.DDP5.1.H.264-FLUX.mkv";
const UNWANTED: &str = "Some.Other.Show.S03E04.1080p.WEB-DL.DDP5.1.H.264-FLUX.mkv";

async fn feeds_offer_what_is_new_and_the_sweep_searches_only_when_due(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let shogun = torrent::single_file(&qbt.downloads(), SHOGUN_E02, &torrent::payload(20_000, 81));
    let other = torrent::single_file(&qbt.downloads(), UNWANTED, &torrent::payload(20_000, 82));
    let indexer = tv_indexer(vec![
        tv_item(SHOGUN_E02, &shogun.info_hash, 126308, Some(2), 9),
        tv_item(UNWANTED, &other.info_hash, 555, Some(4), 9),
    ]);
    let indexer = MockTorznab::start("indexer-key", indexer).await;
    indexer.serve_torrent(0, shogun.bytes.clone());
    indexer.serve_torrent(1, other.bytes.clone());
    let (env, _tmdb) = start_with_tmdb(backend, &qbt, indexer).await;

    // Shōgun's season wants only its second episode, which the feed lists.
    let wanted = want(&env, json!({"action": "add", "tmdbId": 126308, "kind": "tv", "quality": "1080p"})).await;
    let shogun_id = wanted["entity"]["id"].as_str().unwrap().to_string();
    let slot_id = wanted["slots"][0]["id"].as_str().unwrap().to_string();
    want(
        &env,
        json!({"action": "monitor", "entityId": shogun_id, "season": 1, "monitored": false,
        "episodes": [1, 3, 4, 5, 6, 7, 8, 9, 10]}),
    )
    .await;
    let synced = task_result(&env, SYNC_FEEDS, json!({})).await;
    assert_eq!((synced["releases"].as_u64(), synced["new"].as_u64()), (Some(2), Some(1)), "{synced}");
    assert_eq!(synced["slots"][0]["slotId"], slot_id.as_str(), "{synced}");
    assert_eq!(synced["slots"][0]["outcome"], "submitted", "{synced}");
    let read = env.indexer.searches();
    assert_eq!(read.len(), 1, "one feed read and no search: {read:?}");
    assert!(["q", "season", "ep", "tmdbid"].iter().all(|p| !read[0].contains_key(*p)), "{read:?}");
    assert!(
        env.svc.domain.release_by_infohash(&other.info_hash).await.unwrap().is_none(),
        "a listing of a title nobody wants is not even recorded"
    );
    // With Shōgun being fetched nothing is wanted, and the feed is not read.
    let idle = task_result(&env, SYNC_FEEDS, json!({})).await;
    assert_eq!(idle["outcome"], "nothing-wanted", "{idle}");
    assert_eq!(env.indexer.searches().len(), 1, "not read");

    // Something wanted again: read again, the feed has nothing new for it.
    let prophecy = want(&env, json!({"action": "add", "tmdbId": 90228, "kind": "tv", "quality": "1080p"})).await;
    let prophecy_id = prophecy["entity"]["id"].as_str().unwrap().to_string();
    let again = task_result(&env, SYNC_FEEDS, json!({})).await;
    assert_eq!((again["new"].as_u64(), again["slots"].as_array().map(Vec::len)), (Some(0), Some(0)), "{again}");

    // A new title is searched by the sweep once, then left to the feeds.
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({})).await;
    assert_eq!(swept["slots"].as_array().unwrap().len(), 1, "{swept}");
    assert_eq!(swept["slots"][0]["outcome"], "no-match", "{swept}");
    let searches = env.indexer.searches().len();
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({})).await;
    assert_eq!(swept["slots"], json!([]), "nothing is due: {swept}");
    assert_eq!(env.indexer.searches().len(), searches, "no search was made");
    // Had it last been searched before its episodes aired (2024-11-17),
    // it would be due again.
    let prophecy_slot = prophecy["slots"][0]["id"].as_str().unwrap().to_string();
    let searched_on = |day: &'static str| {
        let pool = env.svc.db.pool.clone();
        let slot = prophecy_slot.clone();
        async move {
            sqlx::query("UPDATE media_slot SET searched_on = $1 WHERE id = $2")
                .bind(day)
                .bind(slot)
                .execute(&pool)
                .await
                .unwrap();
        }
    };
    searched_on("2024-11-01").await;
    let due: Vec<String> = env.svc.domain.slots_due_for_search(50).await.unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(due, std::slice::from_ref(&prophecy_slot), "an episode aired since its last search");
    searched_on("2024-11-17").await;
    assert!(env.svc.domain.slots_due_for_search(50).await.unwrap().is_empty(), "none aired after that day");

    // Asked, it searches at once.
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.svc.db, "admin").await;
    let (status, queued) =
        admin.send(Method::POST, &format!("/library/titles/{prophecy_id}/search"), Value::Null).await;
    assert_eq!(status, 202, "{queued}");
    assert_eq!(queued["tasks"][0]["kind"], EVALUATE_ACQUISITION);
    let started = Instant::now();
    while env.indexer.searches().len() == searches {
        assert!(started.elapsed() < Duration::from_secs(60), "the asked-for search never ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, refused) = admin.send(Method::POST, &format!("/library/titles/{shogun_id}/search"), Value::Null).await;
    assert_eq!(status, 409, "nothing of Shōgun is wanted now it is being fetched: {refused}");

    // The calendar: the wanted episode on its day, and today's grab.
    let (status, calendar) = admin.send(Method::GET, "/calendar?from=2024-02-20&to=2024-03-10", Value::Null).await;
    assert_eq!(status, 200, "{calendar}");
    // Only the wanted episode: the first aired the same day and is not wanted.
    let listed: Vec<(&str, &str, i64)> = calendar["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["airDate"].as_str().unwrap(), e["series"].as_str().unwrap(), e["episode"].as_i64().unwrap()))
        .collect();
    assert_eq!(listed, [("2024-02-27", "Shōgun", 2)], "{calendar}");
    let (_, now) = admin.send(Method::GET, "/calendar", Value::Null).await;
    assert_eq!(now["grabbed"][0]["release"], SHOGUN_E02, "{now}");
    for bad in [
        "/calendar?from=2024-02-30",
        "/calendar?from=2024-03-10&to=2024-03-01",
        "/calendar?from=2024-01-01&to=2024-12-31",
    ] {
        let (status, answer) = admin.send(Method::GET, bad, Value::Null).await;
        assert_eq!(status, 422, "{bad}: {answer}");
    }
}

both_backends!(feeds_offer_what_is_new_and_the_sweep_searches_only_when_due);
