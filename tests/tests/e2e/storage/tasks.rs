//! Durable tasks: dedupe, backoff to dead, cancel and retry; and two worker
//! processes where one is killed with SIGKILL mid-task and the other takes
//! the task over after the lease lapses and completes it once. On SQLite and
//! on PostgreSQL; and many claimers on two database handles taking every
//! task exactly once.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capstan::audit::Audit;
use capstan::store::Db;
use capstan::tasks::{NewTask, TaskError, TaskStatus, Tasks};
use capstan_tests::binary::capstan_bin;
use capstan_tests::both_backends;
use capstan_tests::components;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::{TestHost, shared_cache};
use serde_json::json;

fn new_task(payload: serde_json::Value, dedupe: Option<&str>) -> NewTask {
    NewTask {
        kind: "invokeCapability".into(),
        subject: Some("subject-1".into()),
        payload,
        dedupe_key: dedupe.map(str::to_string),
        max_attempts: 2,
        created_by: "test".into(),
    }
}

async fn dedupe_backoff_cancel_and_retry(backend: Backend) {
    let host = TestHost::new();
    let db = Db::open(&fresh_url(backend, host.dir.path()).await).await.unwrap();
    let tasks = Tasks::new(db);
    let (first, created) = tasks.enqueue(&new_task(json!({"n": 1}), Some("sync:1"))).await.unwrap();
    assert!(created);
    let (again, created) = tasks.enqueue(&new_task(json!({"n": 2}), Some("sync:1"))).await.unwrap();
    assert!(!created, "an active task with the same dedupe key is returned instead");
    assert_eq!(again.id, first.id);

    // Two failed attempts make it dead; a failed attempt waits before the next.
    let claimed = tasks.claim("w1", Duration::from_secs(30)).await.unwrap().unwrap();
    assert_eq!(claimed.attempts, 1);
    assert_eq!(tasks.fail(&claimed, "boom", None).await.unwrap(), TaskStatus::Queued);
    assert!(tasks.claim("w1", Duration::from_secs(30)).await.unwrap().is_none(), "backoff holds it back");
    sqlx::query("UPDATE task SET run_after = 0").execute(&tasks_db(&tasks)).await.unwrap();
    let claimed = tasks.claim("w1", Duration::from_secs(30)).await.unwrap().unwrap();
    assert_eq!(tasks.fail(&claimed, "boom again", None).await.unwrap(), TaskStatus::Dead);
    let dead = tasks.get(&first.id).await.unwrap().unwrap();
    assert_eq!(dead.last_error.as_deref(), Some("boom again"));

    // The dedupe key is free again once the task is no longer active.
    let (second, created) = tasks.enqueue(&new_task(json!({"n": 3}), Some("sync:1"))).await.unwrap();
    assert!(created);
    assert!(matches!(tasks.retry(&first.id).await, Err(TaskError::WrongState(..))), "the key is held by {}", second.id);
    tasks.cancel(&second.id).await.unwrap();
    assert!(matches!(tasks.cancel(&second.id).await, Err(TaskError::WrongState(..))));
    let retried = tasks.retry(&first.id).await.unwrap();
    assert_eq!(retried.status, TaskStatus::Queued);
    assert_eq!(retried.attempts, 0);
    assert_eq!(tasks.list(Some("subject-1"), 10).await.unwrap().len(), 2);
}

fn tasks_db(tasks: &Tasks) -> sqlx::AnyPool {
    tasks.pool()
}

pub struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn start_worker(config: &std::path::Path) -> Proc {
    let child = Command::new(capstan_bin())
        .args(["--config", config.to_str().unwrap(), "worker"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Proc(child)
}

async fn wait_for(
    tasks: &Tasks,
    id: &str,
    what: &str,
    cond: impl Fn(&capstan::tasks::Task) -> bool,
) -> capstan::tasks::Task {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(90) {
        let task = tasks.get(id).await.unwrap().unwrap();
        if cond(&task) {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never {what}");
}

/// A host with the probe component, a `capstan.toml` for a worker over a
/// fresh database (with `extra` appended), and one task queued that probes
/// for `wait_ms`.
async fn probe_queued(
    backend: Backend,
    extra: &str,
    wait_ms: u64,
) -> (TestHost, std::path::PathBuf, Db, capstan::tasks::Task) {
    let host = TestHost::new();
    host.drop_plugin(components::PROBE_LITE, "probe-lite.wasm");
    let url = fresh_url(backend, host.dir.path()).await;
    let config = host.dir.path().join("capstan.toml");
    let data = host.config.data_dir().display().to_string();
    let cache = shared_cache().display().to_string();
    let text = format!("data_dir = {data:?}\ncache_dir = {cache:?}\ndatabase_url = {url:?}\n{extra}");
    std::fs::write(&config, text).unwrap();
    let db = Db::open(&url).await.unwrap();
    let payload = json!({"capability": "test.probe", "input": {"wait_ms": wait_ms}});
    let (task, _) = Tasks::new(db.clone()).enqueue(&new_task(payload, None)).await.unwrap();
    (host, config, db, task)
}

async fn a_killed_worker_is_replaced_and_the_task_completes_once(backend: Backend) {
    let (_host, config, db, task) = probe_queued(backend, "[tasks]\nlease_ms = 2000\n", 3000).await;
    let tasks = Tasks::new(db.clone());

    let first = start_worker(&config);
    let running = wait_for(&tasks, &task.id, "started", |t| t.status == TaskStatus::Running).await;
    let first_owner = running.lease_owner.clone().unwrap();
    drop(first); // SIGKILL, mid-task

    let _second = start_worker(&config);
    let done = wait_for(&tasks, &task.id, "completed", |t| t.status == TaskStatus::Succeeded).await;
    assert_eq!(done.attempts, 2, "the second worker took it over");
    assert_eq!(done.result.as_ref().unwrap()["output"]["lite"], true);
    // Give a zombie completion a chance to show up, then count completions.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let events = Audit::new(db).list(0, 1000).await.unwrap();
    let completions: Vec<_> =
        events.iter().filter(|e| e.event.action == "task.succeeded" && e.event.subject == task.id).collect();
    assert_eq!(completions.len(), 1, "completed once");
    assert!(!completions[0].event.principal.contains(&first_owner), "the killed worker did not complete it");
}

/// Claims are batched by each database handle's writer: many claimers on
/// two handles (two processes, on PostgreSQL two writers whose batches
/// skip each other's locked rows) take every task, each exactly once.
async fn concurrent_claims_take_each_task_once(backend: Backend) {
    let host = TestHost::new();
    let url = fresh_url(backend, host.dir.path()).await;
    let first = Tasks::new(Db::open(&url).await.unwrap());
    let second = Tasks::new(Db::open(&url).await.unwrap());
    let total = 200;
    for n in 0..total {
        first.enqueue(&new_task(json!({ "n": n }), None)).await.unwrap();
    }
    let mut claimers = Vec::new();
    for c in 0..16 {
        let tasks = if c % 2 == 0 { first.clone() } else { second.clone() };
        claimers.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(task) = tasks.claim(&format!("w{c}"), Duration::from_secs(60)).await.unwrap() {
                got.push(task.id);
            }
            got
        }));
    }
    let mut claimed = Vec::new();
    for claimer in claimers {
        claimed.extend(claimer.await.unwrap());
    }
    let distinct: std::collections::BTreeSet<_> = claimed.iter().collect();
    assert_eq!(claimed.len(), total, "every task claimed once, none twice");
    assert_eq!(distinct.len(), total);
    let twice: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM task WHERE attempts <> 1 OR status <> 'running'")
        .fetch_one(&tasks_db(&first))
        .await
        .unwrap();
    assert_eq!(twice, 0, "a task was claimed more than once or not at all");
}

/// SIGTERM to `capstan worker` with a task in progress: the task is let
/// finish and recorded by that worker, every background loop ends, and
/// the process exits cleanly, well before the task's lease would lapse.
async fn a_stopped_worker_finishes_its_task_and_every_loop_ends(backend: Backend) {
    let (host, config, db, task) = probe_queued(backend, "", 1500).await;
    let tasks = Tasks::new(db.clone());
    let log = host.dir.path().join("worker.log");
    let mut worker = Command::new(capstan_bin())
        .args(["--config", config.to_str().unwrap(), "worker"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let running = wait_for(&tasks, &task.id, "started", |t| t.status == TaskStatus::Running).await;
    let told = Command::new("kill").args(["-TERM", &worker.id().to_string()]).status().unwrap();
    assert!(told.success());
    let told = Instant::now();
    let bound = capstan::tasks::worker::DRAIN + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = worker.try_wait().unwrap() {
            break status;
        }
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(told.elapsed() < bound, "the worker still runs {:?} after SIGTERM:\n{said}", told.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let said = std::fs::read_to_string(&log).unwrap();
    println!("worker exited {:?} after SIGTERM", told.elapsed());
    assert!(status.success(), "{status}:\n{said}");
    let done = tasks.get(&task.id).await.unwrap().unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{said}");
    assert_eq!(done.attempts, 1, "finished by the worker that began it, not taken over");
    let owner = running.lease_owner.unwrap();
    let events = Audit::new(db).list(0, 1000).await.unwrap();
    let completed = events.iter().find(|e| e.event.action == "task.succeeded" && e.event.subject == task.id);
    assert!(completed.is_some_and(|e| e.event.principal.contains(&owner)), "recorded by the stopping worker");
    let stopped =
        said.lines().find(|l| l.contains("every background loop stopped")).unwrap_or_else(|| panic!("{said}"));
    for name in ["heartbeat", "setup", "agent-waker", "worker"] {
        assert!(stopped.contains(name), "{name} is not among the loops stopped: {stopped}");
    }
}

both_backends!(
    dedupe_backoff_cancel_and_retry,
    a_killed_worker_is_replaced_and_the_task_completes_once,
    concurrent_claims_take_each_task_once,
    a_stopped_worker_finishes_its_task_and_every_loop_ends
);

/// Waits until task `id` is dead, and answers it.
async fn dead(tasks: &Tasks, id: &str) -> capstan::tasks::Task {
    let started = Instant::now();
    loop {
        let task = tasks.get(id).await.unwrap().unwrap();
        if task.status == TaskStatus::Dead {
            return task;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "task {id} never died: {task:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_that_cannot_succeed_gives_up_one_that_may_is_tried_again_and_a_kind_without_handler_waits() {
    let env = crate::storage::ledger::env(Backend::Sqlite).await;
    let worker = std::sync::Arc::new(env.app.worker(&env._host.config));
    tokio::spawn(worker.run(std::future::pending()));
    let tasks = env.app.tasks();
    let enqueue = |payload: serde_json::Value| {
        let task = NewTask { max_attempts: 3, subject: None, ..new_task(payload, None) };
        async move { tasks.enqueue(&task).await.unwrap().0 }
    };
    // A payload that does not fit its kind, and input the capability
    // refuses: no attempt can mend either.
    let misfit = enqueue(json!({"capability": "release.inspect"})).await;
    let refused = enqueue(json!({"capability": "release.inspect", "input": {"name": 5}})).await;
    // No indexer is configured yet: the operator may add one.
    let unavailable = enqueue(json!({"capability": "release.search", "input": {"query": "Dune"}})).await;
    // A kind this worker has no handler for is another process's to run.
    let (foreign, _) =
        tasks.enqueue(&NewTask { kind: "someOtherKind".into(), ..new_task(json!({}), None) }).await.unwrap();

    let misfit = dead(tasks, &misfit.id).await;
    assert_eq!(misfit.attempts, 1, "given up at once");
    assert!(misfit.last_error.as_deref().unwrap().contains("payload does not fit"), "{misfit:?}");
    let refused = dead(tasks, &refused.id).await;
    assert_eq!(refused.attempts, 1, "given up at once");
    assert!(refused.last_error.as_deref().unwrap().contains("invalid-input"), "{refused:?}");
    let unavailable = dead(tasks, &unavailable.id).await;
    assert_eq!(unavailable.attempts, 3, "tried until its attempts ran out");
    assert!(unavailable.last_error.as_deref().unwrap().contains("no Torznab indexer"), "{unavailable:?}");
    // The worker polled all along and never took it.
    let foreign = tasks.get(&foreign.id).await.unwrap().unwrap();
    assert_eq!((foreign.status, foreign.attempts), (TaskStatus::Queued, 0), "{foreign:?}");
}
