//! Upgrades until a cutoff, on both backends, with a real qBittorrent: a
//! movie imported below its profile's cutoff stays wanted and says so; a
//! better release in the feed is fetched, and the import that would replace
//! the file is a `replacement` plan, which the grant for imports does not
//! cover: it waits for its own approval, and once approved the better file
//! is placed and the old one kept in the recycle folder. At the cutoff the
//! slot is satisfied and a better release is left alone, but a PROPER of
//! the file it holds replaces it under a grant for `organize.replace`. A
//! season upgrades the same way: a 1080p pack replaces its 720p episodes.
//! A webhook chosen to hear of upgrades is told of both, in one message.

use std::path::Path;
use std::time::{Duration, Instant};

use capstan::acquisition::{EVALUATE_ACQUISITION, SYNC_DOWNLOADS, SYNC_FEEDS};
use capstan::authz::ApprovalStatus;
use capstan::config::{Auth, ServiceConfig};
use capstan::domain::{EpisodeState, NewSlot, SlotStatus};
use capstan::notify::SEND_NOTIFICATIONS;
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::grants::for_an_hour;
use capstan_tests::host::TestHost;
use capstan_tests::mock_notify::MockNotify;
use capstan_tests::mock_torznab::{Indexer, Item, MockTorznab};
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent::{self, BuiltTorrent};
use reqwest::Method;
use serde_json::{Value, json};

use super::pipeline::{Env, await_import, start_with};
use super::series_env::{start_with_tmdb, task_result, tv_indexer, tv_item, want};

const WEB720: &str = "Dune.Part.Two.2024.720p.WEB-DL.DDP5.1.H.264-FLUX.mkv";
const WEB1080: &str = "Dune.Part.Two.2024.1080p.WEB-DL.DDP5.1.H.264-NTb.mkv";
const PROPER1080: &str = "Dune.Part.Two.2024.PROPER.1080p.WEB-DL.DDP5.1.H.264-NTb.mkv";
const WEB2160: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";
const DEADLINE: Duration = Duration::from_secs(90);

pub(super) fn movie_item(built: &BuiltTorrent, size: u64) -> Item {
    let leak = |text: &str| -> &'static str { Box::leak(text.to_string().into_boxed_str()) };
    Item {
        title: leak(&built.name),
        size,
        seeders: 10,
        peers: 12,
        infohash: Some(leak(&built.info_hash)),
        categories: &[2000, 2045],
        tmdb_id: Some(693134),
        pub_date: "Sat, 02 Mar 2024 09:00:00 +0000",
        ..Item::default()
    }
}

pub(super) async fn publish_profile(env: &Env, name: &str) {
    let body = json!({"preferredResolutions": ["2160p", "1080p", "720p"], "cutoff": "1080p"});
    let draft = env.svc.authz.draft_policy(name, &body, "admin:test").await.unwrap();
    env.svc.authz.publish_policy(name, draft.revision).await.unwrap();
}

/// The files under `dir`, relative to it, sorted.
pub(super) fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// The download a sweep's `submitted` outcome handed to the client.
async fn download_of(env: &Env, outcome: &Value) -> String {
    assert_eq!(outcome["outcome"], "submitted", "{outcome}");
    let plan = outcome["planId"].as_str().unwrap();
    env.svc.domain.download_for_plan(plan).await.unwrap().unwrap().id
}

/// Syncs downloads (rechecking once) until `download_id` has completed.
async fn await_completed(env: &Env, download_id: &str) {
    let deadline = Instant::now() + DEADLINE;
    let mut rechecked = false;
    loop {
        task_result(env, SYNC_DOWNLOADS, json!({})).await;
        let now = env.svc.domain.download(download_id).await.unwrap();
        if matches!(now.status.as_str(), "completed" | "importing" | "imported") {
            return;
        }
        if !rechecked && now.status != capstan::domain::DownloadStatus::Queued {
            let origin = capstan::pipeline::Origin::cli(capstan::runtime::EffectClass::Execute);
            let input = json!({"downloadTaskId": download_id});
            rechecked = env.caps.invoke(&origin, "download.recheck", &input).await.unwrap().error.is_none();
        }
        assert!(Instant::now() < deadline, "the download never completed: {now:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn a_movie_is_upgraded_until_its_cutoff_and_the_old_file_is_kept(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let names = [WEB720, WEB1080, PROPER1080, WEB2160];
    let built: Vec<BuiltTorrent> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            torrent::single_file(&qbt.downloads(), name, &torrent::payload(30_000 + i * 1000, 90 + i as u64))
        })
        .collect();
    let items = built.iter().enumerate().map(|(i, b)| movie_item(b, 30_000 + i as u64 * 1000)).collect();
    let indexer = Indexer { title: "Loopback indexer", movie_params: Some("q,imdbid,tmdbid"), tv_params: None, items };
    let indexer = MockTorznab::start("indexer-key", indexer).await;
    for (i, b) in built.iter().enumerate() {
        indexer.serve_torrent(i, b.bytes.clone());
    }
    // Only the 720p release is out yet.
    for later in 1..names.len() {
        indexer.unpublish(later);
    }
    // A webhook is told of upgrades.
    let webhook = MockNotify::webhook().await;
    let mut host = TestHost::new();
    let hook = ServiceConfig {
        base_url: webhook.base_url(),
        auth: Auth::None,
        operations: Vec::new(),
        timeout_ms: 10_000,
        response_cap_bytes: 1 << 20,
    };
    host.config.services.insert("webhook".into(), hook);
    let env = start_with(backend, &qbt, indexer, host).await;
    let upgrades_only = serde_json::Map::from_iter([("notifications.events".to_string(), json!("upgraded"))]);
    env.app.settings().update(&upgrades_only).await.unwrap();
    assert_eq!(task_result(&env, SEND_NOTIFICATIONS, json!({})).await["targets"][0]["outcome"], "nothing-new");
    let recycle = env.recycle_dir();
    // Fetching, importing and notifying are granted; replacing a file is not.
    for action in ["download.submit", "organize.execute", "notify.webhook"] {
        env.svc.authz.create_grant(&for_an_hour(action), "admin:test").await.unwrap();
    }
    publish_profile(&env, "quality.movies").await;
    let dune = env.svc.domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    let wanted =
        NewSlot { entity_id: dune.id, season: None, quality: "any".into(), profile: Some("quality.movies".into()) };
    let slot = env.svc.domain.want(&wanted).await.unwrap();

    // The 720p file is imported; below the 1080p cutoff the slot stays
    // wanted, and the library says why.
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    let first = await_import(&env, &download_of(&env, &swept["slots"][0]).await).await;
    let old = first.items[0]["destination"].as_str().unwrap().to_string();
    assert!(old.contains("720p"), "{old}");
    let held = env.svc.domain.slot(&slot.id).await.unwrap();
    assert_eq!((held.status, held.file.as_deref()), (SlotStatus::Wanted, Some(old.as_str())));
    let shown = serde_json::to_value(env.svc.domain.slot_with_activity(&held).await.unwrap()).unwrap();
    assert_eq!(shown["upgrade"], json!({"cutoff": "1080p", "below": 1, "have": "720p"}), "{shown}");
    // Nothing better is out: searching again fetches nothing.
    let again = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    assert_eq!(again["slots"][0]["outcome"], "no-match", "{again}");

    // The 1080p release appears in the feed and is fetched; replacing the
    // 720p file waits for a person, as its own kind of plan.
    env.indexer.publish(1);
    let synced = task_result(&env, SYNC_FEEDS, json!({})).await;
    let upgrade = download_of(&env, &synced["slots"][0]).await;
    let plan = env.svc.domain.plan(synced["slots"][0]["planId"].as_str().unwrap()).await.unwrap();
    assert_eq!(plan.payload["upgrade"], "better");
    await_completed(&env, &upgrade).await;
    let asked = Instant::now();
    let approval = loop {
        let pending = env.svc.authz.approvals(Some(ApprovalStatus::Pending)).await.unwrap();
        if let Some(a) = pending.into_iter().find(|a| a.plan_type == "replacement") {
            break a;
        }
        assert!(asked.elapsed() < DEADLINE, "the replacement was never put to a person");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(approval.capability_id, "organize.replace");
    assert!(env.library.join(&old).is_file(), "nothing was replaced before the approval");
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.svc.db, "admin").await;
    let (status, listed) = admin.send(Method::GET, "/approvals", Value::Null).await;
    assert_eq!(status, 200, "{listed}");
    let shown = listed["approvals"].as_array().unwrap().iter().find(|a| a["id"] == approval.id.as_str()).unwrap();
    assert_eq!(shown["plan"]["files"][0]["replaces"], json!([old]), "{shown}");
    let decided = json!({"status": "approved", "payloadHash": approval.payload_hash});
    let (status, answer) = admin.send(Method::PATCH, &format!("/approvals/{}", approval.id), decided).await;
    assert_eq!(status, 200, "{answer}");
    let second = await_import(&env, &upgrade).await;
    let new = second.items[0]["destination"].as_str().unwrap().to_string();
    assert!(new.contains("1080p"), "{new}");
    assert_eq!(files_under(&env.library), std::slice::from_ref(&new), "the 720p file left the library");
    assert_eq!(files_under(&recycle), [format!("{}/{old}", second.id)], "and is kept in the recycle folder");
    let held = env.svc.domain.slot(&slot.id).await.unwrap();
    assert_eq!((held.status, held.file.as_deref()), (SlotStatus::Satisfied, Some(new.as_str())));

    // At the cutoff a 2160p release is left alone ...
    env.indexer.publish(3);
    let synced = task_result(&env, SYNC_FEEDS, json!({})).await;
    assert_eq!(synced["slots"], json!([]), "{synced}");
    // ... but a PROPER of the file held replaces it, under a grant.
    env.svc.authz.create_grant(&for_an_hour("organize.replace"), "admin:test").await.unwrap();
    env.indexer.publish(2);
    let synced = task_result(&env, SYNC_FEEDS, json!({})).await;
    let fix = download_of(&env, &synced["slots"][0]).await;
    let third = await_import(&env, &fix).await;
    let proper = third.items[0]["destination"].as_str().unwrap().to_string();
    assert!(proper.contains("Proper"), "{proper}");
    assert_eq!(files_under(&env.library), std::slice::from_ref(&proper));
    assert_eq!(files_under(&recycle).len(), 2, "both replaced files are kept");
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Satisfied);

    // The webhook is told of both upgrades, in one message, and of nothing
    // else (the 720p import was not an upgrade).
    let told = task_result(&env, SEND_NOTIFICATIONS, json!({})).await;
    assert_eq!(told["targets"][0]["outcome"], "sent", "{told}");
    let message = webhook.received().pop().unwrap();
    assert_eq!(message.body["title"], "Capstan: 2 upgraded");
    let line = "Upgraded: Dune: Part Two (2024) (1 file)";
    assert_eq!(message.body["message"], format!("{line}\n{line}"));
}

both_backends!(a_movie_is_upgraded_until_its_cutoff_and_the_old_file_is_kept);

const PACK720: &str = "Dune.Prophecy.S01.720p.WEB-DL.DDP5.1.H.264-FLUX";
const PACK1080: &str = "Dune.Prophecy.S01.1080p.WEB-DL.DDP5.1.H.264-FLUX";

fn season_pack(qbt: &QBittorrent, name: &str, resolution: &str, seed: u64) -> BuiltTorrent {
    let files: Vec<(String, Vec<u8>)> = (1..=6)
        .map(|e| {
            let file = format!("Dune.Prophecy.S01E0{e}.{resolution}.WEB-DL.DDP5.1.H.264-FLUX.mkv");
            (file, torrent::payload(20_000 + seed as usize, seed + e))
        })
        .collect();
    let files: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    torrent::multi_file(&qbt.downloads(), name, &files)
}

async fn a_better_season_pack_replaces_the_episodes_below_the_cutoff(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let low = season_pack(&qbt, PACK720, "720p", 10);
    let high = season_pack(&qbt, PACK1080, "1080p", 30);
    let indexer = tv_indexer(vec![
        tv_item(PACK720, &low.info_hash, 90228, None, 5),
        tv_item(PACK1080, &high.info_hash, 90228, None, 5),
    ]);
    let indexer = MockTorznab::start("indexer-key", indexer).await;
    indexer.serve_torrent(0, low.bytes.clone());
    indexer.serve_torrent(1, high.bytes.clone());
    indexer.unpublish(1);
    let (env, _tmdb) = start_with_tmdb(backend, &qbt, indexer).await;
    publish_profile(&env, "quality.tv").await;
    let wanted =
        want(&env, json!({"action": "add", "tmdbId": 90228, "kind": "tv", "quality": "any", "profile": "quality.tv"}))
            .await;
    let prophecy = wanted["entity"]["id"].as_str().unwrap().to_string();
    let slot_id = wanted["slots"][0]["id"].as_str().unwrap().to_string();
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot_id})).await;
    await_import(&env, &download_of(&env, &swept["slots"][0]).await).await;
    let episodes = env.svc.domain.episodes(&prophecy).await.unwrap();
    assert!(episodes.iter().all(|e| e.state == EpisodeState::Have), "{episodes:?}");
    let slot = env.svc.domain.slot(&slot_id).await.unwrap();
    assert_eq!(slot.status, SlotStatus::Wanted, "every episode is below the cutoff");
    let shown = serde_json::to_value(env.svc.domain.slot_with_activity(&slot).await.unwrap()).unwrap();
    assert_eq!(shown["upgrade"]["below"], 6, "{shown}");
    let old: Vec<String> = episodes.iter().map(|e| e.file.clone().unwrap()).collect();

    env.indexer.publish(1);
    let synced = task_result(&env, SYNC_FEEDS, json!({})).await;
    let organization = await_import(&env, &download_of(&env, &synced["slots"][0]).await).await;
    assert!(organization.replaces, "{organization:?}");
    let episodes = env.svc.domain.episodes(&prophecy).await.unwrap();
    // The episode names carry no quality: each 1080p file took its 720p
    // file's place, which is kept in the recycle folder.
    let new: Vec<String> = episodes.iter().map(|e| e.file.clone().unwrap()).collect();
    assert_eq!(new, old);
    let sizes: Vec<u64> = new.iter().map(|f| std::fs::metadata(env.library.join(f)).unwrap().len()).collect();
    assert_eq!(sizes, [20_030; 6], "the library holds the 1080p files");
    let kept: Vec<String> = old.iter().map(|f| format!("{}/{f}", organization.id)).collect();
    let mut kept = kept;
    kept.sort();
    assert_eq!(files_under(&env.recycle_dir()), kept);
    assert_eq!(env.svc.domain.slot(&slot_id).await.unwrap().status, SlotStatus::Satisfied);
}

both_backends!(a_better_season_pack_replaces_the_episodes_below_the_cutoff);
