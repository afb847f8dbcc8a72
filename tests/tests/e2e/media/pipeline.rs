//! The acquisition pipeline end to end, as durable tasks on a worker: a
//! Torznab feed item for a wanted movie is identified, planned, submitted
//! to a real qBittorrent, completes (its payload is already on disk), is
//! hardlinked into the library under the configured name, recorded as an
//! organization, and the slot is satisfied. Without an automation grant the
//! same sweep stops at a draft plan and opens nothing else.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::acquisition::{EVALUATE_ACQUISITION, SYNC_DOWNLOADS};
use capstan::config::{Auth, CapabilityConfig, SecretRef, ServiceConfig};
use capstan::domain::{Author, NewPlan, NewRelease, NewSlot, Slot};
use capstan::pipeline::{Capabilities, Origin};
use capstan::runtime::EffectClass;
use capstan::store::Db;
use capstan::tasks::{Task, TaskStatus, Tasks, Worker, WorkerConfig};
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::mock_torznab::MockTorznab;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent::{self, BuiltTorrent};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(90);
const RELEASE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";

pub(super) struct Env {
    _host: TestHost,
    _library: tempfile::TempDir,
    pub(super) library: std::path::PathBuf,
    pub(super) app: Arc<capstan::app::App>,
    pub(super) caps: Arc<Capabilities>,
    pub(super) svc: capstan::pipeline::Services,
    pub(super) indexer: MockTorznab,
}

async fn start(qbt: &QBittorrent, dune: &BuiltTorrent) -> Env {
    start_on(Backend::Sqlite, qbt, dune).await
}

/// A host on `backend` whose indexer (key `indexer-key`) offers `dune` as
/// Dune: Part Two and serves its `.torrent`, whose client is `qbt` saving
/// into its downloads folder (the `downloads` root), with a library root
/// of its own and a worker running the pipeline's tasks.
pub(super) async fn start_on(backend: Backend, qbt: &QBittorrent, dune: &BuiltTorrent) -> Env {
    let indexer = MockTorznab::offering_dune("indexer-key", "Loopback indexer", dune).await;
    start_with(backend, qbt, indexer, TestHost::new()).await
}

/// As [`start_on`], with `indexer` (key `indexer-key`) as the indexer and
/// `host` (which may name more services) as the host to set up.
pub(super) async fn start_with(backend: Backend, qbt: &QBittorrent, indexer: MockTorznab, host: TestHost) -> Env {
    let auth = Auth::FormLogin {
        path: "/api/v2/auth/login".into(),
        username: qbt.username().into(),
        password: SecretRef(qbt.password().into()),
        username_field: "username".into(),
        password_field: "password".into(),
    };
    let client = ServiceConfig {
        base_url: qbt.base_url(),
        auth,
        operations: Vec::new(),
        timeout_ms: 10_000,
        response_cap_bytes: 4 << 20,
    };
    start_with_client(backend, ("qbittorrent", client), qbt.downloads(), indexer, host).await
}

/// As [`start_with`], with `client` (a service name and its setup) as the
/// download client saving into `downloads`.
pub(super) async fn start_with_client(
    backend: Backend,
    client: (&str, ServiceConfig),
    downloads: std::path::PathBuf,
    indexer: MockTorznab,
    mut host: TestHost,
) -> Env {
    let library = tempfile::tempdir().unwrap();
    let service = |base_url: String, auth: Auth| ServiceConfig {
        base_url,
        auth,
        operations: Vec::new(),
        timeout_ms: 10_000,
        response_cap_bytes: 4 << 20,
    };
    host.config.services.insert(client.0.into(), client.1);
    host.config.services.insert(
        "torznab".into(),
        service(indexer.base_url(), Auth::Query { name: "apikey".into(), value: SecretRef("indexer-key".into()) }),
    );
    let submit = BTreeMap::from([
        ("save_path".to_string(), downloads.display().to_string()),
        ("category".to_string(), "movies".to_string()),
    ]);
    host.config
        .capabilities
        .insert("download.submit".into(), CapabilityConfig { settings: submit, ..Default::default() });
    host.config.roots.insert("downloads".into(), downloads);
    host.config.roots.insert("library".into(), library.path().to_path_buf());
    let db = Db::open(&fresh_url(backend, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();
    let config = WorkerConfig { poll: Duration::from_millis(100), ..WorkerConfig::default() };
    let mut worker = Worker::new(Tasks::new(db.clone()), "pipeline-test".into(), config);
    capstan::acquisition::register(&mut worker, &svc, app.settings());
    capstan::notify::register(&mut worker, &svc, app.settings());
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    Env { library: library.path().to_path_buf(), _library: library, _host: host, app, caps, svc, indexer }
}

impl Env {
    /// The host's recycle folder, where replaced files are kept.
    pub(super) fn recycle_dir(&self) -> std::path::PathBuf {
        self._host.config.data_dir().join("recycle")
    }
}

pub(super) async fn wanted_movie(env: &Env) -> Slot {
    let entity = env.svc.domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    env.svc
        .domain
        .want(&NewSlot { entity_id: entity.id, season: None, quality: "2160p".into(), profile: None })
        .await
        .unwrap()
}

/// Queues a pipeline task and waits for it to finish.
pub(super) async fn run(env: &Env, kind: &str, payload: Value) -> Task {
    capstan_tests::tasks::run_once(&env.svc.db, kind, payload).await
}

async fn qbittorrent_torrents(qbt: &QBittorrent) -> Vec<Value> {
    let client = qbt.login().await;
    client.get(format!("{}/api/v2/torrents/info", qbt.base_url())).send().await.unwrap().json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_feed_item_for_a_wanted_movie_ends_in_the_library_under_a_grant() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 24));
    let env = start(&qbt, &dune).await;
    let slot = wanted_movie(&env).await;
    capstan_tests::grants::allow_everything(&env.svc).await;

    // Search → record → identify → plan → submit, as the task actor.
    let evaluated = run(&env, EVALUATE_ACQUISITION, json!({})).await;
    assert_eq!(evaluated.status, TaskStatus::Succeeded, "{:?}", evaluated.last_error);
    let outcome = &evaluated.result.clone().unwrap()["slots"][0];
    assert_eq!(outcome["outcome"], "submitted", "{outcome}");
    let plan_id = outcome["planId"].as_str().unwrap().to_string();
    // qBittorrent lists an added torrent a moment after it answers the add.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let held = loop {
        let held = qbittorrent_torrents(&qbt).await;
        if !held.is_empty() || std::time::Instant::now() > deadline {
            break held;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0]["hash"], dune.info_hash.as_str());
    let release = env.svc.domain.release_by_infohash(&dune.info_hash).await.unwrap().unwrap();
    assert_eq!(
        (release.identity_status.as_str(), release.entity_id.as_deref()),
        ("resolved", Some(slot.entity_id.as_str()))
    );
    let download = env.svc.domain.download_for_plan(&plan_id).await.unwrap().unwrap();
    let organization = await_import(&env, &download.id).await;
    assert_eq!(organization.mode, capstan::domain::OrganizeMode::Hardlink);
    let destination = organization.items[0]["destination"].as_str().unwrap();
    assert!(destination.starts_with("Dune - Part Two (2024)/Dune - Part Two (2024)"), "{destination}");
    assert!(destination.ends_with(".mkv"), "{destination}");
    {
        use std::os::unix::fs::MetadataExt;
        let placed = std::fs::metadata(env.library.join(destination)).unwrap();
        let source = std::fs::metadata(&dune.files[0]).unwrap();
        assert_eq!((placed.dev(), placed.ino()), (source.dev(), source.ino()), "a hardlink of the download");
    }
    assert_eq!(env.svc.domain.download(&download.id).await.unwrap().status, capstan::domain::DownloadStatus::Imported);
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Satisfied);

    // Each change was told once.
    let events = env.svc.events.list(0, 1000).await.unwrap();
    let completed =
        events.iter().filter(|e| e.kind == "download.status_changed" && e.payload["to"] == "completed").count();
    assert_eq!(completed, 1);
    assert!(events.iter().any(|e| e.kind == "organization.changed" && e.payload["status"] == "succeeded"));
}

/// Syncs download `download_id` until the client has it complete (its
/// payload is on disk already: once qBittorrent has settled, a recheck
/// completes it), then waits for the import it queued to succeed.
pub(super) async fn await_import(env: &Env, download_id: &str) -> capstan::domain::Organization {
    // The payload is on disk: once qBittorrent has settled, a recheck
    // completes it; syncs record what the client says.
    let deadline = Instant::now() + DEADLINE;
    let mut rechecked = false;
    loop {
        let synced = run(env, SYNC_DOWNLOADS, json!({})).await;
        assert_eq!(synced.status, TaskStatus::Succeeded, "{:?}", synced.last_error);
        let now = env.svc.domain.download(download_id).await.unwrap();
        if matches!(now.status.as_str(), "completed" | "importing" | "imported") {
            break;
        }
        if !rechecked && now.status != capstan::domain::DownloadStatus::Queued {
            let inv = env
                .caps
                .invoke(&Origin::cli(EffectClass::Execute), "download.recheck", &json!({"downloadTaskId": download_id}))
                .await
                .unwrap();
            rechecked = inv.error.is_none();
        }
        assert!(Instant::now() < deadline, "the download never completed: {now:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // The completed download queued its import; wait for the organization.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let orgs = env.svc.domain.organizations_for_download(download_id).await.unwrap();
        if let Some(org) = orgs.iter().find(|o| o.status == capstan::domain::OrganizationStatus::Succeeded) {
            break org.clone();
        }
        assert!(Instant::now() < deadline, "no organization succeeded: {orgs:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until plan `id` satisfies `wanted`.
async fn wait_for_plan(env: &Env, id: &str, what: &str, wanted: impl Fn(&capstan::domain::Plan) -> bool) {
    let started = Instant::now();
    loop {
        let plan = env.svc.domain.plan(id).await.unwrap();
        if wanted(&plan) {
            return;
        }
        assert!(started.elapsed() < DEADLINE, "the plan was never {what}: {plan:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submit_that_fails_in_the_sweep_waits_its_backoff_and_goes_on_once_the_cause_clears() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 26));
    let env = start(&qbt, &dune).await;
    let slot = wanted_movie(&env).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    env.indexer.withdraw_torrent(0);

    // The sweep's submit fails: the task itself succeeded at looking, and
    // says so; the plan counts the failure and a decision asks.
    let evaluated = run(&env, EVALUATE_ACQUISITION, json!({})).await;
    assert_eq!(evaluated.status, TaskStatus::Succeeded, "{:?}", evaluated.last_error);
    let outcome = &evaluated.result.clone().unwrap()["slots"][0];
    assert_eq!(outcome["outcome"], "submit-failed", "{outcome}");
    assert!(outcome["reason"].as_str().unwrap().contains("404"), "{outcome}");
    let plan_id = outcome["planId"].as_str().unwrap().to_string();
    let plan = env.svc.domain.plan(&plan_id).await.unwrap();
    assert_eq!((plan.status.as_str(), plan.submit_failures), ("draft", 1));
    let asked = env.svc.domain.decisions(None, 10).await.unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        (asked[0].kind.as_str(), asked[0].subject.as_deref()),
        ("download_submit_failed", Some(plan_id.as_str()))
    );

    // The next sweep waits out the backoff instead of failing again.
    let evaluated = run(&env, EVALUATE_ACQUISITION, json!({})).await;
    let outcome = &evaluated.result.clone().unwrap()["slots"][0];
    assert_eq!(
        (outcome["outcome"].as_str(), outcome["planId"].as_str()),
        (Some("waiting-to-retry"), Some(plan_id.as_str()))
    );
    assert_eq!(env.svc.domain.plan(&plan_id).await.unwrap().submit_failures, 1);

    // The indexer serves the file again and something changed (a service
    // passed its Test): the sweep is queued and hands it over.
    env.indexer.serve_torrent(0, dune.bytes.clone());
    capstan::acquisition::cause_may_have_cleared(&env.svc, "a service passed its test").await;
    // The submit's success is recorded after the plan turns submitted:
    // wait for the failures to be cleared too.
    let cleared = |p: &capstan::domain::Plan| {
        p.status == capstan::domain::PlanStatus::Submitted && (p.submit_failures, p.retry_at) == (0, None)
    };
    wait_for_plan(&env, &plan_id, "submitted with its failures cleared", cleared).await;
    let started = Instant::now();
    let decision = loop {
        let decision = env.svc.domain.decision(&asked[0].id).await.unwrap();
        if decision.status.is_final() || started.elapsed() > DEADLINE {
            break decision;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        (decision.status, decision.resolved_by.as_deref()),
        (capstan::domain::DecisionStatus::Resolved, Some("system:download.submit"))
    );
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Reserved);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_grant_the_sweep_stops_at_a_draft_plan() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 25));
    let env = start(&qbt, &dune).await;
    let slot = wanted_movie(&env).await;

    let evaluated = run(&env, EVALUATE_ACQUISITION, json!({})).await;
    assert_eq!(evaluated.status, TaskStatus::Succeeded, "{:?}", evaluated.last_error);
    let outcome = &evaluated.result.clone().unwrap()["slots"][0];
    assert_eq!(outcome["outcome"], "planned", "{outcome}");
    let plan = env.svc.domain.plan(outcome["planId"].as_str().unwrap()).await.unwrap();
    assert_eq!(plan.status, capstan::domain::PlanStatus::Draft);
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Wanted);
    assert!(qbittorrent_torrents(&qbt).await.is_empty(), "nothing reached the client");
    // Nothing else was opened: no refusal on record, no decision, no download.
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    assert!(audit.iter().all(|e| e.event.action != "capability.denied"), "no denial was recorded");
    assert!(env.svc.domain.decisions(None, 10).await.unwrap().is_empty());
    assert!(env.svc.domain.download_for_plan(&plan.id).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_someone_else_made_is_never_submitted_by_the_sweep() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 26));
    let env = start(&qbt, &dune).await;
    let slot = wanted_movie(&env).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    // A person records the release, confirms whom it is for, and drafts
    // the very plan the sweep would make.
    let domain = &env.svc.domain;
    let release = domain
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: dune.name.clone(),
            parsed: json!({"screen_size": "2160p"}),
            size: Some(70_000),
            infohash: Some(dune.info_hash.clone()),
            download_url: Some(format!("{}/download/1.torrent", env.indexer.base_url())),
            magnet_url: None,
        })
        .await
        .unwrap();
    domain
        .match_identity(
            &release.id,
            Some(&slot.entity_id),
            capstan::domain::IdentityStatus::Resolved,
            &json!({"by": "alice"}),
        )
        .await
        .unwrap();
    let mine = domain
        .draft_plan(
            &Author::new("admin:alice"),
            &NewPlan { slot_id: slot.id.clone(), source_release_id: release.id, note: None },
        )
        .await
        .unwrap();

    // The sweep arrives at the same draft and leaves it to its owner.
    let evaluated = run(&env, EVALUATE_ACQUISITION, json!({})).await;
    assert_eq!(evaluated.status, TaskStatus::Succeeded, "{:?}", evaluated.last_error);
    let outcome = &evaluated.result.clone().unwrap()["slots"][0];
    assert_eq!(
        (outcome["outcome"].as_str(), outcome["planId"].as_str()),
        (Some("planned"), Some(mine.id.as_str())),
        "{outcome}"
    );
    assert_eq!(outcome["draftedBy"], "admin:alice");
    assert_eq!(domain.plan(&mine.id).await.unwrap().status, capstan::domain::PlanStatus::Draft);
    assert!(qbittorrent_torrents(&qbt).await.is_empty(), "nothing reached the client");
}
