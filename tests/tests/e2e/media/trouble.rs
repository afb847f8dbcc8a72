//! Downloads that go wrong become decisions, against a real qbittorrent-nox,
//! on both backends: a finished download whose data disappears opens one
//! `download_failed` decision however often the sync runs; an administrator's
//! "Force recheck" carries `download.recheck` out and the download completes;
//! the same trouble again is a new occurrence, and when it clears by itself
//! the system resolves it with the facts. A download without peers opens
//! `download_stalled` once it has gone the configured time without
//! progress; a paused one never does. In a real Chromium, the console's
//! Decisions tab shows a download that lost its files as it is found, and
//! its "Force recheck" button brings it back.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::domain::Decision;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use reqwest::Method;
use serde_json::json;

use super::download::{Env, operator, output, serve_torrent_files, start_with_qbittorrent_on, wait_for_status, wanted};

const DEADLINE: Duration = Duration::from_secs(90);

/// A worker for the decisions' own tasks, agent runs and the sync, and
/// nothing else (no import runs behind the test's back).
pub(super) fn worker(env: &Env) {
    let config = WorkerConfig { poll: Duration::from_millis(50), ..WorkerConfig::default() };
    let mut worker = Worker::new(Tasks::new(env.svc.db.clone()), "trouble".into(), config);
    capstan::recovery::register(&mut worker, env.app.agent(), env.app.settings());
    capstan::agent::task::register(&mut worker, env.app.agent());
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(env.app.agent().clone(), Default::default()));
    let sync = capstan::acquisition::SyncDownloads(env.svc.clone(), env.app.settings().clone());
    worker.handle(capstan::acquisition::SYNC_DOWNLOADS, Arc::new(sync));
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
}

/// Runs one `syncDownloads` to its end.
pub(super) async fn sync(env: &Env) {
    capstan_tests::tasks::run_to_end(&env.svc.db, capstan::acquisition::SYNC_DOWNLOADS, json!({})).await;
}

/// Syncs until the decisions about `root` satisfy `wanted`.
pub(super) async fn sync_until(
    env: &Env,
    root: &str,
    what: &str,
    wanted: impl Fn(&[Decision]) -> bool,
) -> Vec<Decision> {
    let started = Instant::now();
    loop {
        sync(env).await;
        let found = env.domain().decisions_of_root(root).await.unwrap();
        if wanted(&found) {
            return found;
        }
        assert!(started.elapsed() < DEADLINE, "{what} never happened: {found:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Submits `torrent` for a wanted movie and waits until qBittorrent has
/// loaded it; answers the download task id.
pub(super) async fn submit(env: &Env, name: &str, info_hash: &str, link: String) -> String {
    let (slot, release) = wanted(env.domain(), name, Some(info_hash), Some(link)).await;
    let plan = output(
        env.invoke(&operator(), "download.plan", json!({"sourceReleaseId": release.id, "slotId": slot.id})).await,
    );
    let submitted = output(env.invoke(&operator(), "download.submit", json!({"planId": plan["id"]})).await);
    let task = submitted["downloadTaskId"].as_str().unwrap().to_string();
    wait_for_status(env, &task, "loaded", |d| d["status"] != "queued").await;
    task
}

async fn pause(qbt: &QBittorrent, hash: &str) {
    let client = qbt.login().await;
    // qBittorrent 5 says stop, 4 said pause.
    for verb in ["stop", "pause"] {
        let url = format!("{}/api/v2/torrents/{verb}", qbt.base_url());
        let resp = client.post(url).form(&[("hashes", hash)]).send().await.unwrap();
        if resp.status().is_success() {
            return;
        }
    }
    panic!("qBittorrent would not pause {hash}");
}

async fn a_download_that_loses_its_data_or_stops_moving_is_asked_about_once(backend: Backend) {
    let mut qbt = QBittorrent::start().await;
    let contents = torrent::payload(70_000, 41);
    let dune = torrent::single_file(&qbt.downloads(), "Dune.2021.1080p.WEB-DL.x264.mkv", &contents);
    let lonely =
        torrent::single_file(&qbt.downloads(), "Arrival.2016.1080p.WEB-DL.x264.mkv", &torrent::payload(70_000, 42));
    std::fs::remove_file(&lonely.files[0]).unwrap(); // nobody has this one's data
    let files = BTreeMap::from([
        ("dune.torrent".to_string(), dune.bytes.clone()),
        ("arrival.torrent".to_string(), lonely.bytes.clone()),
    ]);
    let indexer = serve_torrent_files(files).await;
    let env = start_with_qbittorrent_on(backend, &qbt, &indexer).await;
    worker(&env);
    let admin = Api::new(&serve(env.app.clone()).await).signed_in(&env.svc.db, "alice").await;

    let task = submit(&env, &dune.name, &dune.info_hash, format!("{indexer}/download/dune.torrent")).await;
    // qBittorrent usually checks the data as it adds the torrent; when it
    // did not, a recheck does (and is refused when there is nothing to do).
    let _ = env.invoke(&operator(), "download.recheck", json!({"downloadTaskId": task})).await;
    wait_for_status(&env, &task, "completed", |d| d["status"] == "completed").await;
    let root = format!("download_failed:{task}");
    sync_until(&env, &root, "the download recorded completed", |_| true).await;
    assert_eq!(env.domain().download(&task).await.unwrap().status, capstan::domain::DownloadStatus::Completed);
    assert!(env.domain().decisions_of_root(&root).await.unwrap().is_empty(), "nothing is wrong yet");

    // The data disappears while the client is down.
    qbt.stop().await;
    std::fs::remove_file(&dune.files[0]).unwrap();
    qbt.start_again().await;
    let opened = sync_until(&env, &root, "a download_failed decision", |d| !d.is_empty()).await;
    for _ in 0..3 {
        sync(&env).await;
    }
    let decisions = env.domain().decisions_of_root(&root).await.unwrap();
    assert_eq!(decisions.len(), 1, "one decision however often the sync looks: {decisions:?}");
    let decision = &decisions[0];
    assert_eq!(
        (decision.id.as_str(), decision.kind.as_str(), decision.status.as_str()),
        (opened[0].id.as_str(), "download_failed", "open")
    );
    assert!(decision.evidence["problem"].is_string(), "{:?}", decision.evidence);
    assert_eq!(decision.options[0]["capabilityId"], "download.recheck");
    assert_eq!(decision.options[0]["label"], "Force recheck");

    // Put back, the administrator's "Force recheck" brings it home.
    std::fs::write(&dune.files[0], &contents).unwrap();
    let path = format!("/decisions/{}", decision.id);
    let (status, answered) =
        admin.send(Method::PATCH, &path, json!({"status": "resolved", "optionId": "recheck"})).await;
    assert_eq!(status, 200, "{answered}");
    let started = Instant::now();
    let carried = loop {
        let now = admin.json(&path).await;
        if !now["resolution"]["execution"].is_null() {
            break now;
        }
        assert!(started.elapsed() < DEADLINE, "the recheck was never carried out: {now}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let execution = &carried["resolution"]["execution"];
    assert_eq!(
        (execution["status"].as_str(), execution["by"].as_str()),
        (Some("succeeded"), Some("admin:alice")),
        "{carried}"
    );
    wait_for_status(&env, &task, "completed again", |d| d["status"] == "completed").await;
    sync_until(&env, &root, "the download recorded completed again", |_| true).await;

    // The same trouble again is a new occurrence; when it clears by itself
    // (the operator rechecks it in qBittorrent), the system says so.
    qbt.stop().await;
    std::fs::remove_file(&dune.files[0]).unwrap();
    qbt.start_again().await;
    let again = sync_until(&env, &root, "a second occurrence", |d| d.len() == 2).await;
    assert_eq!(again[1].dedupe_key, format!("{root}#2"));
    std::fs::write(&dune.files[0], &contents).unwrap();
    output(env.invoke(&operator(), "download.recheck", json!({"downloadTaskId": task})).await);
    let cleared = sync_until(&env, &root, "the second occurrence cleared", |d| {
        d[1].status == capstan::domain::DecisionStatus::Resolved
    })
    .await;
    assert_eq!(cleared[1].resolved_by.as_deref(), Some("system:syncDownloads"));
    let facts = &cleared[1].resolution.as_ref().unwrap()["facts"];
    let moving = ["queued", "downloading", "completed"];
    assert!(facts["status"].as_str().is_some_and(|s| moving.contains(&s)), "moving again: {facts}");

    // A download nobody seeds: stalled once it went the configured time
    // without progress, and never while paused.
    let arrival = submit(&env, &lonely.name, &lonely.info_hash, format!("{indexer}/download/arrival.torrent")).await;
    let (status, _) = admin.send(Method::PATCH, "/settings", json!({"acquisition.stalled_after_minutes": 1})).await;
    assert_eq!(status, 200);
    let stalled = format!("download_stalled:{arrival}");
    sync(&env).await;
    assert!(env.domain().decisions_of_root(&stalled).await.unwrap().is_empty(), "not yet a minute without progress");
    // A minute and more passes.
    let rewind = "UPDATE download_task SET progress_at = progress_at - 120000 WHERE id = $1";
    sqlx::query(rewind).bind(&arrival).execute(&env.svc.db.pool).await.unwrap();
    let asked = sync_until(&env, &stalled, "a download_stalled decision", |d| !d.is_empty()).await;
    assert_eq!((asked[0].kind.as_str(), asked[0].subject.as_deref()), ("download_stalled", Some(arrival.as_str())));
    assert!(asked[0].evidence["problem"].as_str().unwrap().contains("no progress"), "{:?}", asked[0].evidence);
    let (status, _) =
        admin.send(Method::PATCH, &format!("/decisions/{}", asked[0].id), json!({"status": "dismissed"})).await;
    assert_eq!(status, 200);

    // Paused by its owner, however long: not stalled.
    pause(&qbt, &lonely.info_hash).await;
    wait_for_status(&env, &arrival, "paused", |d| d["status"] == "paused").await;
    let refused =
        env.invoke(&operator(), "download.recheck", json!({"downloadTaskId": arrival, "action": "resume"})).await;
    assert_eq!(refused.error.as_ref().map(|e| e.kind.as_str()), Some("conflict"), "{refused:?}");
    wait_for_status(&env, &arrival, "still paused", |d| d["status"] == "paused").await;
    sync(&env).await;
    sqlx::query(rewind).bind(&arrival).execute(&env.svc.db.pool).await.unwrap();
    for _ in 0..2 {
        sync(&env).await;
    }
    let after = env.domain().decisions_of_root(&stalled).await.unwrap();
    assert_eq!(after.len(), 1, "a paused download is waiting for its owner, not stalled: {after:?}");
}

both_backends!(a_download_that_loses_its_data_or_stops_moving_is_asked_about_once);

#[tokio::test(flavor = "multi_thread")]
async fn the_console_shows_a_download_that_lost_its_files_and_force_recheck_recovers_it() {
    let mut qbt = QBittorrent::start().await;
    let contents = torrent::payload(70_000, 43);
    let dune = torrent::single_file(&qbt.downloads(), "Dune.2021.1080p.BluRay.x264.mkv", &contents);
    let files = BTreeMap::from([("dune.torrent".to_string(), dune.bytes.clone())]);
    let indexer = serve_torrent_files(files).await;
    let env = start_with_qbittorrent_on(Backend::Sqlite, &qbt, &indexer).await;
    worker(&env);
    let base = serve(env.app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    capstan::http::session::set_password(&env.svc.db, "alice", "correct horse battery").await.unwrap();
    let browser = capstan_tests::browser::Browser::start().await;
    browser.sign_in(&root, "alice", "correct horse battery").await;
    browser.click("nav button[data-tab=decisions]").await;
    browser.wait_text("#decisions-none", "said nothing waits", |t| t.contains("Nothing waits")).await;

    let task = submit(&env, &dune.name, &dune.info_hash, format!("{indexer}/download/dune.torrent")).await;
    let _ = env.invoke(&operator(), "download.recheck", json!({"downloadTaskId": task})).await;
    wait_for_status(&env, &task, "completed", |d| d["status"] == "completed").await;
    let root_cause = format!("download_failed:{task}");
    sync_until(&env, &root_cause, "the download recorded completed", |_| true).await;

    // The files go while qBittorrent is down; the sync notices, and the
    // open tab shows it without being reloaded.
    qbt.stop().await;
    std::fs::remove_file(&dune.files[0]).unwrap();
    qbt.start_again().await;
    let found = sync_until(&env, &root_cause, "a download_failed decision", |d| !d.is_empty()).await;
    let card = format!("#decisions-open li[data-decision-id='{}']", found[0].id);
    let shown = browser.wait_text(&card, "showed the decision", |t| t.contains("download failed")).await;
    assert!(shown.contains(&task) && shown.contains("Force recheck"), "{shown}");
    // Beside the button, the call it makes.
    let call = browser.wait_text(&format!("{card} .option-call"), "showed the call", |t| !t.is_empty()).await;
    assert!(call.starts_with("download.recheck {") && call.contains(&task), "{call}");
    browser.wait_text("nav button[data-tab=decisions]", "counted it", |t| t == "Decisions (1)").await;

    // Put back, one click brings it home, under the administrator's name.
    std::fs::write(&dune.files[0], &contents).unwrap();
    browser.click(&format!("{card} button[data-option-id='recheck']")).await;
    let done = format!("#decisions-done li[data-decision-id='{}']", found[0].id);
    let decided = browser.wait_text(&done, "showed it carried out", |t| t.contains("download.recheck done")).await;
    assert!(decided.contains("Resolved by admin:alice: Force recheck"), "{decided}");
    wait_for_status(&env, &task, "completed again", |d| d["status"] == "completed").await;
    browser.wait_text("#decisions-none", "said nothing waits again", |t| t.contains("Nothing waits")).await;
    browser.close().await;
}
