//! Another release when one fails, on both backends, with a real
//! qBittorrent: the sweep fetches the best-seeded release, a magnet nobody
//! seeds; once it has not started for `acquisition.stalled_after_minutes`
//! the decision about it offers "Find another release"; the administrator
//! chooses it and the torrent leaves qBittorrent (its data kept), the
//! release goes on the blocklist and the movie is wanted again; a plan for
//! the blocked release is refused, and the next search fetches the other
//! release, which is imported. Unblocking lets the release be picked again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::acquisition::{EVALUATE_ACQUISITION, SYNC_DOWNLOADS};
use capstan::domain::{DownloadStatus, NewSlot, SlotStatus};
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::host::TestHost;
use capstan_tests::mock_torznab::{Indexer, Item, MockTorznab};
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use reqwest::Method;
use serde_json::{Value, json};

use super::pipeline::{Env, await_import, start_with};
use super::series_env::task_result;

const DEAD: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-DEAD";
const ALIVE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";
/// The dead release's infohash: a magnet no peer will ever answer.
const DEAD_HASH: &str = "0123456789abcdef0123456789abcdef01234567";
const DEADLINE: Duration = Duration::from_secs(90);

fn dune(title: &'static str, hash: &'static str, seeders: u32, magnet: Option<&'static str>) -> Item {
    Item {
        title,
        magnet,
        size: 70_000,
        seeders,
        peers: seeders + 2,
        infohash: Some(hash),
        categories: &[2000, 2045],
        tmdb_id: Some(693134),
        pub_date: "Sat, 02 Mar 2024 09:00:00 +0000",
        ..Item::default()
    }
}

/// A worker carrying out the decisions people answer.
fn resolver(env: &Env) {
    let config = WorkerConfig { poll: Duration::from_millis(50), ..WorkerConfig::default() };
    let mut worker = Worker::new(Tasks::new(env.svc.db.clone()), "resolver".into(), config);
    capstan::recovery::register(&mut worker, env.app.agent(), env.app.settings());
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
}

/// The torrents qBittorrent holds, by hash.
async fn held_by_client(qbt: &QBittorrent) -> Vec<String> {
    let client = qbt.login().await;
    let list: Vec<Value> =
        client.get(format!("{}/api/v2/torrents/info", qbt.base_url())).send().await.unwrap().json().await.unwrap();
    list.iter().filter_map(|t| t["hash"].as_str().map(str::to_string)).collect()
}

async fn a_release_that_never_starts_is_given_up_for_another(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let alive = torrent::single_file(&qbt.downloads(), ALIVE, &torrent::payload(70_000, 44));
    let leak = |text: &str| -> &'static str { Box::leak(text.to_string().into_boxed_str()) };
    let magnet = "magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567&dn=Dune.Part.Two.2024.2160p-DEAD";
    let items = vec![dune(DEAD, DEAD_HASH, 50, Some(magnet)), dune(leak(ALIVE), leak(&alive.info_hash), 5, None)];
    let indexer = Indexer { title: "Loopback indexer", movie_params: Some("q,imdbid,tmdbid"), tv_params: None, items };
    let indexer = MockTorznab::start("indexer-key", indexer).await;
    // The dead release has no `.torrent` to fetch: it goes as its magnet.
    indexer.serve_torrent(1, alive.bytes.clone());
    let env = start_with(backend, &qbt, indexer, TestHost::new()).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    resolver(&env);
    env.app.settings().update(json!({"acquisition.stalled_after_minutes": 1}).as_object().unwrap()).await.unwrap();
    let movie = env.svc.domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    let wanted = NewSlot { entity_id: movie.id, season: None, quality: "2160p".into(), profile: None };
    let slot = env.svc.domain.want(&wanted).await.unwrap();

    // The best-seeded release is fetched, and never starts.
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    assert_eq!(swept["slots"][0]["outcome"], "submitted", "{swept}");
    let plan = env.svc.domain.plan(swept["slots"][0]["planId"].as_str().unwrap()).await.unwrap();
    let dead_release = plan.source_release_id.clone();
    let download = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    let root = format!("download_stalled:{}", download.id);
    let started = Instant::now();
    let decision = loop {
        // A minute passes without a start, each time it is looked at.
        sqlx::query("UPDATE download_task SET progress_at = progress_at - 120000 WHERE id = $1")
            .bind(&download.id)
            .execute(&env.svc.db.pool)
            .await
            .unwrap();
        task_result(&env, SYNC_DOWNLOADS, json!({})).await;
        if let Some(d) = env.svc.domain.decisions_of_root(&root).await.unwrap().pop() {
            break d;
        }
        assert!(started.elapsed() < DEADLINE, "the download that never started was never asked about");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let offered: Vec<&str> = decision.options.as_array().unwrap().iter().filter_map(|o| o["id"].as_str()).collect();
    assert!(offered.contains(&"another-release"), "{offered:?}");
    assert!(held_by_client(&qbt).await.contains(&DEAD_HASH.to_string()));

    // The administrator finds another release.
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.svc.db, "admin").await;
    let path = format!("/decisions/{}", decision.id);
    let (status, answer) =
        admin.send(Method::PATCH, &path, json!({"status": "resolved", "optionId": "another-release"})).await;
    assert_eq!(status, 200, "{answer}");
    let started = Instant::now();
    let carried = loop {
        let now = admin.json(&path).await;
        if !now["resolution"]["execution"].is_null() {
            break now;
        }
        assert!(started.elapsed() < DEADLINE, "finding another release was never carried out: {now}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(carried["resolution"]["execution"]["status"], "succeeded", "{carried}");
    assert_eq!(env.svc.domain.download(&download.id).await.unwrap().status, DownloadStatus::Removed);
    assert!(!held_by_client(&qbt).await.contains(&DEAD_HASH.to_string()), "the torrent left qBittorrent");
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Wanted);
    let listed = admin.json("/blocklist").await;
    let entry = &listed["releases"][0];
    assert_eq!((entry["releaseId"].as_str(), entry["title"].as_str()), (Some(dead_release.as_str()), Some(DEAD)));
    assert!(entry["reason"].as_str().unwrap().contains("not started"), "{entry}");
    assert_eq!(entry["blockedBy"], "admin:admin", "{entry}");

    // The blocked release is not planned again, by anyone.
    let refused = env
        .caps
        .invoke(
            &capstan::pipeline::Origin::cli(capstan::runtime::EffectClass::Execute),
            "download.plan",
            &json!({"sourceReleaseId": dead_release, "slotId": slot.id}),
        )
        .await
        .unwrap();
    let error = refused.error.expect("a plan for a blocked release is refused");
    assert!(error.message.contains("blocklisted"), "{}", error.message);

    // The next search fetches the other release, which arrives.
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    assert_eq!(swept["slots"][0]["outcome"], "submitted", "{swept}");
    let plan = env.svc.domain.plan(swept["slots"][0]["planId"].as_str().unwrap()).await.unwrap();
    assert_ne!(plan.source_release_id, dead_release);
    let next = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    await_import(&env, &next.id).await;
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Satisfied);

    // Unblocked, it may be picked again; unblocking twice says so.
    let (status, _) = admin.send(Method::DELETE, &format!("/blocklist/{dead_release}"), Value::Null).await;
    assert_eq!(status, 204);
    assert_eq!(admin.json("/blocklist").await["releases"], json!([]));
    let (status, _) = admin.send(Method::DELETE, &format!("/blocklist/{dead_release}"), Value::Null).await;
    assert_eq!(status, 404);
    let (status, answer) = admin.post("/blocklist", json!({"sourceReleaseId": dead_release, "reason": "   "})).await;
    assert_eq!(status, 422, "a reason is needed: {answer}");
    let (status, answer) = admin.post("/blocklist", json!({"sourceReleaseId": "no-such", "reason": "bad"})).await;
    assert_eq!(status, 404, "{answer}");
}

both_backends!(a_release_that_never_starts_is_given_up_for_another);
