//! Media servers, on both backends, with a real qBittorrent and loopback
//! servers that answer as Jellyfin, Emby and Plex do: once a movie is
//! imported, each server that is set up is asked to rescan just its
//! folder, as that server sees it — Jellyfin under the library path
//! Capstan sees, Plex under the path its own library section has — and
//! nothing more until something else is imported; a server that fails
//! (Emby busy) is asked again with the next sweep, and one no grant
//! covers is not asked and says why. `inventory.query` asks each whether
//! it holds the movie.

use capstan::acquisition::EVALUATE_ACQUISITION;
use capstan::config::{Auth, CapabilityConfig, SecretRef, ServiceConfig};
use capstan::notify::rescan::REFRESH_MEDIA_SERVERS;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::grants::for_an_hour;
use capstan_tests::host::TestHost;
use capstan_tests::mock_mediaserver::{Kind, MockMediaServer};
use capstan_tests::mock_torznab::MockTorznab;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use serde_json::{Value, json};

use super::pipeline::{await_import, start_with, wanted_movie};
use super::series_env::task_result;

const RELEASE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";

fn header(name: &str, key: &str, prefix: &str, suffix: &str) -> Auth {
    Auth::Header { name: name.into(), value: SecretRef(key.into()), prefix: prefix.into(), suffix: suffix.into() }
}

fn service(base_url: String, auth: Auth) -> ServiceConfig {
    ServiceConfig { base_url, auth, operations: Vec::new(), timeout_ms: 10_000, response_cap_bytes: 1 << 20 }
}

/// Each server's outcome of one `refreshMediaServers`.
async fn refresh(env: &super::pipeline::Env) -> std::collections::BTreeMap<String, Value> {
    let done = task_result(env, REFRESH_MEDIA_SERVERS, json!({})).await;
    done["servers"].as_array().unwrap().iter().map(|s| (s["server"].as_str().unwrap().to_string(), s.clone())).collect()
}

async fn each_media_server_rescans_just_the_imported_folder(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(60_000, 61));
    let indexer = MockTorznab::offering_dune("indexer-key", "Loopback indexer", &dune).await;
    let jellyfin = MockMediaServer::start(Kind::Jellyfin, "jf-key", "/unused").await;
    let emby = MockMediaServer::start(Kind::Emby, "emby-key", "/unused").await;
    let plex = MockMediaServer::start(Kind::Plex, "plex-token", "/data/movies").await;
    let mut host = TestHost::new();
    let jellyfin_auth = header("Authorization", "jf-key", "MediaBrowser Token=\"", "\"");
    host.config.services.insert("jellyfin".into(), service(jellyfin.base_url(), jellyfin_auth));
    host.config.services.insert("emby".into(), service(emby.base_url(), header("X-Emby-Token", "emby-key", "", "")));
    host.config.services.insert("plex".into(), service(plex.base_url(), header("X-Plex-Token", "plex-token", "", "")));
    // Plex runs in a container and sees the library as /data/movies.
    let plex_sees = CapabilityConfig {
        settings: [("plex_library".to_string(), "/data/movies".to_string())].into(),
        ..Default::default()
    };
    host.config.capabilities.insert("mediaserver.refresh".into(), plex_sees);
    let env = start_with(backend, &qbt, indexer, host).await;
    for action in ["download.submit", "organize.execute"] {
        env.svc.authz.create_grant(&for_an_hour(action), "admin:test").await.unwrap();
    }
    let first = refresh(&env).await;
    assert!(first.values().all(|s| s["outcome"] == "nothing-new"), "{first:?}");

    // A movie is imported: without a grant no server is asked, and each says why.
    let slot = wanted_movie(&env).await;
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    let plan = swept["slots"][0]["planId"].as_str().unwrap();
    let download = env.svc.domain.download_for_plan(plan).await.unwrap().unwrap();
    let imported = await_import(&env, &download.id).await;
    let destination = imported.items[0]["destination"].as_str().unwrap();
    let folder = destination.rsplit_once('/').unwrap().0.to_string();
    let refused = refresh(&env).await;
    assert_eq!(refused["jellyfin"]["outcome"], "failed", "{refused:?}");
    assert!(refused["plex"]["reason"].as_str().unwrap().contains("grant"), "{refused:?}");
    assert_eq!((jellyfin.requests(), plex.requests()), (0, 0), "no server was asked");

    // Granted: each is asked for that folder, as it sees it; Emby is busy.
    env.svc.authz.create_grant(&for_an_hour("mediaserver.refresh"), "admin:test").await.unwrap();
    emby.answer(&[503]);
    let asked = refresh(&env).await;
    assert_eq!(asked["jellyfin"]["outcome"], "rescanned", "{asked:?}");
    assert_eq!(asked["emby"]["outcome"], "failed", "{asked:?}");
    assert!(asked["emby"]["reason"].as_str().unwrap().contains("Emby answered 503"), "{asked:?}");
    assert_eq!(jellyfin.rescanned(), [format!("{}/{folder}", env.library.display())]);
    assert_eq!(plex.rescanned(), [format!("/data/movies/{folder}")]);

    // The next sweep asks Emby again, and nobody else.
    let again = refresh(&env).await;
    assert_eq!(again["emby"]["outcome"], "rescanned", "{again:?}");
    assert_ne!(again["jellyfin"]["outcome"], "rescanned", "{again:?}");
    assert_eq!(emby.rescanned(), [format!("{}/{folder}", env.library.display())]);
    assert_eq!((jellyfin.rescanned().len(), plex.rescanned().len()), (1, 1));

    // Whether each server holds the movie: Plex has scanned it, the others not yet.
    plex.hold(693134, "Dune: Part Two", 2024);
    let origin = capstan::pipeline::Origin::cli(capstan::runtime::EffectClass::Read);
    let asked = env.caps.invoke(&origin, "inventory.query", &json!({"mediaServers": true})).await.unwrap();
    let listed = asked.output.unwrap();
    let on_servers = &listed["items"][0]["onServers"];
    let holds =
        |server: &str| on_servers.as_array().unwrap().iter().find(|s| s["server"] == server).unwrap()["holds"].clone();
    assert_eq!(
        (holds("plex"), holds("jellyfin"), holds("emby")),
        (json!(true), json!(false), json!(false)),
        "{listed}"
    );
    let state = capstan::notify::targets_of(&env.svc.db).await.unwrap();
    let emby_state = state.iter().find(|t| t.capability_id == "mediaserver.refresh:emby").unwrap();
    assert_eq!((emby_state.failures, emby_state.last_error.as_deref()), (0, None), "{emby_state:?}");
}

both_backends!(each_media_server_rescans_just_the_imported_folder);
