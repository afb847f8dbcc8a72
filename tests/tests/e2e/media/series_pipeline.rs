//! A series through the acquisition pipeline, on both backends, with a
//! real qBittorrent: a season with every episode missing is fetched as a
//! season pack (not the one-episode release beside it) and the pack's
//! files fill its episodes, each named as media servers read them; a
//! season missing one episode searches for that episode alone, imports it,
//! and is satisfied; wanting another episode makes the season wanted again,
//! and the sweep searches for that one without fetching again what it has.

use capstan::acquisition::{EVALUATE_ACQUISITION, REFRESH_SERIES};
use capstan::domain::{EpisodeState, SlotStatus};
use capstan::tasks::TaskStatus;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::mock_torznab::MockTorznab;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use serde_json::{Value, json};

use super::pipeline::{Env, await_import, run};
use super::series_env::{start_with_tmdb, task_result, tv_indexer, tv_item, want};

const PACK: &str = "Dune.Prophecy.S01.1080p.WEB-DL.DDP5.1.H.264-FLUX";
const PROPHECY_E01: &str = "Dune.Prophecy.S01E01.1080p.WEB-DL.DDP5.1.H.264-NTb.mkv";
const SHOGUN_E02: &str = "Shogun.2024.S01E02.1080p.WEB-DL.DDP5.1.H.264-FLUX.mkv";

/// The sweep over one slot: its outcome.
async fn evaluate(env: &Env, slot_id: &str) -> Value {
    task_result(env, EVALUATE_ACQUISITION, json!({ "slotId": slot_id })).await["slots"][0].clone()
}

async fn a_season_pack_fills_its_episodes_and_a_lone_episode_is_fetched_alone(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let files: Vec<(String, Vec<u8>)> = (1..=6)
        .map(|e| {
            (format!("Dune.Prophecy.S01E0{e}.1080p.WEB-DL.DDP5.1.H.264-FLUX.mkv"), torrent::payload(20_000, 60 + e))
        })
        .collect();
    let files: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let pack = torrent::multi_file(&qbt.downloads(), PACK, &files);
    let single = torrent::single_file(&qbt.downloads(), PROPHECY_E01, &torrent::payload(20_000, 70));
    let shogun = torrent::single_file(&qbt.downloads(), SHOGUN_E02, &torrent::payload(20_000, 71));
    let indexer = tv_indexer(vec![
        tv_item(PACK, &pack.info_hash, 90228, None, 5),
        tv_item(PROPHECY_E01, &single.info_hash, 90228, Some(1), 50),
        tv_item(SHOGUN_E02, &shogun.info_hash, 126308, Some(2), 9),
    ]);
    let indexer = MockTorznab::start("indexer-key", indexer).await;
    for (n, built) in [&pack, &single, &shogun].into_iter().enumerate() {
        indexer.serve_torrent(n, built.bytes.clone());
    }
    let (env, _tmdb) = start_with_tmdb(backend, &qbt, indexer).await;

    // Every episode of Dune: Prophecy's season is missing: the pack gives
    // them all, the better-seeded single episode only one.
    let wanted = want(&env, json!({"action": "add", "tmdbId": 90228, "kind": "tv", "quality": "1080p"})).await;
    let prophecy = wanted["entity"]["id"].as_str().unwrap().to_string();
    let slot_id = wanted["slots"][0]["id"].as_str().unwrap().to_string();
    let outcome = evaluate(&env, &slot_id).await;
    assert_eq!(outcome["outcome"], "submitted", "{outcome}");
    let plan = env.svc.domain.plan(outcome["planId"].as_str().unwrap()).await.unwrap();
    assert_eq!(env.svc.domain.release(&plan.source_release_id).await.unwrap().title, PACK);
    let download = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    let organization = await_import(&env, &download.id).await;
    let mut placed: Vec<&str> =
        organization.items.as_array().unwrap().iter().map(|i| i["destination"].as_str().unwrap()).collect();
    placed.sort();
    assert_eq!(placed.len(), 6, "{placed:?}");
    assert_eq!(placed[0], "Dune - Prophecy (2024)/Season 01/Dune - Prophecy - S01E01 - Episode 1.mkv");
    assert!(placed.iter().all(|p| env.library.join(p).is_file()), "{placed:?}");
    let episodes = env.svc.domain.episodes(&prophecy).await.unwrap();
    assert!(episodes.iter().all(|e| e.state == EpisodeState::Have), "{episodes:?}");
    assert_eq!(episodes[5].file.as_deref(), Some(placed[5]));
    assert_eq!(env.svc.domain.slot(&slot_id).await.unwrap().status, SlotStatus::Satisfied);

    // Shōgun's season wants only its second episode: that one is searched
    // for and fetched alone, and the season is then whole.
    let wanted = want(&env, json!({"action": "add", "tmdbId": 126308, "kind": "tv", "quality": "1080p"})).await;
    let shogun_id = wanted["entity"]["id"].as_str().unwrap().to_string();
    let slot_id = wanted["slots"][0]["id"].as_str().unwrap().to_string();
    let others = json!({"action": "monitor", "entityId": shogun_id, "season": 1, "monitored": false,
        "episodes": [1, 3, 4, 5, 6, 7, 8, 9, 10]});
    want(&env, others).await;
    let outcome = evaluate(&env, &slot_id).await;
    assert_eq!(outcome["outcome"], "submitted", "{outcome}");
    let searched = env.indexer.searches();
    assert!(searched.iter().any(|s| s.get("ep").map(String::as_str) == Some("2")), "{searched:?}");
    let plan = env.svc.domain.plan(outcome["planId"].as_str().unwrap()).await.unwrap();
    let download = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    let organization = await_import(&env, &download.id).await;
    assert_eq!(
        organization.items[0]["destination"],
        "Shōgun (2024)/Season 01/Shōgun - S01E02 - Servants of Two Masters.mkv"
    );
    let episodes = env.svc.domain.episodes(&shogun_id).await.unwrap();
    assert_eq!(episodes[1].state, EpisodeState::Have, "{episodes:?}");
    assert_eq!(env.svc.domain.slot(&slot_id).await.unwrap().status, SlotStatus::Satisfied);

    // Wanting episode 3 makes the season wanted again; the sweep asks for
    // episode 3 and does not fetch episode 2 a second time.
    let third = json!({"action": "monitor", "entityId": shogun_id, "season": 1, "monitored": true, "episodes": [3]});
    want(&env, third).await;
    assert_eq!(env.svc.domain.slot(&slot_id).await.unwrap().status, SlotStatus::Wanted);
    let outcome = evaluate(&env, &slot_id).await;
    assert_eq!(outcome["outcome"], "no-match", "{outcome}");
    let last = env.indexer.searches().last().cloned().unwrap();
    assert_eq!(last.get("ep").map(String::as_str), Some("3"), "{last:?}");
    let inventory = serde_json::to_value(env.svc.domain.inventory(None, 100).await.unwrap()).unwrap();
    let season = inventory["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["entity"]["id"] == shogun_id.as_str())
        .map(|i| i["slots"][0]["episodes"].clone())
        .unwrap();
    assert_eq!(season, json!({"total": 10, "have": 1, "missing": 1, "notAired": 0, "unmonitored": 8}));

    // TMDB read again: an episode the store does not have (as one announced
    // after the season was wanted) is recorded and wanted with its season,
    // a changed air date is read again, and what the library holds is kept.
    let pool = env.svc.db.pool.clone();
    sqlx::query("DELETE FROM media_episode WHERE entity_id = $1 AND season = 1 AND episode = 10")
        .bind(&shogun_id)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE media_episode SET air_date = '2030-01-01' WHERE entity_id = $1 AND season = 1 AND episode = 9")
        .bind(&shogun_id)
        .execute(&pool)
        .await
        .unwrap();
    let refreshed = run(&env, REFRESH_SERIES, json!({})).await;
    assert_eq!(refreshed.status, TaskStatus::Succeeded, "{:?}", refreshed.last_error);
    let series = refreshed.result.unwrap()["series"].clone();
    assert!(series.as_array().unwrap().iter().all(|s| s["outcome"] == "refreshed"), "{series}");
    let episodes = env.svc.domain.episodes(&shogun_id).await.unwrap();
    assert_eq!(episodes.len(), 10);
    assert_eq!((episodes[9].title.as_deref(), episodes[9].monitored), (Some("A Dream of a Dream"), true));
    assert_eq!(episodes[8].air_date.as_deref(), Some("2024-04-16"));
    assert!(!episodes[8].monitored, "a known episode keeps its monitoring");
    assert_eq!(episodes[1].state, EpisodeState::Have, "a known episode keeps its file");
}

both_backends!(a_season_pack_fills_its_episodes_and_a_lone_episode_is_fetched_alone);
