//! Transmission as the download client, on both backends, with a real
//! `transmission-daemon`: a wanted movie found on the indexer is added to
//! Transmission through the same download capabilities qBittorrent's
//! users have — its `.torrent` from the indexer, labelled with its plan,
//! into the downloads folder — followed to completion and imported into
//! the library. The RPC reads go through `outbound-read` (the service's
//! table classes `torrent-get` as a read), the session-id handshake is the
//! client's, and the user and password are the host's.

use capstan::acquisition::EVALUATE_ACQUISITION;
use capstan::config::{Auth, OperationRule, SecretRef, ServiceConfig};
use capstan::domain::SlotStatus;
use capstan::pipeline::Origin;
use capstan::runtime::EffectClass;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::host::TestHost;
use capstan_tests::mock_torznab::{Indexer, Item, MockTorznab};
use capstan_tests::torrent;
use capstan_tests::transmission::Transmission;
use serde_json::json;

use super::pipeline::{await_import, start_with_client, wanted_movie};
use super::series_env::task_result;

/// The `transmission` service for `daemon`, set up as the console sets
/// it up: its user and password, `torrent-get` and `session-get` reads.
pub(super) fn service(daemon: &Transmission) -> (&'static str, ServiceConfig) {
    let mut reads = OperationRule::new("POST", "/transmission/rpc*", "read");
    reads.rpc_methods = vec!["torrent-get".into(), "session-get".into()];
    let client = ServiceConfig {
        base_url: daemon.base_url(),
        auth: Auth::Basic { username: daemon.username().into(), password: SecretRef(daemon.password().into()) },
        operations: vec![reads],
        timeout_ms: 10_000,
        response_cap_bytes: 4 << 20,
    };
    ("transmission", client)
}

const RELEASE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";

async fn a_movie_is_fetched_and_imported_through_transmission(backend: Backend) {
    let daemon = Transmission::start().await;
    let dune = torrent::single_file(&daemon.downloads(), RELEASE, &torrent::payload(80_000, 71));
    let indexer = MockTorznab::offering_dune("indexer-key", "Loopback indexer", &dune).await;
    let env = start_with_client(backend, service(&daemon), daemon.downloads(), indexer, TestHost::new()).await;
    capstan_tests::grants::allow_everything(&env.svc).await;

    let slot = wanted_movie(&env).await;
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    assert_eq!(swept["slots"][0]["outcome"], "submitted", "{swept}");
    let plan = swept["slots"][0]["planId"].as_str().unwrap();
    let download = env.svc.domain.download_for_plan(plan).await.unwrap().unwrap();
    assert_eq!(download.client_hash, dune.info_hash);

    // Transmission holds it, labelled with its plan, in the downloads folder.
    let listed = daemon.rpc("torrent-get", json!({"fields": ["hashString", "labels", "downloadDir"]})).await;
    let held = &listed["arguments"]["torrents"][0];
    assert_eq!(held["hashString"], dune.info_hash.as_str());
    assert!(held["labels"].as_array().unwrap().contains(&json!(format!("plan:{plan}"))), "{held}");
    assert_eq!(held["downloadDir"].as_str().map(|d| d.trim_end_matches('/')), daemon.downloads().to_str());

    // The data was already there: Transmission verifies it, the sync sees
    // it complete, and it is imported into the library.
    let imported = await_import(&env, &download.id).await;
    let destination = imported.items[0]["destination"].as_str().unwrap();
    assert!(env.library.join(destination).is_file(), "{destination} is in the library");
}

both_backends!(a_movie_is_fetched_and_imported_through_transmission);

const DEAD: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-DEAD.mkv";

/// Waits until Transmission has settled `hash` (checked what is on disk
/// and gone looking for peers).
async fn await_looking_for_peers(daemon: &Transmission, hash: &str) {
    let started = std::time::Instant::now();
    loop {
        let held = daemon.rpc("torrent-get", json!({"ids": [hash], "fields": ["status"]})).await;
        if held["arguments"]["torrents"][0]["status"] == 4 {
            return;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "never settled: {held}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Which torrents Transmission holds, by hash.
async fn held_by(daemon: &Transmission) -> Vec<String> {
    let listed = daemon.rpc("torrent-get", json!({"fields": ["hashString"]})).await;
    let torrents = listed["arguments"]["torrents"].as_array().unwrap();
    torrents.iter().filter_map(|t| t["hashString"].as_str().map(str::to_string)).collect()
}

/// The operator's repairs through Transmission: a release nobody seeds is
/// given up for another (`download.replace` removes its torrent from
/// Transmission, keeping its data, and blocks it), the next search fetches
/// the other release, whose data then appears on disk; `download.recheck`
/// has Transmission verify it, and it is imported.
async fn a_dead_release_is_replaced_and_a_recheck_finds_the_data(backend: Backend) {
    let daemon = Transmission::start().await;
    let elsewhere = tempfile::tempdir().unwrap();
    let payload = torrent::payload(90_000, 72);
    let dead = torrent::single_file(elsewhere.path(), DEAD, &torrent::payload(90_000, 73));
    let alive = torrent::single_file(elsewhere.path(), RELEASE, &payload);
    let item = |built: &torrent::BuiltTorrent, seeders: u32| {
        let leak = |text: &str| -> &'static str { Box::leak(text.to_string().into_boxed_str()) };
        Item {
            title: leak(&built.name),
            size: 90_000,
            seeders,
            peers: seeders + 2,
            infohash: Some(leak(&built.info_hash)),
            categories: &[2000, 2045],
            tmdb_id: Some(693134),
            pub_date: "Sat, 02 Mar 2024 09:00:00 +0000",
            ..Item::default()
        }
    };
    let items = vec![item(&dead, 50), item(&alive, 5)];
    let indexer = Indexer { title: "Loopback indexer", movie_params: Some("q,imdbid,tmdbid"), tv_params: None, items };
    let indexer = MockTorznab::start("indexer-key", indexer).await;
    indexer.serve_torrent(0, dead.bytes.clone());
    indexer.serve_torrent(1, alive.bytes.clone());
    let env = start_with_client(backend, service(&daemon), daemon.downloads(), indexer, TestHost::new()).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let slot = wanted_movie(&env).await;
    let operator = Origin::cli(EffectClass::Execute);

    // The best-seeded release goes to Transmission, and nobody seeds it.
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    let plan = env.svc.domain.plan(swept["slots"][0]["planId"].as_str().unwrap()).await.unwrap();
    let first = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    assert_eq!(first.client_hash, dead.info_hash);
    await_looking_for_peers(&daemon, &dead.info_hash).await;

    // Given up for another release: the torrent leaves Transmission and the
    // release is blocked.
    let input = json!({"downloadTaskId": first.id, "reason": "nobody seeds it"});
    let replaced = env.caps.invoke(&operator, "download.replace", &input).await.unwrap();
    let output = replaced.output.unwrap_or_else(|| panic!("{:?}", replaced.error));
    assert_eq!((output["status"].as_str(), output["blockedTitle"].as_str()), (Some("removed"), Some(DEAD)));
    assert!(!held_by(&daemon).await.contains(&dead.info_hash), "the dead torrent left Transmission");
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Wanted);

    // The next search fetches the other release; its data is not there yet.
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    assert_eq!(swept["slots"][0]["outcome"], "submitted", "{swept}");
    let plan = env.svc.domain.plan(swept["slots"][0]["planId"].as_str().unwrap()).await.unwrap();
    let second = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    assert_eq!(second.client_hash, alive.info_hash);
    await_looking_for_peers(&daemon, &alive.info_hash).await;

    // The data turns up on disk; a recheck has Transmission verify it and
    // go on, and the download is imported.
    std::fs::copy(elsewhere.path().join(RELEASE), daemon.downloads().join(RELEASE)).unwrap();
    let input = json!({"downloadTaskId": second.id});
    let rechecked = env.caps.invoke(&operator, "download.recheck", &input).await.unwrap();
    let output = rechecked.output.unwrap_or_else(|| panic!("{:?}", rechecked.error));
    assert_eq!((output["rechecked"].as_bool(), output["resumed"].as_bool()), (Some(true), Some(true)), "{output}");
    let imported = await_import(&env, &second.id).await;
    let destination = imported.items[0]["destination"].as_str().unwrap();
    assert_eq!(std::fs::read(env.library.join(destination)).unwrap(), payload);
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Satisfied);
}

both_backends!(a_dead_release_is_replaced_and_a_recheck_finds_the_data);
