//! A download nobody started is noticed, against a real qbittorrent-nox
//! (DHT off, no tracker), on both backends: a magnet nobody seeds stays at
//! its metadata (`metaDL`, 0%) and, once it has gone
//! `acquisition.stalled_after_minutes` like that, is asked about as a
//! stalled download that has not started; a torrent the client does not
//! hold although none of it ever arrived is not "failed" at once (nothing
//! was lost) but stalled after the same time.

use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::qbittorrent::QBittorrent;
use serde_json::{Value, json};

use super::download::{Env, operator, output, serve_torrent_files, start_with_qbittorrent_on, wait_for_status, wanted};
use super::trouble::{sync, sync_until, worker};

/// Submits a release known only by its infohash (qBittorrent gets a bare
/// magnet it can never resolve here); answers the download task id.
async fn submit_magnet(env: &Env, name: &str, infohash: &str) -> String {
    let (slot, release) = wanted(env.domain(), name, Some(infohash), None).await;
    let plan = output(
        env.invoke(&operator(), "download.plan", json!({"sourceReleaseId": release.id, "slotId": slot.id})).await,
    );
    let submitted = output(env.invoke(&operator(), "download.submit", json!({"planId": plan["id"]})).await);
    submitted["downloadTaskId"].as_str().unwrap().to_string()
}

/// Moves a download's last movement two minutes into the past.
async fn two_minutes_pass(env: &Env, download: &str) {
    let rewind = "UPDATE download_task SET progress_at = progress_at - 120000 WHERE id = $1";
    sqlx::query(rewind).bind(download).execute(&env.svc.db.pool).await.unwrap();
}

async fn forget_torrent(qbt: &QBittorrent, hash: &str) {
    let client = qbt.login().await;
    let url = format!("{}/api/v2/torrents/delete", qbt.base_url());
    let resp = client.post(url).form(&[("hashes", hash), ("deleteFiles", "false")]).send().await.unwrap();
    assert!(resp.status().is_success(), "qBittorrent would not delete {hash}: {}", resp.status());
}

fn problem(evidence: &Value) -> &str {
    evidence["problem"].as_str().unwrap_or_default()
}

async fn a_download_stuck_at_its_metadata_or_never_added_is_stalled(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let indexer = serve_torrent_files(Default::default()).await;
    let env = start_with_qbittorrent_on(backend, &qbt, &indexer).await;
    worker(&env);
    env.app.settings().update(json!({"acquisition.stalled_after_minutes": 1}).as_object().unwrap()).await.unwrap();

    // A magnet nobody seeds: qBittorrent holds it, fetching metadata.
    let hash = "0123456789abcdef0123456789abcdef01234567";
    let download = submit_magnet(&env, "Dune.2021.1080p.WEB-DL.x264", hash).await;
    let seen = wait_for_status(&env, &download, "held at its metadata", |d| d["clientState"] == "metaDL").await;
    assert_eq!((seen["status"].as_str(), seen["progress"].as_f64()), (Some("queued"), Some(0.0)), "{seen}");
    let stalled = format!("download_stalled:{download}");
    sync(&env).await;
    assert!(env.domain().decisions_of_root(&stalled).await.unwrap().is_empty(), "not yet a minute without starting");

    two_minutes_pass(&env, &download).await;
    let asked = sync_until(&env, &stalled, "a download_stalled decision", |d| !d.is_empty()).await;
    let decision = &asked[0];
    assert_eq!((decision.kind.as_str(), decision.status.as_str()), ("download_stalled", "open"));
    assert_eq!(decision.subject.as_deref(), Some(download.as_str()));
    let said = problem(&decision.evidence);
    assert!(said.starts_with("not started after 2 minutes") && said.contains("metadata"), "{said}");
    assert_eq!(decision.evidence["download"]["clientState"], "metaDL", "{:?}", decision.evidence);
    let offered: Vec<&str> =
        decision.options.as_array().into_iter().flatten().filter_map(|o| o["label"].as_str()).collect();
    assert_eq!(
        offered,
        ["Find another release", "Keep waiting"],
        "resuming cannot start a torrent without its metadata"
    );

    // The client forgets it: none of it ever arrived, so nothing is lost
    // and nothing is "failed"; once the time has gone by it is stalled.
    let forgotten = "89abcdef0123456789abcdef0123456789abcdef";
    let other = submit_magnet(&env, "Dune.2021.1080p.BluRay.x264", forgotten).await;
    wait_for_status(&env, &other, "held", |d| d["clientState"].is_string()).await;
    forget_torrent(&qbt, forgotten).await;
    wait_for_status(&env, &other, "gone from the client", |d| d["status"] == "missing").await;
    let failed = format!("download_failed:{other}");
    let stalled = format!("download_stalled:{other}");
    for _ in 0..2 {
        sync(&env).await;
    }
    assert_eq!(env.domain().download(&other).await.unwrap().status, capstan::domain::DownloadStatus::Missing);
    assert!(env.domain().decisions_of_root(&failed).await.unwrap().is_empty(), "nothing of it was lost");
    assert!(env.domain().decisions_of_root(&stalled).await.unwrap().is_empty(), "not yet a minute");
    two_minutes_pass(&env, &other).await;
    let asked = sync_until(&env, &stalled, "a download_stalled decision", |d| !d.is_empty()).await;
    let said = problem(&asked[0].evidence);
    assert!(said.contains("does not hold the torrent"), "{said}");
    assert!(env.domain().decisions_of_root(&failed).await.unwrap().is_empty());
}

both_backends!(a_download_stuck_at_its_metadata_or_never_added_is_stalled);
