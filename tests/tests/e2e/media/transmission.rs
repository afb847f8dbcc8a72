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
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::host::TestHost;
use capstan_tests::mock_torznab::MockTorznab;
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
