//! Downloads end to end: `download.plan`, `download.submit`,
//! `download.status` and `download.recheck` through the one invoke path,
//! against the real domain store and a real qbittorrent-nox fed a torrent
//! built here for data already on disk. The `.torrent` file is served by a
//! loopback indexer the host reaches as service `torznab`, as a Torznab
//! indexer's download link would be: offline, a magnet would never get its
//! metadata.
//!
//! What a user would notice: a plan becomes exactly one torrent in
//! qBittorrent however often it is submitted; a plan whose slot moved on,
//! or a caller without authority, adds nothing; the download reads back
//! and, after a recheck, is completed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::config::{Auth, CapabilityConfig, SecretRef, ServiceConfig};
use capstan::domain::{Author, Domain, NewEntity, NewPlan, NewRelease, NewSlot, Slot, SourceRelease};
use capstan::pipeline::{Capabilities, Invocation, Origin};
use capstan::runtime::{EffectClass, Status};
use capstan::store::Db;
use capstan_sdk::qbittorrent::Torrent;
use capstan_tests::both_backends;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent::{self, BuiltTorrent};
use serde_json::{Value, json};

/// Checks of a few hundred KiB take well under a second; the margin is for
/// a CI machine busy compiling.
const DEADLINE: Duration = Duration::from_secs(60);

pub(super) struct Env {
    /// Keeps the data directory alive.
    pub(super) _host: TestHost,
    pub(super) app: Arc<capstan::app::App>,
    pub(super) caps: Arc<Capabilities>,
    pub(super) svc: capstan::pipeline::Services,
}

impl Env {
    pub(super) fn domain(&self) -> &Domain {
        &self.svc.domain
    }

    pub(super) async fn invoke(&self, origin: &Origin, id: &str, input: Value) -> Invocation {
        self.caps.invoke(origin, id, &input).await.unwrap()
    }
}

/// The operator at the command line; each call is a new request.
pub(super) fn operator() -> Origin {
    Origin::cli(EffectClass::Execute)
}

pub(super) fn output(inv: Invocation) -> Value {
    assert_eq!(inv.status, Status::Succeeded, "{:?}", inv.error);
    inv.output.unwrap()
}

fn error(inv: &Invocation) -> (&str, &str) {
    assert_eq!(inv.status, Status::Failed, "{:?}", inv.output);
    let e = inv.error.as_ref().unwrap();
    (e.kind.as_str(), e.message.as_str())
}

async fn start(backend: Backend, host: TestHost) -> Env {
    let db = Db::open(&fresh_url(backend, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    let svc = app.services().clone();
    app.flush_component_events().await.unwrap();
    svc.ledger.heartbeat().await.unwrap();
    Env { _host: host, app, caps, svc }
}

/// Serves `.torrent` files on loopback under `/download/<name>`, as an
/// indexer's download links do; returns its base URL.
pub(super) async fn serve_torrent_files(files: BTreeMap<String, Vec<u8>>) -> String {
    use axum::extract::{Path, State};
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    async fn file(State(files): State<Arc<BTreeMap<String, Vec<u8>>>>, Path(name): Path<String>) -> impl IntoResponse {
        match files.get(&name) {
            Some(bytes) => {
                (StatusCode::OK, [("content-type", "application/x-bittorrent")], bytes.clone()).into_response()
            }
            None => StatusCode::NOT_FOUND.into_response(),
        }
    }
    let app = axum::Router::new().route("/download/{name}", axum::routing::get(file)).with_state(Arc::new(files));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

/// A host whose `qbittorrent` service logs into `qbt` and whose `torznab`
/// service is the loopback indexer, with download.submit told to fetch
/// that indexer's links and to save into qBittorrent's download folder.
async fn start_with_qbittorrent(qbt: &QBittorrent, indexer: &str) -> Env {
    start_with_qbittorrent_on(Backend::Sqlite, qbt, indexer).await
}

/// [`start_with_qbittorrent`] on `backend`.
pub(super) async fn start_with_qbittorrent_on(backend: Backend, qbt: &QBittorrent, indexer: &str) -> Env {
    let mut host = TestHost::new();
    let qbittorrent = ServiceConfig {
        base_url: qbt.base_url(),
        auth: Auth::FormLogin {
            path: "/api/v2/auth/login".into(),
            username: qbt.username().into(),
            password: SecretRef(qbt.password().into()),
            username_field: "username".into(),
            password_field: "password".into(),
        },
        operations: Vec::new(),
        timeout_ms: 10_000,
        response_cap_bytes: 4 << 20,
    };
    let torznab = ServiceConfig {
        base_url: indexer.to_string(),
        auth: Auth::None,
        operations: Vec::new(),
        timeout_ms: 5_000,
        response_cap_bytes: 1 << 20,
    };
    host.config.services.insert("qbittorrent".into(), qbittorrent);
    host.config.services.insert("torznab".into(), torznab);
    let settings = BTreeMap::from([
        ("save_path".to_string(), qbt.downloads().display().to_string()),
        ("category".to_string(), "movies".to_string()),
    ]);
    host.config.capabilities.insert("download.submit".into(), CapabilityConfig { settings, ..Default::default() });
    start(backend, host).await
}

/// A wanted movie slot and a release of it, identified, with `infohash`
/// and `download_url`.
pub(super) async fn wanted(
    domain: &Domain,
    title: &str,
    infohash: Option<&str>,
    download_url: Option<String>,
) -> (Slot, SourceRelease) {
    let entity = domain
        .upsert_entity(&NewEntity {
            kind: capstan::domain::EntityKind::Movie,
            tmdb_id: Some(438631),
            title: "Dune".into(),
            original_title: None,
            year: Some(2021),
            seasons: vec![],
            episodes: Vec::new(),
        })
        .await
        .unwrap();
    let slot = domain
        .want(&NewSlot { entity_id: entity.id.clone(), season: None, quality: "1080p".into(), profile: None })
        .await
        .unwrap();
    let release = domain
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: title.into(),
            parsed: json!({"title": "Dune", "year": 2021}),
            size: Some(70_000),
            infohash: infohash.map(String::from),
            download_url,
            magnet_url: None,
        })
        .await
        .unwrap();
    domain
        .match_identity(
            &release.id,
            Some(&entity.id),
            capstan::domain::IdentityStatus::Resolved,
            &json!({"tmdb": 438631}),
        )
        .await
        .unwrap();
    (slot, release)
}

/// Torrents qBittorrent holds, optionally only those with `tag`.
pub(super) async fn torrents(qbt: &QBittorrent, tag: Option<&str>) -> Vec<Torrent> {
    let client = qbt.login().await;
    let mut req = client.get(format!("{}/api/v2/torrents/info", qbt.base_url()));
    if let Some(tag) = tag {
        req = req.query(&[("tag", tag)]);
    }
    req.send().await.unwrap().error_for_status().unwrap().json().await.unwrap()
}

/// The torrents tagged `tag`, once there are any: qBittorrent takes an
/// added torrent into its list a moment after it answers the add.
pub(super) async fn tagged_torrents(qbt: &QBittorrent, tag: &str) -> Vec<Torrent> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let found = torrents(qbt, Some(tag)).await;
        if !found.is_empty() || Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls `download.status` for one task until `wanted` holds.
pub(super) async fn wait_for_status(env: &Env, task: &str, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let read =
            env.invoke(&Origin::cli(EffectClass::Read), "download.status", json!({"downloadTaskIds": [task]})).await;
        let seen = output(read)["downloads"][0].clone();
        if wanted(&seen) {
            return seen;
        }
        assert!(Instant::now() < deadline, "download {task} never became {what}; last seen: {seen}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn built(qbt: &QBittorrent, name: &str, seed: u64) -> BuiltTorrent {
    torrent::single_file(&qbt.downloads(), name, &torrent::payload(70_000, seed))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_becomes_one_torrent_however_often_it_is_submitted_and_completes_after_a_recheck() {
    let qbt = QBittorrent::start().await;
    let dune = built(&qbt, "Dune.2021.1080p.BluRay.x264.mkv", 21);
    let indexer = serve_torrent_files(BTreeMap::from([("dune.torrent".to_string(), dune.bytes.clone())])).await;
    let env = start_with_qbittorrent(&qbt, &indexer).await;
    let link = Some(format!("{indexer}/download/dune.torrent"));
    let (slot, release) = wanted(env.domain(), &dune.name, Some(&dune.info_hash), link).await;

    let plan = output(
        env.invoke(&operator(), "download.plan", json!({"sourceReleaseId": release.id, "slotId": slot.id})).await,
    );
    assert_eq!((plan["status"].as_str(), plan["infohash"].as_str()), (Some("draft"), Some(dune.info_hash.as_str())));
    let plan_id = plan["id"].as_str().unwrap().to_string();
    assert_eq!(
        env.domain().slot(&slot.id).await.unwrap().status,
        capstan::domain::SlotStatus::Wanted,
        "a draft reserves nothing"
    );
    assert!(torrents(&qbt, None).await.is_empty());

    let first = output(env.invoke(&operator(), "download.submit", json!({"planId": plan_id})).await);
    assert_eq!((first["added"].as_bool(), first["clientHash"].as_str()), (Some(true), Some(dune.info_hash.as_str())));
    let tag = format!("plan:{plan_id}");
    let held = tagged_torrents(&qbt, &tag).await;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!((held[0].hash.as_str(), held[0].category.as_str()), (dune.info_hash.as_str(), "movies"));
    assert_eq!(env.domain().plan(&plan_id).await.unwrap().status, capstan::domain::PlanStatus::Submitted);
    let task = env.domain().download_for_plan(&plan_id).await.unwrap().expect("a download task is recorded");
    assert_eq!(
        (task.id.as_str(), task.client_hash.as_str()),
        (first["downloadTaskId"].as_str().unwrap(), dune.info_hash.as_str())
    );

    // A new request to submit the same plan finds the torrent and adds nothing.
    let again = output(env.invoke(&operator(), "download.submit", json!({"planId": plan_id})).await);
    assert_eq!((again["added"].as_bool(), again["downloadTaskId"].as_str()), (Some(false), Some(task.id.as_str())));
    assert_eq!(torrents(&qbt, None).await.len(), 1);

    // Let qBittorrent finish loading it: a recheck mid-load can stick.
    let settled = wait_for_status(&env, &task.id, "settled", |d| d["status"] != "queued").await;
    assert_eq!(settled["clientHash"], dune.info_hash);
    let recheck = env.invoke(&operator(), "download.recheck", json!({"downloadTaskId": task.id})).await;
    if settled["status"] == "completed" {
        // qBittorrent checked the data on disk as it added the torrent.
        assert_eq!(error(&recheck).0, "conflict", "a complete download has nothing to repair");
    } else {
        let rechecked = output(recheck);
        assert_eq!(
            (rechecked["rechecked"].as_bool(), rechecked["clientHash"].as_str()),
            (Some(true), Some(dune.info_hash.as_str()))
        );
    }
    let done = wait_for_status(&env, &task.id, "completed", |d| d["status"] == "completed").await;
    assert_eq!(done["progress"], 1.0);
    assert_eq!(done["contentPath"].as_str(), Some(dune.files[0].to_str().unwrap()));
    // Reading wrote nothing: the store still has what submit recorded.
    assert_eq!(env.domain().download(&task.id).await.unwrap().status, capstan::domain::DownloadStatus::Queued);

    // The default listing includes it.
    let all = output(env.invoke(&Origin::cli(EffectClass::Read), "download.status", json!({})).await);
    assert_eq!(all["downloads"].as_array().unwrap().len(), 1);
    assert_eq!(all["downloads"][0]["downloadTaskId"], task.id);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slot_that_moved_on_or_a_caller_without_authority_adds_nothing() {
    let qbt = QBittorrent::start().await;
    let indexer = serve_torrent_files(BTreeMap::new()).await;
    let env = start_with_qbittorrent(&qbt, &indexer).await;
    let domain = env.domain();
    let (slot, first) = wanted(domain, "Dune.2021.1080p.WEB-DL", Some(&"1".repeat(40)), None).await;
    let (_, second) = wanted(domain, "Dune.2021.1080p.BluRay", Some(&"2".repeat(40)), None).await;
    let someone = Author::new("cli:someone");
    let draft = |release: &SourceRelease| NewPlan {
        slot_id: slot.id.clone(),
        source_release_id: release.id.clone(),
        note: None,
    };
    let taken = domain.draft_plan(&someone, &draft(&first)).await.unwrap();
    let late = domain.draft_plan(&someone, &draft(&second)).await.unwrap();

    // An API key with no approval and no grant is stopped at the host.
    let key = Origin { actor: capstan::runtime::Actor::ApiKey, principal: "key:k-unused".into(), ..operator() };
    let denied = env.invoke(&key, "download.submit", json!({"planId": taken.id})).await;
    assert_eq!(error(&denied).0, "denied");
    assert_eq!(domain.plan(&taken.id).await.unwrap().status, capstan::domain::PlanStatus::Draft);

    // Another plan took the slot: the late one is a conflict.
    domain.reserve_plan(&taken.id).await.unwrap();
    let refused = env.invoke(&operator(), "download.submit", json!({"planId": late.id})).await;
    let (kind, message) = error(&refused);
    assert_eq!(kind, "conflict");
    assert!(message.contains("changed since the plan was drafted"), "{message}");
    assert_eq!(domain.plan(&late.id).await.unwrap().status, capstan::domain::PlanStatus::Draft);
    assert!(torrents(&qbt, None).await.is_empty(), "qBittorrent got nothing");
}

async fn planning_reports_the_store_s_refusals(backend: Backend) {
    let env = start(backend, TestHost::new()).await;
    let (slot, release) = wanted(env.domain(), "Dune.2021.2160p", Some(&"3".repeat(40)), None).await;
    let unresolved = env
        .domain()
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: "Dune.2021.Unknown".into(),
            parsed: json!({}),
            size: None,
            infohash: Some("4".repeat(40)),
            download_url: None,
            magnet_url: None,
        })
        .await
        .unwrap();

    let inv =
        env.invoke(&operator(), "download.plan", json!({"sourceReleaseId": unresolved.id, "slotId": slot.id})).await;
    let (kind, message) = error(&inv);
    assert_eq!(kind, "conflict");
    assert!(message.contains("resolve it before planning"), "{message}");
    let inv = env
        .invoke(&operator(), "download.plan", json!({"sourceReleaseId": release.id, "slotId": "no-such-slot"}))
        .await;
    assert_eq!(error(&inv).0, "not-found");
    assert!(env.domain().plans(None, None, 10).await.unwrap().is_empty(), "nothing was drafted");

    // A season's slot takes a release of that season or a pack holding
    // it, and refuses another season.
    let domain = env.domain();
    let series = domain
        .upsert_entity(&NewEntity {
            kind: capstan::domain::EntityKind::Tv,
            tmdb_id: Some(1396),
            title: "Tidewater".into(),
            original_title: None,
            year: Some(2008),
            seasons: vec![],
            episodes: Vec::new(),
        })
        .await
        .unwrap();
    let slot = NewSlot { entity_id: series.id.clone(), season: Some(2), quality: "1080p".into(), profile: None };
    let season_two = domain.want(&slot).await.unwrap();
    let mut releases = Vec::new();
    for (n, (title, parsed)) in [
        ("Tidewater.S01.1080p.WEB-DL", json!({"title": "Tidewater", "season": 1})),
        ("Tidewater.S01-S03.1080p.BluRay", json!({"title": "Tidewater", "season": 1, "seasons": [1, 2, 3]})),
    ]
    .into_iter()
    .enumerate()
    {
        let new = NewRelease {
            indexer: "torznab".into(),
            title: title.into(),
            parsed,
            size: None,
            infohash: Some(format!("{n}").repeat(40)),
            download_url: None,
            magnet_url: None,
        };
        let release = domain.record_release(&new).await.unwrap();
        domain
            .match_identity(
                &release.id,
                Some(&series.id),
                capstan::domain::IdentityStatus::Resolved,
                &json!({"tmdb": 1396}),
            )
            .await
            .unwrap();
        releases.push(release);
    }
    let plan = |release: &SourceRelease| json!({"sourceReleaseId": release.id, "slotId": season_two.id});
    let other_season = env.invoke(&operator(), "download.plan", plan(&releases[0])).await;
    let (kind, message) = error(&other_season);
    assert_eq!(kind, "conflict");
    assert!(message.contains("not of season 2"), "{message}");
    let drafted = env.invoke(&operator(), "download.plan", plan(&releases[1])).await;
    assert_eq!(drafted.status, Status::Succeeded, "a pack of seasons 1-3 fills season 2: {drafted:?}");

    // Rechecking needs a download that exists; the store says so before
    // any client is asked.
    let inv = env.invoke(&operator(), "download.recheck", json!({"downloadTaskId": "no-such-download"})).await;
    let (kind, message) = error(&inv);
    assert_eq!(kind, "not-found");
    assert!(message.contains("no-such-download"), "{message}");
}

both_backends!(planning_reports_the_store_s_refusals);

#[tokio::test(flavor = "multi_thread")]
async fn data_gone_is_missing_and_download_recheck_recovers_it_once_put_back() {
    let mut qbt = QBittorrent::start().await;
    let contents = torrent::payload(70_000, 31);
    let dune = torrent::single_file(&qbt.downloads(), "Dune.2021.1080p.WEB-DL.x264.mkv", &contents);
    let indexer = serve_torrent_files(BTreeMap::from([("dune.torrent".to_string(), dune.bytes.clone())])).await;
    let env = start_with_qbittorrent(&qbt, &indexer).await;
    let link = Some(format!("{indexer}/download/dune.torrent"));
    let (slot, release) = wanted(env.domain(), &dune.name, Some(&dune.info_hash), link).await;
    let plan = output(
        env.invoke(&operator(), "download.plan", json!({"sourceReleaseId": release.id, "slotId": slot.id})).await,
    );
    let submitted = output(env.invoke(&operator(), "download.submit", json!({"planId": plan["id"]})).await);
    let task = submitted["downloadTaskId"].as_str().unwrap().to_string();
    let settled = wait_for_status(&env, &task, "settled", |d| d["status"] != "queued").await;
    if settled["status"] != "completed" {
        output(env.invoke(&operator(), "download.recheck", json!({"downloadTaskId": task})).await);
    }
    wait_for_status(&env, &task, "completed", |d| d["status"] == "completed").await;

    // The data disappears while the client is down: it comes back missing.
    qbt.stop().await;
    std::fs::remove_file(&dune.files[0]).unwrap();
    qbt.start_again().await;
    // qBittorrent 4.5 usually flags the torrent missingFiles on load; now and
    // then (depending on when it last wrote the torrent's resume data) it
    // instead forgets the finished state and shows an empty download. Either
    // way Capstan reports what the client says, and the recheck below is the
    // way back.
    let after = wait_for_status(&env, &task, "missing or forgotten", |d| {
        d["status"] == "missing" || (d["clientState"] == "stalledDL" && d["progress"] == 0.0)
    })
    .await;
    if after["status"] == "missing" {
        assert_eq!(after["clientState"], "missingFiles", "{after}");
    } else {
        assert_eq!(after["status"], "stalled", "an empty download is stalled, never completed: {after}");
    }

    // Put back, one download.recheck brings it to completed again.
    std::fs::write(&dune.files[0], &contents).unwrap();
    let rechecked = output(env.invoke(&operator(), "download.recheck", json!({"downloadTaskId": task})).await);
    assert_eq!(rechecked["clientHash"], dune.info_hash.as_str());
    let done = wait_for_status(&env, &task, "completed", |d| d["status"] == "completed").await;
    assert_eq!(done["progress"], 1.0);
    assert_eq!(torrents(&qbt, None).await.len(), 1, "recheck re-adds nothing");
}

/// `POST /acquisition-plans` drives download.plan and download.submit for
/// an entity's first wanted slot, and says why when nothing could be done.
#[tokio::test(flavor = "multi_thread")]
async fn acquisition_plans_over_http_plan_and_submit_or_say_why_not() {
    let qbt = QBittorrent::start().await;
    let dune = built(&qbt, "Dune.2021.1080p.BluRay.x264-GRP.mkv", 41);
    let indexer = serve_torrent_files(BTreeMap::from([("dune.torrent".to_string(), dune.bytes.clone())])).await;
    let env = start_with_qbittorrent(&qbt, &indexer).await;
    let link = Some(format!("{indexer}/download/dune.torrent"));
    let (slot, release) = wanted(env.domain(), &dune.name, Some(&dune.info_hash), link).await;
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let key =
        capstan::http::keys::create(&env.svc.db, "automation", &[EffectClass::Execute], "admin:ops").await.unwrap();
    let grant = capstan::authz::NewGrant {
        action: "policy.acquisition".into(),
        policy_name: None,
        policy_revision: None,
        policy_revision_id: None,
        scope: Default::default(),
        daily_invocations: 10,
        daily_bytes: 100_000,
        expires_at: capstan::store::now_ms() + 3_600_000,
        reason: None,
    };
    env.svc.authz.create_grant(&grant, "admin:ops").await.unwrap();
    let automation = capstan_tests::api::Api::new(&base).with_key(&key);
    let post = |body: Value| {
        let automation = automation.clone();
        async move { automation.post("/acquisition-plans", body).await.1 }
    };

    let answer = post(json!({"sourceReleaseId": release.id, "entityId": slot.entity_id})).await;
    assert_eq!(answer["submitted"], true, "{answer}");
    assert_eq!(answer["plan"]["slotId"], slot.id.as_str());
    assert_eq!(torrents(&qbt, None).await.len(), 1);

    // The entity's only slot is taken now: nothing to plan, and it says so.
    let answer = post(json!({"sourceReleaseId": release.id, "entityId": slot.entity_id})).await;
    assert_eq!(answer["submitted"], false, "{answer}");
    assert_eq!(answer["reasons"][0]["reason"]["kind"], "no-slot");
    // A named slot that will not take the release gives the planner's reason.
    let answer = post(json!({"sourceReleaseId": release.id, "slotId": slot.id})).await;
    assert_eq!(answer["submitted"], false, "{answer}");
    assert_eq!(answer["reasons"][0]["stage"], "plan");
    assert_eq!(answer["reasons"][0]["reason"]["kind"], "conflict");
    assert_eq!(torrents(&qbt, None).await.len(), 1, "nothing more was added");
}
