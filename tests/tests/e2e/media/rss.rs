//! A tracker's own RSS feed as a source of releases, on both backends,
//! with a real qBittorrent: the feed is a service (`rss`) holding the
//! tracker's address and the member's passkey, the setting `rss_path` the
//! rest of its URL. The feed sync reads it beside the Torznab indexer, the
//! host adding the passkey; a wanted movie it lists is fetched, its
//! `.torrent` taken from the tracker with the passkey filled in again by
//! the host, and imported. The passkey is never in a plan, the ledger or
//! the audit log, and a wrong one is said where the user looks.

use std::collections::BTreeMap;

use capstan::acquisition::SYNC_FEEDS;
use capstan::config::{Auth, CapabilityConfig, SecretRef, ServiceConfig};
use capstan::domain::SlotStatus;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::host::TestHost;
use capstan_tests::mock_rss::{Listed, MockRss};
use capstan_tests::mock_torznab::{Indexer, MockTorznab};
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use serde_json::json;

use super::pipeline::{Env, await_import, start_with, wanted_movie};
use super::series_env::task_result;

const DUNE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";
const SHOW: &str = "Some.Other.Show.S03E04.1080p.WEB-DL.DDP5.1.H.264-FLUX.mkv";
const PASSKEY: &str = "f00dfeed5eed1234abcd";

/// A host whose `rss` service is the tracker, with `passkey`.
fn host_with_feed(tracker: &MockRss, passkey: &str) -> TestHost {
    let mut host = TestHost::new();
    let feed = ServiceConfig {
        base_url: tracker.base_url(),
        auth: Auth::Query { name: "passkey".into(), value: SecretRef(passkey.into()) },
        operations: Vec::new(),
        timeout_ms: 10_000,
        response_cap_bytes: 4 << 20,
    };
    host.config.services.insert("rss".into(), feed);
    let settings = BTreeMap::from([("rss_path".to_string(), "/rss.php?cat=2000".to_string())]);
    host.config.capabilities.insert("release.search".into(), CapabilityConfig { settings, ..Default::default() });
    host
}

/// Capstan with `tracker` as its `rss` feed (with `passkey`) beside a
/// Torznab indexer that offers nothing.
async fn start_beside_an_empty_indexer(backend: Backend, qbt: &QBittorrent, tracker: &MockRss, passkey: &str) -> Env {
    let nothing =
        Indexer { title: "Loopback indexer", movie_params: Some("q,imdbid,tmdbid"), tv_params: None, items: vec![] };
    let indexer = MockTorznab::start("indexer-key", nothing).await;
    start_with(backend, qbt, indexer, host_with_feed(tracker, passkey)).await
}

async fn a_movie_in_a_trackers_feed_is_fetched_with_the_passkey_only_the_host_holds(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), DUNE, &torrent::payload(60_000, 51));
    let show = torrent::single_file(&qbt.downloads(), SHOW, &torrent::payload(20_000, 52));
    let listed = vec![
        Listed { torrent: dune.clone(), category: 2000, seeds: 20 },
        Listed { torrent: show, category: 5000, seeds: 9 },
    ];
    let tracker = MockRss::start(PASSKEY, listed).await;
    let env = start_beside_an_empty_indexer(backend, &qbt, &tracker, PASSKEY).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let slot = wanted_movie(&env).await;

    // The sync reads the feed's movies with the passkey the host added, and
    // fetches Dune's `.torrent` with it.
    let synced = task_result(&env, SYNC_FEEDS, json!({})).await;
    assert_eq!(synced["slots"][0]["outcome"], "submitted", "{synced}");
    let asked = tracker.requests();
    assert_eq!(asked[0].0, "/rss.php");
    assert_eq!((asked[0].1["passkey"].as_str(), asked[0].1["cat"].as_str()), (PASSKEY, "2000"));
    let fetched = asked.iter().find(|(path, _)| path == "/download.php").expect("the .torrent was fetched");
    assert_eq!((fetched.1["id"].as_str(), fetched.1["passkey"].as_str()), ("0", PASSKEY));
    let plan = env.svc.domain.plan(synced["slots"][0]["planId"].as_str().unwrap()).await.unwrap();
    assert_eq!(plan.payload["handOff"]["kind"], "torrent-link", "{:?}", plan.payload);
    let download = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    assert_eq!(download.client_hash, dune.info_hash);

    // It is imported, and the passkey is nowhere Capstan writes.
    await_import(&env, &download.id).await;
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Satisfied);
    let kept: Vec<String> = sqlx::query_scalar(
        "SELECT COALESCE(download_url, '') || COALESCE(evidence, '') FROM source_release \
         UNION ALL SELECT payload FROM acquisition_plan \
         UNION ALL SELECT COALESCE(result, '') || COALESCE(error, '') FROM capability_invocation \
         UNION ALL SELECT COALESCE(input_summary, '') || COALESCE(detail, '') FROM audit_event \
         UNION ALL SELECT payload FROM task",
    )
    .fetch_all(&env.svc.db.pool)
    .await
    .unwrap();
    assert!(kept.iter().any(|k| k.contains("passkey=%5Bredacted%5D")), "the link is kept with a slot: {kept:?}");
    assert!(kept.iter().all(|k| !k.contains(PASSKEY)), "{kept:?}");
}

both_backends!(a_movie_in_a_trackers_feed_is_fetched_with_the_passkey_only_the_host_holds);

async fn a_wrong_passkey_is_said_and_the_indexers_are_still_read(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), DUNE, &torrent::payload(60_000, 53));
    let tracker = MockRss::start(PASSKEY, vec![Listed { torrent: dune, category: 2000, seeds: 20 }]).await;
    let env = start_beside_an_empty_indexer(backend, &qbt, &tracker, "not-the-passkey-0000").await;
    let origin = capstan::pipeline::Origin::cli(capstan::runtime::EffectClass::Read);
    let read = env.caps.invoke(&origin, "release.search", &json!({"recent": true})).await.unwrap();
    let output = read.output.unwrap_or_else(|| panic!("{:?}", read.error));
    let reports = output["indexers"].as_array().unwrap();
    let feed = reports.iter().find(|r| r["indexer"] == "rss").unwrap();
    assert!(feed["error"].as_str().unwrap().contains("refused the configured API key (status 403)"), "{feed}");
    assert!(!output.to_string().contains("not-the-passkey"), "{output}");
    let torznab = reports.iter().find(|r| r["indexer"] == "torznab").unwrap();
    assert!(torznab["error"].is_null(), "{torznab}");
}

both_backends!(a_wrong_passkey_is_said_and_the_indexers_are_still_read);

/// A feed that lists torrents by their link alone: the release is known
/// again by its link on the next read (never recorded twice, so a block
/// on it holds), and its hash comes from the `.torrent` the host fetched.
async fn a_feed_without_hashes_is_known_by_its_links(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), DUNE, &torrent::payload(60_000, 54));
    let tracker = MockRss::start(PASSKEY, vec![Listed { torrent: dune.clone(), category: 2000, seeds: 20 }]).await;
    tracker.without_hashes();
    let env = start_beside_an_empty_indexer(backend, &qbt, &tracker, PASSKEY).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let slot = wanted_movie(&env).await;
    // A second wanted title keeps the feed read once Dune is fetched.
    let mut arrival = capstan_tests::fixtures::dune_part_two();
    (arrival.tmdb_id, arrival.title, arrival.year) = (Some(329), "Jurassic Park".into(), Some(1993));
    let arrival = env.svc.domain.upsert_entity(&arrival).await.unwrap();
    let other = capstan::domain::NewSlot { entity_id: arrival.id, season: None, quality: "any".into(), profile: None };
    env.svc.domain.want(&other).await.unwrap();

    let synced = task_result(&env, SYNC_FEEDS, json!({})).await;
    assert_eq!(synced["slots"][0]["outcome"], "submitted", "{synced}");
    let plan = env.svc.domain.plan(synced["slots"][0]["planId"].as_str().unwrap()).await.unwrap();
    let download = env.svc.domain.download_for_plan(&plan.id).await.unwrap().unwrap();
    assert_eq!(download.client_hash, dune.info_hash, "the hash of the .torrent the host fetched");
    let again = task_result(&env, SYNC_FEEDS, json!({})).await;
    assert_eq!((again["releases"].as_u64(), again["new"].as_u64()), (Some(1), Some(0)), "{again}");
    let recorded: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM source_release").fetch_one(&env.svc.db.pool).await.unwrap();
    assert_eq!(recorded, 1, "the release is recorded once");
    await_import(&env, &download.id).await;
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Satisfied);
}

both_backends!(a_feed_without_hashes_is_known_by_its_links);
