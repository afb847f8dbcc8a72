//! Agent runs doing real media work against a real qBittorrent: a run asked
//! to fetch a movie is denied at `download.submit` without authorization,
//! asks a human to approve the plan and waits, and succeeds under an
//! automation grant or once the human approves, its report citing the
//! organization that put the file in the library; a `capstan worker` killed
//! with SIGKILL while `download.submit` is in flight is replaced by another
//! that reconciles the call through the ledger, and qBittorrent receives
//! exactly one add; a new request with the same arguments meets the write
//! the killed worker left open and checks it before anything reaches
//! qBittorrent. A subagent is denied every write at the host.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::agent::AgentRuntime;
use capstan::agent::runs::{NewRun, Run, RunMode};
use capstan::domain::{NewRelease, NewSlot};
use capstan::pipeline::Capabilities;
use capstan::store::Db;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::api::Api;
use capstan_tests::binary::capstan_bin;
use capstan_tests::host::shared_cache;
use capstan_tests::mock_torznab::MockTorznab;
use capstan_tests::proxy::Proxy;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent::{self, BuiltTorrent};
use serde_json::{Map, Value, json};

pub(crate) const RELEASE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";
pub(crate) const ADD: &str = "/api/v2/torrents/add";

pub(crate) struct Env {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) config_path: std::path::PathBuf,
    pub(crate) app: Arc<capstan::app::App>,
    pub(crate) caps: Arc<Capabilities>,
    pub(crate) svc: capstan::pipeline::Services,
    pub(crate) agent: AgentRuntime,
    pub(crate) _indexer: MockTorznab,
    /// The wanted slot and the release recorded for it.
    pub(crate) slot: String,
    pub(crate) release: String,
}

/// A config file (used by this process and by `capstan worker`s), a wanted
/// movie, and its release recorded and identified.
pub(crate) async fn start(qbt_url: &str, qbt: &QBittorrent, dune: &BuiltTorrent) -> Env {
    start_over(qbt_url, qbt, dune, None).await
}

/// [`start`] over the database at `database_url` (a fresh SQLite file
/// beside the data when `None`).
pub(crate) async fn start_over(
    qbt_url: &str,
    qbt: &QBittorrent,
    dune: &BuiltTorrent,
    database_url: Option<String>,
) -> Env {
    let indexer = MockTorznab::offering_dune("indexer-key", "Loopback indexer", dune).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let library = dir.path().join("library");
    std::fs::create_dir_all(&library).unwrap();
    let toml = format!(
        r#"data_dir = {data:?}
cache_dir = {cache:?}
database_url = {db:?}
[tasks]
lease_ms = 2000
pipeline_interval_sec = 0
[services.qbittorrent]
base_url = {qbt_url:?}
auth = {{ kind = "form-login", path = "/api/v2/auth/login", username = {user:?}, password = {pass:?} }}
[services.torznab]
base_url = {torznab:?}
auth = {{ kind = "query", name = "apikey", value = "indexer-key" }}
[capabilities."download.submit".settings]
save_path = {downloads:?}
category = "movies"
[services.counter]
base_url = "http://127.0.0.1:9"
[roots]
downloads = {downloads:?}
library = {library:?}
"#,
        data = data.display().to_string(),
        cache = shared_cache().display().to_string(),
        db = database_url.unwrap_or_else(|| format!("sqlite://{}/capstan.db?mode=rwc", dir.path().display())),
        user = qbt.username(),
        pass = qbt.password(),
        torznab = indexer.base_url(),
        downloads = qbt.downloads().display().to_string(),
        library = library.display().to_string(),
    );
    let config_path = dir.path().join("capstan.toml");
    std::fs::write(&config_path, &toml).unwrap();
    let config = capstan::Config::parse(&toml).unwrap();
    // A write capability for the subagent to be refused.
    std::fs::create_dir_all(config.capabilities_dir()).unwrap();
    std::fs::copy(capstan_tests::components::COUNTER_SAFE, config.capabilities_dir().join("safe.wasm")).unwrap();
    let db = Db::open(&config.database_url()).await.unwrap();
    let app = capstan::app::App::start(config, db, capstan::store::new_id()).await.unwrap();
    let runtime = app.caps().runtime().clone();
    capstan_tests::host::accept(&runtime, "test.counter-safe").await;
    let caps = app.caps().clone();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();
    let domain = &svc.domain;
    let entity = domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    let slot = domain
        .want(&NewSlot { entity_id: entity.id.clone(), season: None, quality: "2160p".into(), profile: None })
        .await
        .unwrap();
    let release = domain
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: dune.name.clone(),
            parsed: json!({"screen_size": "2160p"}),
            size: Some(70_000),
            infohash: Some(dune.info_hash.clone()),
            download_url: Some(format!("{}/download/1.torrent", indexer.base_url())),
            magnet_url: None,
        })
        .await
        .unwrap();
    domain
        .match_identity(
            &release.id,
            Some(&entity.id),
            capstan::domain::IdentityStatus::Resolved,
            &json!({"by": "test"}),
        )
        .await
        .unwrap();
    let script = json!({"scripts": [
        {"match": ["fetch"], "steps": [
            {"text": "Planning the download.", "tools": [{"name": "download.plan", "input": {"sourceReleaseId": release.id, "slotId": slot.id}}]},
            {"tools": [{"name": "download.submit", "input": {"planId": "{{download.plan.id}}"}}]}
        ], "finalText": "Dune: Part Two is in your library."},
        {"match": ["approved"], "steps": [
            {"tools": [{"name": "download.submit", "input": {"planId": "{{download.plan.id}}"}}]}
        ], "finalText": "Submitted it now that it is approved."},
        {"match": ["look"], "steps": [
            {"tools": [{"name": "delegate", "input": {"goal": "subtask: count and plan"}}]}
        ], "finalText": "The subagent said: {{delegate.findings}}"},
        {"match": ["subtask"], "steps": [
            {"tools": [
                {"name": "test.counter-safe", "input": {"label": "sub"}},
                {"name": "download.plan", "input": {"sourceReleaseId": release.id, "slotId": slot.id}},
                {"name": "inventory.query", "input": {}}
            ]}
        ], "finalText": "{{inventory.query.items.length}} titles tracked"}
    ]});
    let mut settings = Map::new();
    settings.insert("model.script".into(), Value::from(script.to_string()));
    settings.insert("agent.goal_poll_sec".into(), json!(1));
    app.settings().update(&settings).await.unwrap();
    let agent = app.new_agent();
    Env { _dir: dir, config_path, app, caps, svc, agent, _indexer: indexer, slot: slot.id, release: release.id }
}

pub(crate) async fn wait_run(env: &Env, id: &str, limit: Duration) -> Run {
    let started = Instant::now();
    loop {
        let run = env.agent.runs().get(id).await.unwrap();
        if run.status.is_final() {
            return run;
        }
        assert!(started.elapsed() < limit, "run {id} did not end: {run:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) async fn start_run(env: &Env, goal: &str) -> Run {
    let new = NewRun {
        goal: goal.into(),
        mode: RunMode::Execute,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    env.agent.start(new).await.unwrap()
}

/// Waits until run `id` was denied at `download.submit` (audited, no ledger
/// effect, nothing sent to qBittorrent) and waits on the approval it asked
/// for; returns that approval's id.
async fn denied_and_waiting_for_approval(env: &Env, qbt: &QBittorrent, id: &str) -> String {
    let started = Instant::now();
    while env.agent.runs().get(id).await.unwrap().status.as_str() != "waiting" {
        assert!(started.elapsed() < Duration::from_secs(60), "{:?}", env.agent.runs().get(id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let events = env.agent.runs().run_events(id, 0, 1000).await.unwrap();
    let submit: Vec<_> =
        events.iter().filter(|e| e.kind == "agent.tool_call" && e.payload["name"] == "download.submit").collect();
    assert_eq!(submit.last().unwrap().payload["phase"], "denied", "{submit:?}");
    let ledger = capstan::ledger::for_run(&env.svc.db, id).await.unwrap();
    assert!(ledger.iter().all(|r| r.capability_id != "download.submit"), "no ledger effect: {ledger:?}");
    let audit = env.app.audit().list(0, 1000).await.unwrap();
    assert!(audit.iter().any(|e| e.event.action == "capability.denied" && e.event.subject == "download.submit"));
    assert!(torrents(qbt).await.is_empty(), "nothing reached qBittorrent");
    let pending = env.svc.authz.approvals(Some(capstan::authz::ApprovalStatus::Pending)).await.unwrap();
    let asked: Vec<_> = pending.iter().filter(|a| a.requested_by == format!("agent:{id}")).collect();
    assert_eq!(asked.len(), 1, "the run asked a human once: {pending:?}");
    assert_eq!(asked[0].plan_type, "acquisition");
    asked[0].id.clone()
}

/// Where the plans run `id` touched stand right now, as its report would say.
async fn report_now(env: &Env, id: &str) -> Vec<Value> {
    let touched = capstan::agent::engine::report::touched(&env.svc.domain, &env.svc.db, id).await.unwrap();
    touched.into_iter().map(|t| t.entry).collect()
}

/// Approves approval `id` as its plan stands (the payload hash shown), as
/// the signed-in administrator `console`.
async fn approve(console: &Api, id: &str) {
    let shown = console.json(&format!("/approvals/{id}")).await;
    let body = json!({"status": "approved", "payloadHash": shown["payloadHash"]});
    let (status, answer) = console.send(reqwest::Method::PATCH, &format!("/approvals/{id}"), body).await;
    assert_eq!(status, 200, "{answer}");
}

/// The statuses run `id` went through, in order.
async fn run_statuses(env: &Env, id: &str) -> Vec<String> {
    let events = env.agent.runs().run_events(id, 0, 1000).await.unwrap();
    events
        .iter()
        .filter(|e| e.kind == "agent.run_status")
        .map(|e| e.payload["status"].as_str().unwrap().to_string())
        .collect()
}

pub(crate) async fn report(env: &Env, run: &Run) -> Value {
    env.svc.domain.artifact(run.report_id.as_deref().unwrap()).await.unwrap().body
}

pub(crate) async fn torrents(qbt: &QBittorrent) -> Vec<Value> {
    let client = qbt.login().await;
    client.get(format!("{}/api/v2/torrents/info", qbt.base_url())).send().await.unwrap().json().await.unwrap()
}

/// One task at a time: a waiting run must not hold the worker the imports
/// it waits for need.
pub(crate) fn in_process_worker(env: &Env) {
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(10), concurrency: 1 };
    let mut worker = Worker::new(Tasks::new(env.svc.db.clone()), "media-test".into(), config);
    capstan::acquisition::register(&mut worker, &env.svc, env.app.settings());
    let agent = Arc::new(env.app.new_agent());
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fetch_is_denied_without_a_grant_and_ends_in_the_library_with_one() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 41));
    let env = start(&qbt.base_url(), &qbt, &dune).await;
    in_process_worker(&env);

    let denied = start_run(&env, "fetch Dune: Part Two").await;
    let approval = denied_and_waiting_for_approval(&env, &qbt, &denied.id).await;
    // Nobody approves; the run is called off and says where things stood.
    env.agent.runs().request_abort(&denied.id, "fetching under a grant instead").await.unwrap();
    let denied = wait_run(&env, &denied.id, Duration::from_secs(60)).await;
    assert_eq!(denied.status.as_str(), "cancelled", "{denied:?}");
    let body = report(&env, &denied).await;
    assert_eq!(body["verified"]["imported"], json!([]), "{body}");
    assert_eq!(body["verified"]["plans"][0]["outcome"], "draft: a human has been asked to approve it");
    assert_eq!(body["verified"]["plans"][0]["approvalId"], json!(approval));
    assert_eq!(body["modelFinalText"]["verified"], false, "the model's claim is not taken for the truth");

    capstan_tests::grants::allow_everything(&env.svc).await;
    let _moving = capstan_tests::qbittorrent::deliver_the_data(env.svc.clone(), true);
    let run = start_run(&env, "fetch Dune: Part Two").await;
    let run = wait_run(&env, &run.id, Duration::from_secs(120)).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    let body = report(&env, &run).await;
    let imported = body["verified"]["imported"].as_array().unwrap();
    assert_eq!(imported.len(), 1, "{body}");
    let organization = imported[0]["organizations"][0]["id"].as_str().unwrap();
    let record = env.svc.domain.organization(organization).await.unwrap();
    assert_eq!(record.status, capstan::domain::OrganizationStatus::Succeeded);
    assert_eq!(torrents(&qbt).await.len(), 1);
    let statuses = run_statuses(&env, &run.id).await;
    assert_eq!(statuses, ["running", "waiting", "succeeded"], "it waited for the import");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fetch_that_needs_approval_goes_on_once_a_human_approves() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 43));
    let env = start(&qbt.base_url(), &qbt, &dune).await;
    in_process_worker(&env);
    let _moving = capstan_tests::qbittorrent::deliver_the_data(env.svc.clone(), true);
    let run = start_run(&env, "fetch Dune: Part Two").await;
    let approval = denied_and_waiting_for_approval(&env, &qbt, &run.id).await;

    // An administrator approves the plan in the console; the run is told and goes on.
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let console = Api::new(&base).signed_in(&env.svc.db, "alice").await;
    approve(&console, &approval).await;
    // The finished download's organization needs a human too: the import asks, and goes on once approved.
    let started = Instant::now();
    let organization = loop {
        let pending = env.svc.authz.approvals(Some(capstan::authz::ApprovalStatus::Pending)).await.unwrap();
        if let Some(a) = pending.iter().find(|a| a.plan_type == "organization") {
            assert_eq!(a.requested_by, "task:verifyAndImport");
            break a.id.clone();
        }
        assert!(started.elapsed() < Duration::from_secs(90), "no import asked for approval");
        // Submitting, then waiting on the import: never ended meanwhile.
        let status = env.agent.runs().get(&run.id).await.unwrap().status;
        assert!(!status.is_final(), "the run ended before the import was approved: {status:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        report_now(&env, &run.id).await.iter().all(|p| p["outcome"] == "submitted, not yet in the library"),
        "submitted is not imported"
    );
    approve(&console, &organization).await;
    let run = wait_run(&env, &run.id, Duration::from_secs(120)).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    assert_eq!(torrents(&qbt).await.len(), 1, "one add, under the approval");
    let used = env.svc.authz.approval(&env.svc.domain, &approval).await.unwrap();
    assert_eq!(used.status, capstan::authz::ApprovalStatus::Consumed, "{used:?}");
    let body = report(&env, &run).await;
    let imported = body["verified"]["imported"].as_array().unwrap();
    assert_eq!(imported.len(), 1, "{body}");
    let messages = env.agent.runs().messages(&run.id).await.unwrap();
    assert!(messages.last().unwrap().text.contains(&format!("approval {approval}")), "{messages:?}");
    let statuses = run_statuses(&env, &run.id).await;
    assert_eq!(statuses.first().map(String::as_str), Some("running"));
    assert!(statuses.iter().filter(|s| *s == "waiting").count() >= 2, "it waited for the human, then the import");
    assert_eq!(statuses.last().map(String::as_str), Some("succeeded"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subagent_is_denied_every_write() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 42));
    let env = start(&qbt.base_url(), &qbt, &dune).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    in_process_worker(&env);
    let run = start_run(&env, "look around").await;
    let run = wait_run(&env, &run.id, Duration::from_secs(60)).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    let events = env.agent.runs().run_events(&run.id, 0, 1000).await.unwrap();
    let sub: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e.kind == "agent.tool_call" && e.payload["actor"] == "subagent" && e.payload["phase"] != "started")
        .map(|e| (e.payload["name"].as_str().unwrap(), e.payload["status"].as_str().unwrap()))
        .collect();
    assert_eq!(sub, [("test.counter-safe", "denied"), ("download.plan", "denied"), ("inventory.query", "succeeded")]);
    assert!(env.svc.domain.plans_for_run(&run.id).await.unwrap().is_empty(), "no draft was written");
    assert!(capstan::ledger::for_run(&env.svc.db, &run.id).await.unwrap().is_empty());
    assert_eq!(run.final_text.as_deref(), Some("The subagent said: 1 titles tracked"));
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn worker_process(config: &std::path::Path, sessions: &std::path::Path) -> Proc {
    let child = Command::new(capstan_bin())
        .args(["--config", config.to_str().unwrap(), "worker"])
        .env("RUST_LOG", "warn")
        .env("AGENT_SESSION_DIR", sessions)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Proc(child)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_during_submit_is_replaced_and_qbittorrent_gets_one_add() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 43));
    let proxy = Proxy::start(&qbt.base_url()).await;
    let env = start(&proxy.base_url(), &qbt, &dune).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    // The add reaches qBittorrent; the worker never hears back.
    proxy.withhold(ADD);
    let run = start_run(&env, "fetch Dune: Part Two").await;
    let sessions = env._dir.path().join("sessions");
    let first = worker_process(&env.config_path, &sessions);
    let started = Instant::now();
    while proxy.count(ADD) == 0 {
        if started.elapsed() > Duration::from_secs(60) {
            let now = env.agent.runs().get(&run.id).await.unwrap();
            let task = Tasks::new(env.svc.db.clone()).get(now.task_id.as_deref().unwrap()).await.unwrap();
            let events = env.agent.runs().run_events(&run.id, 0, 100).await.unwrap();
            let log = std::fs::read_to_string(sessions.join(format!("{}.jsonl", run.id))).unwrap_or_default();
            panic!("download.submit never reached qBittorrent: {now:?} {task:?} {events:?} {log}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = Instant::now();
    while torrents(&qbt).await.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(20), "qBittorrent never took the torrent");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(first); // SIGKILL while download.submit is in flight
    proxy.release();

    let _second = worker_process(&env.config_path, &sessions);
    let _moving = capstan_tests::qbittorrent::deliver_the_data(env.svc.clone(), true);
    let run = wait_run(&env, &run.id, Duration::from_secs(180)).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    submitted_once_by_the_takeover(&env, &run, &proxy, &qbt).await;
    // Both workers kept the session where AGENT_SESSION_DIR says.
    let log = std::fs::read_to_string(sessions.join(format!("{}.jsonl", run.id))).unwrap();
    assert!(log.lines().filter(|l| l.contains("\"tool_results\"")).count() >= 2, "{log}");
}

/// What a run whose worker was killed with `download.submit` in flight
/// must show once another finished it: qBittorrent got one add, the
/// ledger one receipt (the takeover found the torrent already added), the
/// call one answer (`reconciled`), and the movie is in the library.
pub(crate) async fn submitted_once_by_the_takeover(env: &Env, run: &Run, proxy: &Proxy, qbt: &QBittorrent) {
    assert_eq!(proxy.count(ADD), 1, "qBittorrent received exactly one add");
    assert_eq!(torrents(qbt).await.len(), 1);
    let submits: Vec<_> = capstan::ledger::for_run(&env.svc.db, &run.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.capability_id == "download.submit")
        .collect();
    assert_eq!(submits.len(), 1, "one ledger row for the submit");
    assert_eq!(submits[0].status, capstan::ledger::LedgerStatus::Succeeded);
    let result: Value = serde_json::from_str(submits[0].result.as_deref().unwrap()).unwrap();
    assert_eq!(result["added"], false, "the resumed submit found the torrent the killed worker added: {result}");
    let events = env.agent.runs().run_events(&run.id, 0, 1000).await.unwrap();
    let submit_ends: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| {
            e.kind == "agent.tool_call" && e.payload["name"] == "download.submit" && e.payload["phase"] != "started"
        })
        .map(|e| (e.payload["phase"].as_str().unwrap(), e.payload["status"].as_str().unwrap()))
        .collect();
    assert_eq!(submit_ends, [("reconciled", "succeeded")], "the interrupted call has one answer, after the takeover");
    let body = report(env, run).await;
    assert_eq!(body["verified"]["imported"].as_array().unwrap().len(), 1, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_request_checks_the_submit_a_killed_worker_left_open_before_writing() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 44));
    let proxy = Proxy::start(&qbt.base_url()).await;
    let env = start(&proxy.base_url(), &qbt, &dune).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let operator = capstan::pipeline::Origin::cli(capstan::runtime::EffectClass::Execute);
    let planned = env
        .caps
        .invoke(&operator, "download.plan", &json!({"sourceReleaseId": env.release, "slotId": env.slot}))
        .await
        .unwrap();
    let input = json!({"planId": planned.output.as_ref().unwrap()["id"]});
    let tasks = Tasks::new(env.svc.db.clone());
    let submit = || capstan::tasks::NewTask {
        kind: capstan::pipeline::INVOKE_CAPABILITY.into(),
        subject: None,
        payload: json!({"capability": "download.submit", "input": input}),
        dedupe_key: None,
        max_attempts: 1,
        created_by: "admin:test".into(),
    };
    // The add reaches qBittorrent; the worker never hears back and is killed.
    proxy.withhold(ADD);
    tasks.enqueue(&submit()).await.unwrap();
    let sessions = env._dir.path().join("sessions");
    let first = worker_process(&env.config_path, &sessions);
    let started = Instant::now();
    while proxy.count(ADD) == 0 || torrents(&qbt).await.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "download.submit never reached qBittorrent");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(first);
    proxy.release();
    let rows = || capstan::ledger::by_capability(&env.svc.db, "download.submit");
    let open = rows().await.unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].status, capstan::ledger::LedgerStatus::Running, "left running by the killed worker");

    // A new request with the same arguments, in another idempotency scope:
    // it waits out the dead worker and checks the open write read-only
    // first. The plan was never recorded submitted, so the check finds it
    // not done and the new request goes on — and finds the torrent the
    // killed worker added instead of adding it again.
    let (again, _) = tasks.enqueue(&submit()).await.unwrap();
    let answer = env.caps.invoke(&capstan::pipeline::Origin::task(&again), "download.submit", &input).await.unwrap();
    assert_eq!(answer.status, capstan::runtime::Status::Succeeded, "{:?}", answer.error);
    assert_eq!(answer.output.as_ref().unwrap()["added"], false, "{answer:?}");
    assert_eq!(proxy.count(ADD), 1, "qBittorrent received no second add");
    assert_eq!(torrents(&qbt).await.len(), 1);
    let first = capstan::ledger::by_id(&env.svc.db, &open[0].id).await.unwrap().unwrap();
    assert_eq!(first.status, capstan::ledger::LedgerStatus::Failed, "settled by the check: {first:?}");
    assert!(first.error.as_deref().unwrap_or_default().contains("not-done"), "{first:?}");
    assert_eq!(rows().await.unwrap().len(), 2, "the new request's own receipt beside it");
}
