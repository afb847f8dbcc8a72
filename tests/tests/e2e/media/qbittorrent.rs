//! qBittorrent end to end: a real qbittorrent-nox fed torrents built here
//! for data already on disk. Through its WebUI directly, it checks our data
//! complete, notices when the data goes away and finds it again; through the
//! host's outbound layer, a component using the SDK client logs in with the
//! operator's form login, adds, reads, pauses and resumes on whichever
//! WebAPI line the installed qBittorrent speaks.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::Runtime;
use capstan::config::{Auth, SecretRef, ServiceConfig};
use capstan::runtime::{CallOutcome, CallReport, EffectClass};
use capstan_sdk::qbittorrent::{DownloadStatus, Torrent, TorrentState, WebApiVersion};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent::{self, BuiltTorrent};
use serde_json::{Value, json};

use crate::grant;

/// Checks of a few hundred KiB finish in well under a second; the margin is
/// for a CI machine busy compiling.
const DEADLINE: Duration = Duration::from_secs(60);

/// A logged-in WebUI session, spoken to with plain reqwest.
struct WebUi {
    client: reqwest::Client,
    base: String,
}

impl WebUi {
    async fn open(qbt: &QBittorrent) -> WebUi {
        WebUi { client: qbt.login().await, base: qbt.base_url() }
    }

    async fn add(&self, built: &BuiltTorrent) {
        let file = reqwest::multipart::Part::bytes(built.bytes.clone())
            .file_name(format!("{}.torrent", built.name))
            .mime_str("application/x-bittorrent")
            .unwrap();
        let form = reqwest::multipart::Form::new()
            .part("torrents", file)
            .text("savepath", built.save_path.display().to_string());
        let resp = self.client.post(format!("{}/api/v2/torrents/add", self.base)).multipart(form).send().await.unwrap();
        let status = resp.status();
        let body = resp.text().await.unwrap();
        assert!(status.is_success() && body.trim() != "Fails.", "add was refused: {status} {body}");
    }

    async fn recheck(&self, hash: &str) {
        let resp = self
            .client
            .post(format!("{}/api/v2/torrents/recheck", self.base))
            .form(&[("hashes", hash)])
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "recheck was refused: {}", resp.status());
    }

    /// Starts a torrent by the name this server's WebAPI line uses.
    async fn resume(&self, qbt: &QBittorrent, hash: &str) {
        let version = WebApiVersion::parse(qbt.webapi_version()).unwrap();
        let url = format!("{}{}", self.base, version.resume_endpoint());
        let resp = self.client.post(url).form(&[("hashes", hash)]).send().await.unwrap();
        assert!(resp.status().is_success(), "resume was refused: {}", resp.status());
    }

    async fn torrent(&self, hash: &str) -> Option<Torrent> {
        let resp = self.client.get(format!("{}/api/v2/torrents/info", self.base)).query(&[("hashes", hash)]).send();
        let list: Vec<Torrent> = resp.await.unwrap().error_for_status().unwrap().json().await.unwrap();
        list.into_iter().find(|t| t.hash == hash)
    }

    /// Polls until the torrent satisfies `wanted`; fails with the last state
    /// seen when the deadline passes.
    async fn wait_for(&self, hash: &str, what: &str, wanted: impl Fn(&Torrent) -> bool) -> Torrent {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let seen = self.torrent(hash).await;
            match seen {
                Some(t) if wanted(&t) => return t,
                _ if Instant::now() > deadline => {
                    panic!("torrent {hash} never became {what}; last seen: {seen:?}")
                }
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}

/// Done loading and checking. qBittorrent 4.5 leaves a torrent in checking
/// for good when a recheck arrives while it is still loading.
fn settled(t: &Torrent) -> bool {
    !t.state().is_checking() && t.status() != DownloadStatus::Queued
}

fn completed(t: &Torrent) -> bool {
    t.status() == DownloadStatus::Completed && t.progress >= 1.0
}

/// Moves a payload file out of the save path and back, as a user moving
/// files or a disk going away would.
struct Stash {
    from: PathBuf,
    to: PathBuf,
}

impl Stash {
    fn take(file: &Path, aside: &Path) -> Stash {
        let to = aside.join(file.file_name().unwrap());
        std::fs::rename(file, &to).unwrap();
        Stash { from: file.to_path_buf(), to }
    }

    fn put_back(self) {
        std::fs::rename(&self.to, &self.from).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn torrents_built_for_data_on_disk_check_complete() {
    let qbt = QBittorrent::start().await;
    let webui = WebUi::open(&qbt).await;
    let single =
        torrent::single_file(&qbt.downloads().join("movies"), "Arrival.2016.mkv", &torrent::payload(70_000, 1));
    let multi = torrent::multi_file(
        &qbt.downloads().join("tv"),
        "Severance.S01",
        &[
            ("Severance.S01E01.mkv", torrent::payload(50_000, 2)),
            ("Severance.S01E02.mkv", torrent::payload(30_001, 3)),
            ("Subs/Severance.S01E01.en.srt", torrent::payload(900, 4)),
        ],
    );
    for built in [&single, &multi] {
        webui.add(built).await;
        webui.wait_for(&built.info_hash, "settled", settled).await;
        webui.recheck(&built.info_hash).await;
        let t = webui.wait_for(&built.info_hash, "completed", completed).await;
        assert_eq!(t.name, built.name);
        assert_eq!(Path::new(&t.save_path), built.save_path);
        assert_eq!(t.amount_left, 0);
    }
    let single_info = webui.torrent(&single.info_hash).await.unwrap();
    assert_eq!(single_info.size, 70_000);
    let multi_info = webui.torrent(&multi.info_hash).await.unwrap();
    assert_eq!(multi_info.size, 50_000 + 30_001 + 900);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recheck_notices_deleted_data_and_finds_it_again_when_put_back() {
    let qbt = QBittorrent::start().await;
    let webui = WebUi::open(&qbt).await;
    let aside = tempfile::tempdir().unwrap();
    let built = torrent::single_file(&qbt.downloads(), "Dune.Part.Two.2024.mkv", &torrent::payload(90_000, 5));
    webui.add(&built).await;
    webui.wait_for(&built.info_hash, "completed", completed).await;

    let stash = Stash::take(&built.files[0], aside.path());
    webui.recheck(&built.info_hash).await;
    let gone = webui.wait_for(&built.info_hash, "checked without its data", |t| t.progress == 0.0).await;
    // 4.x calls this stalledDL or pausedDL; either way nothing claims it is importable.
    assert_ne!(gone.status(), DownloadStatus::Completed, "{gone:?}");

    stash.put_back();
    webui.recheck(&built.info_hash).await;
    webui.wait_for(&built.info_hash, "completed again", completed).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn data_gone_across_a_restart_is_missing_files_until_put_back() {
    let mut qbt = QBittorrent::start().await;
    let aside = tempfile::tempdir().unwrap();
    let built = torrent::single_file(&qbt.downloads(), "Blade.Runner.2049.mkv", &torrent::payload(60_000, 6));
    {
        let webui = WebUi::open(&qbt).await;
        webui.add(&built).await;
        webui.wait_for(&built.info_hash, "completed", completed).await;
    }

    let stash = Stash::take(&built.files[0], aside.path());
    qbt.restart().await;
    let webui = WebUi::open(&qbt).await;
    let missing = webui.wait_for(&built.info_hash, "missingFiles", |t| t.state() == TorrentState::MissingFiles).await;
    assert_eq!(missing.status(), DownloadStatus::Missing);

    // qBittorrent holds a torrent with missing files: a recheck alone stays
    // in checking until it is also resumed.
    stash.put_back();
    webui.recheck(&built.info_hash).await;
    webui.resume(&qbt, &built.info_hash).await;
    webui.wait_for(&built.info_hash, "completed again", completed).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_webui_wants_the_password_it_was_given() {
    let qbt = QBittorrent::start().await;
    let anonymous = reqwest::get(format!("{}/api/v2/torrents/info", qbt.base_url())).await.unwrap();
    assert_eq!(anonymous.status(), 403, "no session, no torrents");

    let client = reqwest::Client::builder().cookie_store(true).build().unwrap();
    let wrong = client
        .post(format!("{}/api/v2/auth/login", qbt.base_url()))
        .form(&[("username", qbt.username()), ("password", "not-the-password")])
        .send()
        .await
        .unwrap();
    let refused = wrong.status() == 401 || wrong.text().await.unwrap().trim() == "Fails.";
    assert!(refused, "a wrong password must not log in");

    let webui = WebUi::open(&qbt).await;
    let resp = webui.client.get(format!("{}/api/v2/torrents/info", qbt.base_url())).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(qbt.webapi_version().starts_with("2."), "{}", qbt.webapi_version());
}

// ---- through the host's outbound layer -------------------------------------

fn service(qbt: &QBittorrent, password: &str) -> ServiceConfig {
    ServiceConfig {
        base_url: qbt.base_url(),
        auth: Auth::FormLogin {
            path: "/api/v2/auth/login".into(),
            username: qbt.username().into(),
            password: SecretRef(password.into()),
            username_field: "username".into(),
            password_field: "password".into(),
        },
        operations: Vec::new(),
        timeout_ms: 10_000,
        response_cap_bytes: 4 << 20,
    }
}

async fn host_with(service: ServiceConfig) -> (TestHost, Arc<Runtime>) {
    let mut host = TestHost::new();
    host.config.services.insert("qbittorrent".into(), service);
    host.drop_plugin(components::QBITTORRENT_CLIENT, "qbittorrent-client.wasm");
    let runtime = host.start().await.unwrap();
    (host, runtime)
}

async fn call(runtime: &Runtime, input: Value, class: EffectClass) -> CallReport {
    runtime.call("test.qbittorrent", &input.to_string(), grant(class)).await.unwrap()
}

fn result(report: &CallReport) -> Value {
    match &report.outcome {
        CallOutcome::Succeeded { output } => output["result"].clone(),
        other => panic!("expected success, got {other:?}"),
    }
}

fn failure(report: &CallReport) -> (String, String) {
    match &report.outcome {
        CallOutcome::Failed { failure } => (failure.kind.clone(), failure.message.clone()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// Polls the component's view of a torrent until `wanted` holds.
async fn wait_through_host(runtime: &Runtime, hash: &str, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let report = call(runtime, json!({"action": "torrent", "hash": hash}), EffectClass::Read).await;
        let seen = match &report.outcome {
            CallOutcome::Succeeded { output } => Some(output["result"].clone()),
            _ => None,
        };
        match seen {
            Some(t) if wanted(&t) => return t,
            _ if Instant::now() > deadline => panic!("torrent {hash} never became {what}; last: {:?}", report.outcome),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_drives_qbittorrent_through_the_host_s_form_login() {
    let qbt = QBittorrent::start().await;
    let (_host, runtime) = host_with(service(&qbt, qbt.password())).await;
    let built = torrent::single_file(&qbt.downloads(), "Oppenheimer.2023.mkv", &torrent::payload(50_000, 7));

    let version = call(&runtime, json!({"action": "version"}), EffectClass::Read).await;
    assert_eq!(result(&version), qbt.webapi_version(), "the component reads the version qBittorrent reports");

    let add = json!({
        "action": "add",
        "torrent": built.bytes,
        "save_path": built.save_path,
        "paused": true,
        "tags": ["capstan", "plan-1"],
    });
    let denied = call(&runtime, add.clone(), EffectClass::Read).await;
    assert_eq!(failure(&denied).0, "denied", "adding is a write");
    let added = call(&runtime, add.clone(), EffectClass::Execute).await;
    assert_eq!(result(&added), "added");

    // Added paused: it settles stopped, whatever the WebAPI line calls that.
    let t = wait_through_host(&runtime, &built.info_hash, "stopped", |t| t["stopped"] == true).await;
    assert_eq!(t["tags"], json!(["capstan", "plan-1"]));
    assert_eq!(t["name"], "Oppenheimer.2023.mkv");

    let again = call(&runtime, add, EffectClass::Execute).await;
    assert_eq!(failure(&again).0, "conflict", "the same torrent is not added twice");

    let hash = json!(built.info_hash);
    result(&call(&runtime, json!({"action": "recheck", "hash": hash}), EffectClass::Execute).await);
    let t = wait_through_host(&runtime, &built.info_hash, "completed while stopped", |t| {
        t["status"] == "completed" && t["stopped"] == true
    })
    .await;
    assert_eq!(t["progress"], 1.0);

    result(&call(&runtime, json!({"action": "resume", "hash": hash}), EffectClass::Execute).await);
    wait_through_host(&runtime, &built.info_hash, "started", |t| t["stopped"] == false && t["status"] == "completed")
        .await;
    result(&call(&runtime, json!({"action": "pause", "hash": hash}), EffectClass::Execute).await);
    wait_through_host(&runtime, &built.info_hash, "stopped again", |t| t["stopped"] == true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_operator_password_is_a_denial_the_component_can_report() {
    let qbt = QBittorrent::start().await;
    let (_host, runtime) = host_with(service(&qbt, "not-the-password")).await;
    let report = call(&runtime, json!({"action": "version"}), EffectClass::Read).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, "denied");
    assert!(message.contains("login"), "{message}");
    assert!(message.contains("no session cookie"), "qBittorrent's 200 `Fails.` is a refusal: {message}");
    assert!(!message.contains("not-the-password"), "the secret never reaches the component's messages");
    // A refused login is not tried again at once, so the client's ban
    // counter does not climb with every call.
    let report = call(&runtime, json!({"action": "version"}), EffectClass::Read).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, "denied");
    assert!(message.contains("not retried"), "{message}");
}
