//! From wanted to imported over a real swarm, on both backends: Debian's
//! opentracker on loopback, a `.torrent` made by mktorrent, a second
//! qbittorrent-nox seeding the data, and an indexer whose `.torrent` link
//! answers 401 without its key. The sweep finds the release, the host
//! fetches the `.torrent` with the indexer's key and hands it to Capstan's
//! qBittorrent, which downloads every piece from the seeder (DHT, LSD and
//! PeX off: only the tracker brings them together); the sync sees it
//! complete and the import hard-links it into the library.

use std::time::{Duration, Instant};

use capstan::acquisition::{EVALUATE_ACQUISITION, SYNC_DOWNLOADS};
use capstan::tasks::TaskStatus;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::swarm::Swarm;
use capstan_tests::torrent;
use serde_json::json;

use super::pipeline::{run, start_on, wanted_movie};

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

    // The sync follows the download as the swarm delivers it; completing
    // queues the import, which the worker runs.
    let started = Instant::now();
    let mut seen = Vec::new();
    loop {
        run(&env, SYNC_DOWNLOADS, json!({})).await;
        let now = env.svc.domain.slot(&slot.id).await.unwrap();
        if let Some(download) = env.svc.domain.download_for_plan(&plan.id).await.unwrap()
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
    let download = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    assert_eq!((download.status.as_str(), download.progress), ("imported", 1.0), "went {seen:?}");

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
