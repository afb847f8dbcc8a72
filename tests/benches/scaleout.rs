//! Scale-out benchmark on PostgreSQL: prints figures, asserts nothing but
//! that every task ran exactly once. For 1, 2 and 4 `capstan worker`
//! processes (the real binary, each running 4 tasks at a time) against a
//! fresh database, 1,000 and 10,000 queued `invokeCapability` tasks, each one execute
//! invoke of the test probe with its own input — ledger claim, sandboxed
//! call, ledger finish, audit — are drained; it prints tasks per second per
//! worker count, then checks that no task was claimed a second time (its
//! attempts), no call attempted again (its ledger row's attempts; a task's
//! calls share one row, keyed by the task), and every call succeeded once.
//!
//! Beside each row, in the same run, the anchor: a maintained PostgreSQL
//! job queue (procrastinate, from PyPI) draining the same number of queued
//! no-op jobs with as many worker processes, 4 jobs at a time each
//! (`tests/anchors/procrastinate_drain.py`, in the virtualenv
//! `scripts/setup.sh --bench` makes; without it the anchor says so and is
//! left out).
//!
//! Where the server loads `pg_stat_statements` (the one `scripts/bench.sh`
//! starts does), each row also says what the database did per task:
//! statements, committed transactions, time executing, and the statements
//! that took it — the figures that carry to a database on its own machine.
//!
//! Run with `scripts/bench.sh` (which starts a throwaway PostgreSQL), or
//! `cargo build --release -p capstan && cargo bench -p capstan-tests
//! --bench scaleout` with `CAPSTAN_TEST_POSTGRES_URL` set
//! (`SCALEOUT_TASKS=1000,10000,100000` sets the queue lengths, 1,000 and
//! 10,000 unless set; `SCALEOUT_WORKERS=1,2` the worker counts, 1, 2 and 4
//! unless set; `SCALEOUT_CONCURRENCY` the tasks each worker runs at once,
//! 4 unless set).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capstan::pipeline::INVOKE_CAPABILITY;
use capstan::store::Db;
use capstan::tasks::{NewTask, Tasks};
use capstan_tests::binary::capstan_bin;
use capstan_tests::components;
use capstan_tests::db::{Backend, POSTGRES_ENV, fresh_url};
use capstan_tests::host::{TestHost, shared_cache};
use capstan_tests::pg_stats::StatementStats;
use serde_json::json;

struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn drain(workers: usize, count: usize) {
    let host = TestHost::new();
    host.drop_plugin(components::PROBE, "probe.wasm");
    let url = fresh_url(Backend::Postgres, host.dir.path()).await;
    let config = host.dir.path().join("capstan.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\ncache_dir = {:?}\ndatabase_url = {:?}\n[tasks]\nconcurrency = {}\npipeline_interval_sec = 0\n",
            host.config.data_dir().display().to_string(),
            shared_cache().display().to_string(),
            url,
            concurrency(),
        ),
    )
    .unwrap();
    let db = Db::open(&url).await.unwrap();
    // Tasks act on their own authority: an automation grant covering the
    // probe, with a daily budget the run stays inside.
    let mut grant = capstan_tests::grants::for_an_hour("test.probe");
    // At most the largest budget a grant may have; one call per task fits.
    grant.daily_invocations = (10 * count as i64).min(capstan::authz::MAX_DAILY_INVOCATIONS);
    grant.daily_bytes = 1_000_000_000_000;
    capstan::authz::Authz::new(db.clone()).create_grant(&grant, "admin:bench").await.unwrap();
    let tasks = Tasks::new(db.clone());
    let mut queued = Vec::new();
    for n in 0..count {
        let tasks = tasks.clone();
        queued.push(tokio::spawn(async move {
            // Each task is its own idempotency scope, and its own input:
            // the same write by the same principal while another is open
            // waits for it to settle (the same-write check), which would
            // measure tasks queuing behind each other, not the queue.
            let payload = json!({"capability": "test.probe", "input": {"action": "big", "bytes": 16, "task": n}});
            let new = NewTask {
                kind: INVOKE_CAPABILITY.into(),
                subject: None,
                payload,
                dedupe_key: None,
                max_attempts: 3,
                created_by: "bench".into(),
            };
            tasks.enqueue(&new).await.unwrap();
        }));
        if queued.len() >= 64 {
            for q in queued.drain(..) {
                q.await.unwrap();
            }
        }
    }
    for q in queued {
        q.await.unwrap();
    }

    let statements = StatementStats::begin(&tasks.pool()).await;
    let started = Instant::now();
    let _workers = Workers(
        (0..workers)
            .map(|_| {
                Command::new(capstan_bin())
                    .args(["--config", config.to_str().unwrap(), "worker"])
                    .env("RUST_LOG", "warn")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    let pool = tasks.pool();
    let mut done = 0;
    while started.elapsed() < Duration::from_secs(900) {
        done = sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM task WHERE kind = 'invokeCapability' AND status IN ('succeeded', 'dead')",
        )
        .fetch_one(&pool)
        .await
        .unwrap() as usize;
        if done == count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    // Read before the checks below, whose reads are not the work measured.
    let database = match &statements {
        Some(statements) => statements.report(count, "task").await,
        None => String::new(),
    };
    let count_of = |sql: &'static str| {
        let pool = pool.clone();
        async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&pool).await.unwrap() }
    };
    let succeeded =
        count_of("SELECT COUNT(*) FROM task WHERE kind = 'invokeCapability' AND status = 'succeeded'").await;
    let retried = count_of("SELECT COUNT(*) FROM task WHERE attempts > 1").await;
    let ledger_again = count_of("SELECT COUNT(*) FROM capability_invocation WHERE attempts > 1").await;
    let twice = count_of(
        "SELECT COUNT(*) FROM (SELECT task_id FROM capability_invocation WHERE task_id IS NOT NULL \
         GROUP BY task_id HAVING COUNT(*) > 1) AS t",
    )
    .await;
    let calls = count_of("SELECT COUNT(*) FROM capability_invocation WHERE status = 'succeeded'").await;
    println!(
        "{workers} worker(s): {done} of {count} tasks in {secs:.1} s: {:>6.0} tasks/s ({succeeded} succeeded, \
         {retried} claimed again, {ledger_again} calls attempted again, {calls} succeeded calls in the ledger)",
        done as f64 / secs
    );
    print!("{database}");
    if (succeeded as usize) < count {
        let why: Option<String> = sqlx::query_scalar(
            "SELECT last_error FROM task WHERE kind = 'invokeCapability' AND status <> 'succeeded' LIMIT 1",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        println!("  a task that did not succeed: {}", why.unwrap_or_default());
    }
    // A task's calls share one ledger row (its idempotency key), so a task
    // claimed twice shows as a second attempt of the task and of its row.
    assert_eq!(retried, 0, "a task was claimed more than once");
    assert_eq!(ledger_again, 0, "a task's call was attempted more than once");
    assert_eq!(twice, 0, "a task's call ran more than once");
    assert_eq!(calls as usize, count, "every task's call ran once");
}

/// How many tasks (and anchor jobs) each worker runs at once:
/// `SCALEOUT_CONCURRENCY`, else 4.
fn concurrency() -> String {
    numbers(std::env::var("SCALEOUT_CONCURRENCY").ok().as_deref(), &[4])[0].to_string()
}

/// The queue lengths to drain: `SCALEOUT_TASKS`, a comma-separated list
/// (`1000,10000,100000` for the whole table), else 1,000 and 10,000.
fn queue_lengths(asked: Option<&str>) -> Vec<usize> {
    numbers(asked, &[1_000, 10_000])
}

/// The numbers of a comma-separated list, else `otherwise`.
fn numbers(asked: Option<&str>, otherwise: &[usize]) -> Vec<usize> {
    let asked: Vec<usize> =
        asked.into_iter().flat_map(|s| s.split(',')).filter_map(|n| n.trim().parse().ok()).collect();
    if asked.is_empty() { otherwise.to_vec() } else { asked }
}

/// The anchor's line for `workers` processes draining `count` no-op jobs
/// of procrastinate on a fresh database of the same server.
async fn anchor(workers: usize, count: usize) {
    let python = capstan_tests::host::target_dir().join("test-tools/procrastinate/bin/python");
    if !python.exists() {
        println!("  anchor: skipped (procrastinate is not installed: scripts/setup.sh --bench installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_url(Backend::Postgres, dir.path()).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/anchors/procrastinate_drain.py");
    let out = tokio::process::Command::new(python)
        .args([script, &url, &count.to_string(), &workers.to_string(), &concurrency()])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    match out.status.success() {
        true => println!("  anchor, procrastinate: {}", said.trim()),
        false => println!("  anchor: failed: {} {}", said.trim(), String::from_utf8_lossy(&out.stderr).trim()),
    }
}

fn main() {
    if std::env::var(POSTGRES_ENV).is_err() {
        println!("scale-out: skipped ({POSTGRES_ENV} is not set; scripts/bench.sh starts a PostgreSQL)");
        return;
    }
    let counts = queue_lengths(std::env::var("SCALEOUT_TASKS").ok().as_deref());
    let worker_counts = numbers(std::env::var("SCALEOUT_WORKERS").ok().as_deref(), &[1, 2, 4]);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        for count in counts {
            println!("== scale-out on PostgreSQL: {count} invokeCapability tasks, one execute invoke each ==");
            for &workers in &worker_counts {
                drain(workers, count).await;
                anchor(workers, count).await;
            }
        }
    });
}
