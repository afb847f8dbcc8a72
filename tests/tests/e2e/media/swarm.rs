//! From wanted to imported over a real swarm, on both backends: Debian's
//! opentracker on loopback, a `.torrent` made by mktorrent, a second
//! qbittorrent-nox seeding the data, and an indexer whose `.torrent` link
//! answers 401 without its key. The sweep finds the release, the host
//! fetches the `.torrent` with the indexer's key and hands it to Capstan's
//! qBittorrent, which downloads every piece from the seeder (DHT, LSD and
//! PeX off: only the tracker brings them together); the sync sees it
//! complete and the import hard-links it into the library. The same for a
//! season pack (one torrent of six episodes) whose files fill every
//! episode.

use std::time::{Duration, Instant};

use capstan::acquisition::{EVALUATE_ACQUISITION, SYNC_DOWNLOADS};
use capstan::tasks::TaskStatus;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::mock_torznab::MockTorznab;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::swarm::Swarm;
use capstan_tests::torrent;
use serde_json::json;

use super::pipeline::{Env, run, start_on, wanted_movie};

const RELEASE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";

/// Long enough for a loaded two-core machine; a few megabytes move over
/// loopback in seconds.
const DEADLINE: Duration = Duration::from_secs(180);

async fn a_wanted_movie_is_downloaded_from_a_real_swarm_and_imported(backend: Backend) {
    let payload = torrent::payload(3 << 20, 77);
    let swarm = Swarm::seeding(RELEASE, &payload).await;
    let qbt = QBittorrent::start().await;
    assert!(!qbt.downloads().join(RELEASE).exists(), "Capstan's client starts without the data");
    let env = start_on(backend, &qbt, &swarm.torrent).await;
    env.indexer.require_key_for_downloads();
    let slot = wanted_movie(&env).await;
    capstan_tests::grants::allow_everything(&env.svc).await;

    let evaluated = run(&env, EVALUATE_ACQUISITION, json!({})).await;
    assert_eq!(evaluated.status, TaskStatus::Succeeded, "{:?}", evaluated.last_error);
    let outcome = &evaluated.result.clone().unwrap()["slots"][0];
    assert_eq!(outcome["outcome"], "submitted", "{outcome}");
    assert_eq!(env.indexer.keyed_downloads(), 1, "the host fetched the .torrent with the indexer's key");
    let plan = env.svc.domain.plan(outcome["planId"].as_str().unwrap()).await.unwrap();
    assert_eq!(plan.payload["handOff"]["kind"], "torrent-link", "{:?}", plan.payload);

    follow_to_import(&env, &slot.id, &plan.id).await;

    // Every byte came from the seeder, and the library holds a hard link.
    let fetched = qbt.downloads().join(RELEASE);
    assert_eq!(std::fs::read(&fetched).unwrap(), payload, "the downloaded file is the seeder's");
    let placed = env.library.join("Dune - Part Two (2024)");
    let files: Vec<_> = std::fs::read_dir(&placed).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (std::fs::metadata(&files[0]).unwrap(), std::fs::metadata(&fetched).unwrap());
    assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "a hard link of the download");
    assert!(swarm.complete_peers().await >= 1);
}

both_backends!(a_wanted_movie_is_downloaded_from_a_real_swarm_and_imported);

/// Syncs as the swarm delivers the plan's download until the slot is
/// satisfied (completing queues the import, which the worker runs).
async fn follow_to_import(env: &Env, slot_id: &str, plan_id: &str) {
    let started = Instant::now();
    let mut seen = Vec::new();
    loop {
        run(env, SYNC_DOWNLOADS, json!({})).await;
        let now = env.svc.domain.slot(slot_id).await.unwrap();
        if let Some(download) = env.svc.domain.download_for_plan(plan_id).await.unwrap()
            && seen.last() != Some(&download.status)
        {
            seen.push(download.status);
        }
        if now.status == capstan::domain::SlotStatus::Satisfied {
            break;
        }
        assert!(started.elapsed() < DEADLINE, "never imported; the download went {seen:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let download = env.svc.domain.download_for_plan(plan_id).await.unwrap().unwrap();
    assert_eq!((download.status.as_str(), download.progress), ("imported", 1.0), "went {seen:?}");
}

const PACK: &str = "Dune.Prophecy.S01.1080p.WEB-DL.DDP5.1.H.264-FLUX";

async fn a_season_pack_from_the_swarm_fills_its_episodes(backend: Backend) {
    use super::series_env::{start_with_tmdb, task_result, tv_indexer, tv_item, want};
    let files: Vec<(String, Vec<u8>)> = (1..=6)
        .map(|e| {
            (format!("Dune.Prophecy.S01E0{e}.1080p.WEB-DL.DDP5.1.H.264-FLUX.mkv"), torrent::payload(1 << 20, 80 + e))
        })
        .collect();
    let files: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let swarm = Swarm::seeding_folder(PACK, &files).await;
    let qbt = QBittorrent::start().await;
    let indexer =
        MockTorznab::start("indexer-key", tv_indexer(vec![tv_item(PACK, &swarm.torrent.info_hash, 90228, None, 5)]))
            .await;
    indexer.serve_torrent(0, swarm.torrent.bytes.clone());
    let (env, _tmdb) = start_with_tmdb(backend, &qbt, indexer).await;

    let wanted = want(&env, json!({"action": "add", "tmdbId": 90228, "kind": "tv", "quality": "1080p"})).await;
    let prophecy = wanted["entity"]["id"].as_str().unwrap().to_string();
    let slot_id = wanted["slots"][0]["id"].as_str().unwrap().to_string();
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot_id})).await;
    assert_eq!(swept["slots"][0]["outcome"], "submitted", "{swept}");
    follow_to_import(&env, &slot_id, swept["slots"][0]["planId"].as_str().unwrap()).await;

    // Every episode came from the seeder and has its file in the library.
    for (name, bytes) in &files {
        assert_eq!(&std::fs::read(qbt.downloads().join(PACK).join(name)).unwrap(), bytes, "{name}");
    }
    let episodes = env.svc.domain.episodes(&prophecy).await.unwrap();
    assert_eq!(episodes.len(), 6);
    for episode in &episodes {
        let file = episode.file.as_deref().unwrap_or_else(|| panic!("{episode:?}"));
        assert!(env.library.join(file).is_file(), "{file}");
    }
}

both_backends!(a_season_pack_from_the_swarm_fills_its_episodes);
