//! From wanted to imported over a real swarm, on both backends: Debian's
//! opentracker on loopback, a `.torrent` made by mktorrent, a second
//! qbittorrent-nox seeding the data, and an indexer whose `.torrent` link
//! answers 401 without its key. The sweep finds the release, the host
//! fetches the `.torrent` with the indexer's key and hands it to Capstan's
//! qBittorrent, which downloads every piece from the seeder (DHT, LSD and
//! PeX off: only the tracker brings them together); the sync sees it
//! complete and the import hard-links it into the library. The same for a
//! season pack (one torrent of six episodes) whose files fill every
//! episode; for an upgrade (a 720p release below the cutoff, then a 1080p
//! one from the feed, both from the seeder, the 720p file recycled); and
//! with Transmission as the client, the tracker and seeder on the machine's
//! network address because Transmission refuses loopback peers.

use std::path::Path;
use std::time::{Duration, Instant};

use capstan::acquisition::{EVALUATE_ACQUISITION, SYNC_DOWNLOADS, SYNC_FEEDS};
use capstan::domain::{DownloadStatus, NewSlot, SlotStatus};
use capstan::tasks::TaskStatus;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::host::TestHost;
use capstan_tests::mock_torznab::{Indexer, MockTorznab};
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::swarm::{Seed, Swarm};
use capstan_tests::torrent;
use capstan_tests::transmission::Transmission;
use serde_json::json;

use super::pipeline::{Env, run, start_on, start_with, start_with_client, wanted_movie};
use super::series_env::task_result;
use super::upgrades::{files_under, movie_item, publish_profile};

const RELEASE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";

/// Long enough for a loaded two-core machine; a few megabytes move over
/// loopback in seconds.
const DEADLINE: Duration = Duration::from_secs(180);

async fn a_wanted_movie_is_downloaded_from_a_real_swarm_and_imported(backend: Backend) {
    let payload = torrent::payload(3 << 20, 77);
    let swarm = Swarm::seeding(RELEASE, &payload).await;
    let qbt = QBittorrent::start().await;
    assert!(!qbt.downloads().join(RELEASE).exists(), "Capstan's client starts without the data");
    let env = start_on(backend, &qbt, swarm.torrent()).await;
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

    follow_to_import(&env, &plan.id).await;
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Satisfied);

    // Every byte came from the seeder, and the library holds a hard link.
    let fetched = qbt.downloads().join(RELEASE);
    assert_eq!(std::fs::read(&fetched).unwrap(), payload, "the downloaded file is the seeder's");
    assert_linked_into(&env.library, "Dune - Part Two (2024)", &fetched);
    assert!(swarm.complete_peers().await >= 1);
}

both_backends!(a_wanted_movie_is_downloaded_from_a_real_swarm_and_imported);

/// Syncs as the swarm delivers the plan's download until it is imported
/// (completing queues the import, which the worker runs).
async fn follow_to_import(env: &Env, plan_id: &str) {
    let started = Instant::now();
    let mut seen = Vec::new();
    loop {
        run(env, SYNC_DOWNLOADS, json!({})).await;
        if let Some(download) = env.svc.domain.download_for_plan(plan_id).await.unwrap() {
            if seen.last() != Some(&download.status) {
                seen.push(download.status);
            }
            if download.status == DownloadStatus::Imported {
                assert_eq!(download.progress, 1.0, "went {seen:?}");
                return;
            }
        }
        assert!(started.elapsed() < DEADLINE, "never imported; the download went {seen:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The one file in the library folder `folder`, as a hard link of `fetched`.
fn assert_linked_into(library: &Path, folder: &str, fetched: &Path) {
    use std::os::unix::fs::MetadataExt;
    let files: Vec<_> = std::fs::read_dir(library.join(folder)).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let (a, b) = (std::fs::metadata(&files[0]).unwrap(), std::fs::metadata(fetched).unwrap());
    assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "a hard link of the download");
}

const PACK: &str = "Dune.Prophecy.S01.1080p.WEB-DL.DDP5.1.H.264-FLUX";

async fn a_season_pack_from_the_swarm_fills_its_episodes(backend: Backend) {
    use super::series_env::{start_with_tmdb, tv_indexer, tv_item, want};
    let files: Vec<(String, Vec<u8>)> = (1..=6)
        .map(|e| {
            (format!("Dune.Prophecy.S01E0{e}.1080p.WEB-DL.DDP5.1.H.264-FLUX.mkv"), torrent::payload(1 << 20, 80 + e))
        })
        .collect();
    let files: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let swarm = Swarm::seeding_folder(PACK, &files).await;
    let qbt = QBittorrent::start().await;
    let indexer =
        MockTorznab::start("indexer-key", tv_indexer(vec![tv_item(PACK, &swarm.torrent().info_hash, 90228, None, 5)]))
            .await;
    indexer.serve_torrent(0, swarm.torrent().bytes.clone());
    let (env, _tmdb) = start_with_tmdb(backend, &qbt, indexer).await;

    let wanted = want(&env, json!({"action": "add", "tmdbId": 90228, "kind": "tv", "quality": "1080p"})).await;
    let prophecy = wanted["entity"]["id"].as_str().unwrap().to_string();
    let slot_id = wanted["slots"][0]["id"].as_str().unwrap().to_string();
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot_id})).await;
    assert_eq!(swept["slots"][0]["outcome"], "submitted", "{swept}");
    follow_to_import(&env, swept["slots"][0]["planId"].as_str().unwrap()).await;
    assert_eq!(env.svc.domain.slot(&slot_id).await.unwrap().status, SlotStatus::Satisfied);

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

const WEB720: &str = "Dune.Part.Two.2024.720p.WEB-DL.DDP5.1.H.264-FLUX.mkv";
const WEB1080: &str = "Dune.Part.Two.2024.1080p.WEB-DL.DDP5.1.H.264-NTb.mkv";

async fn an_upgrade_from_the_swarm_replaces_the_file_and_keeps_the_old(backend: Backend) {
    let (low, high) = (torrent::payload(1 << 20, 61), torrent::payload(2 << 20, 62));
    let swarm = Swarm::seeding_all(&[Seed::file(WEB720, &low), Seed::file(WEB1080, &high)]).await;
    let qbt = QBittorrent::start().await;
    let items = swarm.torrents.iter().map(|t| movie_item(t, 1 << 20)).collect();
    let indexer = Indexer { title: "Loopback indexer", movie_params: Some("q,imdbid,tmdbid"), tv_params: None, items };
    let indexer = MockTorznab::start("indexer-key", indexer).await;
    for (i, built) in swarm.torrents.iter().enumerate() {
        indexer.serve_torrent(i, built.bytes.clone());
    }
    // Only the 720p release is out yet.
    indexer.unpublish(1);
    let env = start_with(backend, &qbt, indexer, TestHost::new()).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    publish_profile(&env, "quality.movies").await;
    let dune = env.svc.domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    let wanted =
        NewSlot { entity_id: dune.id, season: None, quality: "any".into(), profile: Some("quality.movies".into()) };
    let slot = env.svc.domain.want(&wanted).await.unwrap();

    // The 720p release comes from the seeder and is imported; below the
    // 1080p cutoff the movie stays wanted.
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    assert_eq!(swept["slots"][0]["outcome"], "submitted", "{swept}");
    follow_to_import(&env, swept["slots"][0]["planId"].as_str().unwrap()).await;
    let old = env.svc.domain.slot(&slot.id).await.unwrap();
    assert_eq!(old.status, SlotStatus::Wanted);
    let old_file = old.file.expect("the 720p file is the slot's");
    assert_eq!(std::fs::read(env.library.join(&old_file)).unwrap(), low);

    // The 1080p release appears in the feed, comes from the seeder too,
    // and replaces the file under the grant; the 720p file is recycled.
    env.indexer.publish(1);
    let synced = task_result(&env, SYNC_FEEDS, json!({})).await;
    assert_eq!(synced["slots"][0]["outcome"], "submitted", "{synced}");
    let plan = env.svc.domain.plan(synced["slots"][0]["planId"].as_str().unwrap()).await.unwrap();
    assert_eq!(plan.payload["upgrade"], "better", "{:?}", plan.payload);
    follow_to_import(&env, &plan.id).await;
    let now = env.svc.domain.slot(&slot.id).await.unwrap();
    assert_eq!(now.status, SlotStatus::Satisfied);
    let new_file = now.file.expect("the 1080p file is the slot's");
    assert!(new_file.contains("1080p"), "{new_file}");
    assert_eq!(files_under(&env.library), std::slice::from_ref(&new_file), "only the better file is in the library");
    assert_eq!(std::fs::read(env.library.join(&new_file)).unwrap(), high, "the seeder's 1080p bytes");
    let recycled = files_under(&env.recycle_dir());
    assert_eq!(recycled.len(), 1, "{recycled:?}");
    assert!(recycled[0].ends_with(&old_file), "the 720p file is kept: {recycled:?}");
    assert_eq!(std::fs::read(env.recycle_dir().join(&recycled[0])).unwrap(), low);
    assert_eq!(swarm.complete_peers_of(&swarm.torrents[1].info_hash).await, 2, "Capstan's client seeds it too");
}

both_backends!(an_upgrade_from_the_swarm_replaces_the_file_and_keeps_the_old);

async fn transmission_downloads_from_the_swarm_and_it_is_imported(backend: Backend) {
    let payload = torrent::payload(3 << 20, 79);
    let swarm = Swarm::seeding_on_the_network(RELEASE, &payload).await;
    let daemon = Transmission::start().await;
    assert!(!daemon.downloads().join(RELEASE).exists(), "Transmission starts without the data");
    let indexer = MockTorznab::offering_dune("indexer-key", "Loopback indexer", swarm.torrent()).await;
    indexer.require_key_for_downloads();
    let client = super::transmission::service(&daemon);
    let env = start_with_client(backend, client, daemon.downloads(), indexer, TestHost::new()).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let slot = wanted_movie(&env).await;

    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    assert_eq!(swept["slots"][0]["outcome"], "submitted", "{swept}");
    follow_to_import(&env, swept["slots"][0]["planId"].as_str().unwrap()).await;
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Satisfied);

    // Transmission fetched every byte from the seeder, and the library
    // holds a hard link of its download.
    let fetched = daemon.downloads().join(RELEASE);
    assert_eq!(std::fs::read(&fetched).unwrap(), payload, "the downloaded file is the seeder's");
    assert_linked_into(&env.library, "Dune - Part Two (2024)", &fetched);
    let held = daemon.rpc("torrent-get", json!({"fields": ["hashString", "percentDone"]})).await;
    assert_eq!(held["arguments"]["torrents"][0]["percentDone"], 1.0, "{held}");
}

both_backends!(transmission_downloads_from_the_swarm_and_it_is_imported);
