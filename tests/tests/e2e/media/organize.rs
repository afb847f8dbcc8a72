//! Organizing a completed download through the one invoke path:
//! `organize.plan` freezes where its files go, `organize.execute` places
//! them under the `library` root by hardlink, copy or move — only while
//! the plan's fingerprint is current and the download's files are the ones
//! planned — and on success the download is imported and the slot
//! satisfied. Paths never leave the operator's roots.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use capstan::domain::{Author, Domain, DownloadTask, NewPlan, NewRelease, NewSlot, Slot};
use capstan::pipeline::{Capabilities, Invocation, Origin};
use capstan::runtime::{EffectClass, Status};
use capstan::store::Db;
use capstan_tests::both_backends;
use capstan_tests::components;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use serde_json::{Value, json};

pub(super) const FOLDER: &str = "Dune.Part.Two.2024.2160p.BluRay.x265-FLUX";
const FILE: &str = "Dune.Part.Two.2024.2160p.BluRay.x265-FLUX.mkv";
pub(super) const PLACED: &str = "Dune - Part Two (2024)/Dune - Part Two (2024) Bluray-2160p.mkv";

pub(super) struct Env {
    pub(super) _host: TestHost,
    pub(super) app: Arc<capstan::app::App>,
    pub(super) caps: Arc<Capabilities>,
    pub(super) svc: capstan::pipeline::Services,
    downloads: PathBuf,
    pub(super) library: PathBuf,
}

impl Env {
    pub(super) fn domain(&self) -> &Domain {
        &self.svc.domain
    }

    /// One call, as an operator at the command line makes it.
    async fn invoke(&self, id: &str, input: Value) -> Invocation {
        self.caps.invoke(&Origin::cli(EffectClass::Execute), id, &input).await.unwrap()
    }

    async fn plan(&self, input: Value) -> Value {
        let done = self.invoke("organize.plan", input).await;
        assert_eq!(done.status, Status::Succeeded, "{:?}", done.error);
        done.output.unwrap()
    }

    fn library_is_empty(&self) -> bool {
        std::fs::read_dir(&self.library).unwrap().next().is_none()
    }
}

/// A runtime with `downloads` and `library` roots and `organize.plan`
/// settings.
pub(super) async fn env(backend: Backend, settings: &[(&str, &str)]) -> Env {
    let mut host = TestHost::new();
    let downloads = host.dir.path().join("downloads");
    let library = host.dir.path().join("library");
    std::fs::create_dir_all(&downloads).unwrap();
    std::fs::create_dir_all(&library).unwrap();
    host.config.roots.insert("downloads".into(), downloads.clone());
    host.config.roots.insert("library".into(), library.clone());
    let plan = capstan::config::CapabilityConfig {
        settings: settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    host.config.capabilities.insert("organize.plan".into(), plan);
    // `test.plan-step` can start an organization and keep running: another
    // call still holding it.
    host.drop_plugin(components::PLAN_STEP, "plan-step.wasm");
    // Long enough for the calls made while it holds, on a busy machine.
    let holder = capstan::config::CapabilityConfig { deadline_ms: Some(5_000), ..Default::default() };
    host.config.capabilities.insert("test.plan-step".into(), holder);
    let db = Db::open(&fresh_url(backend, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
    let runtime = app.caps().runtime().clone();
    host.accept(&runtime, "test.plan-step").await;
    let caps = app.caps().clone();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();
    Env { _host: host, app, caps, svc, downloads, library }
}

pub(super) fn write(root: &Path, path: &str, bytes: &[u8]) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, bytes).unwrap();
}

/// The payload of a finished 2160p Blu-ray download: the feature, a
/// sample and an nfo.
pub(super) fn dune_on_disk(env: &Env) {
    write(&env.downloads, &format!("{FOLDER}/{FILE}"), &[9u8; 64 * 1024]);
    write(&env.downloads, &format!("{FOLDER}/Sample/dune-sample.mkv"), &[1u8; 4096]);
    write(&env.downloads, &format!("{FOLDER}/{FOLDER}.nfo"), b"release notes");
}

/// A wanted movie, its resolved release, a plan drafted, reserved and
/// submitted, and the download completed at `content_path`.
pub(super) async fn completed_download(domain: &Domain, content_path: &str) -> (Slot, DownloadTask) {
    let task = Author::new("task:syncDownloads");
    let entity = domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    let slot = domain
        .want(&NewSlot { entity_id: entity.id.clone(), season: None, quality: "2160p".into(), profile: None })
        .await
        .unwrap();
    let hash = "d".repeat(40);
    let release = domain
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: FOLDER.into(),
            parsed: json!({"title": "Dune Part Two", "year": 2024, "screen_size": "2160p", "source": "Blu-ray",
                           "video_codec": "H.265", "release_group": "FLUX"}),
            size: Some(64 * 1024),
            infohash: Some(hash.clone()),
            download_url: None,
            magnet_url: None,
        })
        .await
        .unwrap();
    domain
        .match_identity(
            &release.id,
            Some(&entity.id),
            capstan::domain::IdentityStatus::Resolved,
            &json!({"tmdb": 693134}),
        )
        .await
        .unwrap();
    let plan = domain
        .draft_plan(&task, &NewPlan { slot_id: slot.id.clone(), source_release_id: release.id.clone(), note: None })
        .await
        .unwrap();
    domain.reserve_plan(&plan.id).await.unwrap();
    let (_, download) = domain.mark_submitted(&plan.id, &hash).await.unwrap();
    let (download, _) = domain
        .update_download(&download.id, capstan::domain::DownloadStatus::Completed, 1.0, Some(content_path), None)
        .await
        .unwrap();
    (slot, download)
}

fn failure(done: &Invocation) -> (String, String) {
    assert_eq!(done.status, Status::Failed, "{:?}", done.output);
    let error = done.error.clone().unwrap();
    (error.kind, error.message)
}

async fn a_completed_movie_is_hardlinked_into_the_library_and_satisfies_its_slot(backend: Backend) {
    let env = env(backend, &[]).await;
    dune_on_disk(&env);
    let (slot, download) = completed_download(env.domain(), FOLDER).await;

    let plan = env.plan(json!({"downloadTaskId": download.id})).await;
    assert_eq!(plan["mode"], "hardlink");
    assert_eq!(
        plan["items"],
        json!([{"source": format!("{FOLDER}/{FILE}"), "destination": PLACED, "size": 64 * 1024}]),
        "one item: the sample and the nfo stay behind"
    );
    assert!(env.library_is_empty(), "planning places nothing");
    let org_id = plan["organizationId"].as_str().unwrap();
    assert_eq!(env.domain().organization(org_id).await.unwrap().status, capstan::domain::OrganizationStatus::Planned);

    let input = json!({"planId": org_id, "fingerprint": plan["fingerprint"]});
    let done = env.invoke("organize.execute", input.clone()).await;
    assert_eq!(done.status, Status::Succeeded, "{:?}", done.error);
    let out = done.output.unwrap();
    assert_eq!(out["status"], "succeeded");
    assert_eq!(out["items"][0]["method"], "hardlink");
    let placed = std::fs::metadata(env.library.join(PLACED)).unwrap();
    let source = std::fs::metadata(env.downloads.join(FOLDER).join(FILE)).unwrap();
    assert_eq!(placed.ino(), source.ino(), "the library file is the download's file under a second name");
    assert_eq!(placed.nlink(), 2);

    assert_eq!(env.domain().organization(org_id).await.unwrap().status, capstan::domain::OrganizationStatus::Succeeded);
    assert_eq!(env.domain().download(&download.id).await.unwrap().status, capstan::domain::DownloadStatus::Imported);
    assert_eq!(env.domain().slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Satisfied);

    // A new request for the same organization finds it done and changes nothing.
    let again = env.invoke("organize.execute", input).await;
    assert_eq!(again.status, Status::Succeeded, "{:?}", again.error);
    assert_eq!(std::fs::metadata(env.library.join(PLACED)).unwrap().nlink(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn copy_mode_copies_and_move_mode_moves() {
    for mode in ["copy", "move"] {
        // The mode comes from the setting here, not the input.
        let env = env(Backend::Sqlite, &[("mode", mode)]).await;
        dune_on_disk(&env);
        let (_, download) = completed_download(env.domain(), FOLDER).await;
        let plan = env.plan(json!({"downloadTaskId": download.id})).await;
        assert_eq!(plan["mode"], mode);
        let done = env
            .invoke("organize.execute", json!({"planId": plan["organizationId"], "fingerprint": plan["fingerprint"]}))
            .await;
        assert_eq!(done.status, Status::Succeeded, "{mode}: {:?}", done.error);
        let item = &done.output.unwrap()["items"][0];
        assert_eq!((item["method"].as_str(), item["verified"].as_bool()), (Some(mode), Some(true)));
        let placed = env.library.join(PLACED);
        let source = env.downloads.join(FOLDER).join(FILE);
        assert_eq!(std::fs::read(&placed).unwrap(), vec![9u8; 64 * 1024], "{mode}");
        if mode == "copy" {
            assert_ne!(std::fs::metadata(&placed).unwrap().ino(), std::fs::metadata(&source).unwrap().ino());
            assert!(source.exists(), "a copy leaves the download seeding");
        } else {
            assert!(!source.exists(), "a move takes the file out of the download");
        }
        assert_eq!(
            env.domain().download(&download.id).await.unwrap().status,
            capstan::domain::DownloadStatus::Imported
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_that_is_no_longer_current_is_a_conflict_and_creates_nothing() {
    let env = env(Backend::Sqlite, &[]).await;
    dune_on_disk(&env);
    let (_, download) = completed_download(env.domain(), FOLDER).await;
    let first = env.plan(json!({"downloadTaskId": download.id})).await;
    let execute = |plan: &Value| json!({"planId": plan["organizationId"], "fingerprint": plan["fingerprint"]});

    // The download changed after planning: a second cut appeared.
    write(&env.downloads, &format!("{FOLDER}/Dune.Part.Two.2024.Extended.2160p.mkv"), &[8u8; 60 * 1024]);
    let (kind, message) = failure(&env.invoke("organize.execute", execute(&first)).await);
    assert_eq!(kind, "conflict");
    assert!(message.contains("Extended") && message.contains("plan again"), "{message}");

    // Planning again re-freezes the same organization; the old fingerprint is stale.
    let second = env.plan(json!({"downloadTaskId": download.id})).await;
    assert_eq!(second["organizationId"], first["organizationId"]);
    assert_eq!(second["revision"], 2);
    assert_ne!(second["fingerprint"], first["fingerprint"]);
    assert_eq!(second["items"].as_array().unwrap().len(), 2);
    let (kind, message) = failure(&env.invoke("organize.execute", execute(&first)).await);
    assert_eq!(kind, "conflict");
    assert!(message.contains("planned again"), "{message}");

    // So is the one before a change of mode.
    let third = env.plan(json!({"downloadTaskId": download.id, "mode": "copy"})).await;
    assert_ne!(third["fingerprint"], second["fingerprint"]);
    let (kind, _) = failure(&env.invoke("organize.execute", execute(&second)).await);
    assert_eq!(kind, "conflict");

    assert!(env.library_is_empty(), "nothing was created");
    let org = env.domain().organization(first["organizationId"].as_str().unwrap()).await.unwrap();
    assert_eq!(org.status, capstan::domain::OrganizationStatus::Planned);
    assert_eq!(env.domain().download(&download.id).await.unwrap().status, capstan::domain::DownloadStatus::Completed);

    // A file of another content already at the destination is never overwritten.
    let names: Vec<&str> =
        third["items"].as_array().unwrap().iter().map(|i| i["destination"].as_str().unwrap()).collect();
    write(&env.library, names[0], b"someone else's file");
    let (kind, message) = failure(&env.invoke("organize.execute", execute(&third)).await);
    assert_eq!(kind, "conflict");
    assert!(message.contains("nothing was overwritten"), "{message}");
    assert_eq!(std::fs::read(env.library.join(names[0])).unwrap(), b"someone else's file");
    assert!(!env.library.join(names[1]).exists(), "no item is placed while another clashes");
}

#[tokio::test(flavor = "multi_thread")]
async fn templates_name_files_and_an_unknown_token_is_invalid_input() {
    let template = "{Movie Title} [{Release Year}]/{Original Title} - {Quality Full} - {Release Group}";
    let env = env(Backend::Sqlite, &[("movie_template", template)]).await;
    dune_on_disk(&env);
    let (_, download) = completed_download(env.domain(), FOLDER).await;
    let plan = env.plan(json!({"downloadTaskId": download.id})).await;
    assert_eq!(plan["items"][0]["destination"], "Dune - Part Two [2024]/Dune - Part Two - Bluray-2160p - FLUX.mkv");

    let env = env_with_template("{Movie Title} {Resolution}").await;
    dune_on_disk(&env);
    let (_, download) = completed_download(env.domain(), FOLDER).await;
    let (kind, message) = failure(&env.invoke("organize.plan", json!({"downloadTaskId": download.id})).await);
    assert_eq!(kind, "invalid-input");
    assert!(message.contains("{Resolution}") && message.contains("movie_template"), "{message}");

    // A template cannot climb out of the library either.
    let env = env_with_template("../{Movie Title}").await;
    dune_on_disk(&env);
    let (_, download) = completed_download(env.domain(), FOLDER).await;
    let (kind, _) = failure(&env.invoke("organize.plan", json!({"downloadTaskId": download.id})).await);
    assert_eq!(kind, "invalid-input");
}

async fn env_with_template(template: &str) -> Env {
    env(Backend::Sqlite, &[("movie_template", template)]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_content_path_outside_the_downloads_root_is_refused_and_an_unfinished_download_waits() {
    let env = env(Backend::Sqlite, &[]).await;
    // Something real beside the root that a crafted path could reach.
    write(env.downloads.parent().unwrap(), "secret/Dune.mkv", &[5u8; 4096]);
    let (_, download) = completed_download(env.domain(), FOLDER).await;
    for path in ["../secret", "../secret/Dune.mkv", "/etc", "Dune/../../secret"] {
        env.domain()
            .update_download(&download.id, capstan::domain::DownloadStatus::Completed, 1.0, Some(path), None)
            .await
            .unwrap();
        let (kind, message) = failure(&env.invoke("organize.plan", json!({"downloadTaskId": download.id})).await);
        assert_eq!(kind, "denied", "{path}: {message}");
    }
    assert!(env.library_is_empty());
    assert!(env.domain().organizations_for_download(&download.id).await.unwrap().is_empty(), "nothing was planned");

    // A download the client has not finished is not organized yet.
    dune_on_disk(&env);
    env.domain()
        .update_download(&download.id, capstan::domain::DownloadStatus::Downloading, 0.5, Some(FOLDER), None)
        .await
        .unwrap();
    let (kind, message) = failure(&env.invoke("organize.plan", json!({"downloadTaskId": download.id})).await);
    assert_eq!(kind, "conflict");
    assert!(message.contains("downloading"), "{message}");
}

async fn an_organization_another_call_is_carrying_out_is_refused_until_that_call_ends(backend: Backend) {
    let env = Arc::new(env(backend, &[("mode", "copy")]).await);
    dune_on_disk(&env);
    let (_, download) = completed_download(env.domain(), FOLDER).await;
    let plan = env.plan(json!({"downloadTaskId": download.id})).await;
    let org_id = plan["organizationId"].as_str().unwrap().to_string();
    let execute = json!({"planId": org_id, "fingerprint": plan["fingerprint"]});

    // A start the domain refuses holds nothing: the next call takes it at once.
    let refused =
        env.invoke("test.plan-step", json!({"startOrganization": {"id": org_id, "fingerprint": "stale"}})).await;
    assert_eq!(failure(&refused).0, "conflict");

    // Another call starts the organization and is still running.
    let holder = {
        let env = env.clone();
        let start = json!({"startOrganization": {"id": org_id, "fingerprint": plan["fingerprint"]}, "thenSpin": true});
        tokio::spawn(async move { env.invoke("test.plan-step", start).await })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while env.domain().organization(&org_id).await.unwrap().status != capstan::domain::OrganizationStatus::Running {
        assert!(std::time::Instant::now() < deadline, "the holder never started the organization");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!holder.is_finished(), "the holder is still running");

    let (kind, message) = failure(&env.invoke("organize.execute", execute.clone()).await);
    assert_eq!(kind, "conflict");
    assert!(message.contains(&format!("organization {org_id} is being carried out by another call")), "{message}");
    // Nor may another call finish it meanwhile.
    let finish = env.invoke("test.plan-step", json!({"finishOrganization": org_id})).await;
    assert_eq!(failure(&finish).0, "conflict");
    assert!(env.library_is_empty(), "nothing was placed while the other call held it");
    assert_eq!(env.domain().organization(&org_id).await.unwrap().status, capstan::domain::OrganizationStatus::Running);

    // The holder is stopped at its deadline; the organization is free and
    // the next call finishes it.
    let held = holder.await.unwrap();
    assert_eq!(held.status, Status::Unknown, "stopped after starting: {:?}", held.error);
    let done = env.invoke("organize.execute", execute).await;
    assert_eq!(done.status, Status::Succeeded, "{:?}", done.error);
    assert_eq!(std::fs::read(env.library.join(PLACED)).unwrap(), vec![9u8; 64 * 1024]);
    assert_eq!(
        env.domain().organization(&org_id).await.unwrap().status,
        capstan::domain::OrganizationStatus::Succeeded
    );
    assert_eq!(env.domain().download(&download.id).await.unwrap().status, capstan::domain::DownloadStatus::Imported);
}

both_backends!(
    a_completed_movie_is_hardlinked_into_the_library_and_satisfies_its_slot,
    an_organization_another_call_is_carrying_out_is_refused_until_that_call_ends,
);
