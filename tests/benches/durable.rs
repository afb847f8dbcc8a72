//! Durable-core benchmark: prints figures, asserts nothing.
//!
//! - execute invokes per second through the whole invoke path (schema,
//!   ledger claim and finish, sandboxed call, audit append, each input
//!   different), on SQLite and on PostgreSQL, with 1 and 8 concurrent
//!   callers, how many invokes share a group commit, and each call's
//!   p50/p99 latency;
//! - ledger claim contention: 16 writers claiming the same key, and 16
//!   writers claiming distinct keys;
//! - beside SQLite's figures, how fast the same disk syncs a small append
//!   in the same run: the machine's storage varies between runs, and a
//!   claim's commit waits for such a sync, and what one statement costs
//!   through sqlx's SQLite driver (each is a handoff to the connection's
//!   own thread and back): a `SELECT 1` from a thread free to move and
//!   from one kept to one CPU, and a one-row write transaction at each
//!   sync level.
//!
//! Run with `scripts/bench.sh` (which starts a throwaway PostgreSQL), or
//! `cargo bench -p capstan-tests --bench durable` for SQLite only.

use std::time::Instant;

use capstan::ledger::{Claim, ClaimRequest, Ledger};
use capstan::pipeline::{Origin, Services};
use capstan::runtime::{EffectClass, Status};
use capstan::store::Db;
use capstan_tests::components;
use capstan_tests::db::{Backend, POSTGRES_ENV, fresh_url};
use capstan_tests::host::TestHost;
use serde_json::json;

/// Makes every benchmarked input different.
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

async fn invokes(svc: &Services, backend: Backend, callers: usize, per_caller: usize) {
    let commits = svc.db.group_commits();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..callers {
        let caps = svc.caps.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(per_caller);
            for _ in 0..per_caller {
                let call_started = Instant::now();
                // Each call is a new explicit request with its own input, so
                // each one really runs (identical writes of one caller in
                // flight at once wait for each other, by design).
                let bytes = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 100_000;
                let input = json!({"action": "big", "bytes": bytes});
                let inv = caps.invoke(&Origin::cli(EffectClass::Execute), "test.probe", &input).await.unwrap();
                assert_eq!(inv.status, Status::Succeeded, "{:?}", inv.error);
                latencies.push(call_started.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    latencies.sort();
    let at = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3;
    let n = callers * per_caller;
    let secs = started.elapsed().as_secs_f64();
    let per_commit = n as f64 / (svc.db.group_commits() - commits) as f64;
    println!(
        "{backend:?}: execute invokes, {callers} caller(s): {:>8.0}/s ({n} in {secs:.2} s; {per_commit:.2} invokes per group commit; latency p50 {:.2} ms, p99 {:.2} ms)",
        n as f64 / secs,
        at(0.50),
        at(0.99)
    );
}

fn request(key: String) -> ClaimRequest {
    ClaimRequest {
        key,
        capability_id: "bench.claim".into(),
        capability_version: 1,
        actor_kind: "cli".into(),
        principal: "cli:bench".into(),
        run_id: None,
        task_id: None,
        tool_call_id: None,
        input_digest: "d".into(),
    }
}

async fn contention(db: &Db, backend: Backend, same_key: bool) {
    let writers = 16;
    let per_writer = 100;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let ledger = Ledger::new(db.clone(), format!("bench-{w}"));
        let tag = capstan::store::new_id();
        tasks.push(tokio::spawn(async move {
            // A live owner: without a heartbeat its claims look orphaned.
            ledger.heartbeat().await.unwrap();
            let mut claimed = 0;
            for i in 0..per_writer {
                let key = if same_key { "bench:same".to_string() } else { format!("bench:{tag}:{i}") };
                if let Claim::Claimed { id, token } = ledger.claim(&request(key)).await.unwrap() {
                    claimed += 1;
                    ledger
                        .finish(&id, &token, capstan::ledger::LedgerStatus::Succeeded, Some("{}"), None, true)
                        .await
                        .unwrap();
                }
            }
            claimed
        }));
    }
    let mut claimed = 0;
    for t in tasks {
        claimed += t.await.unwrap();
    }
    let n = writers * per_writer;
    let secs = started.elapsed().as_secs_f64();
    let which = if same_key { "same key" } else { "distinct keys" };
    println!(
        "{backend:?}: claim contention, 16 writers, {which:<13} {:>8.0} claims/s ({claimed} claimed of {n})",
        n as f64 / secs
    );
}

/// The anchor for SQLite's figures, measured in the same run: how fast this
/// disk syncs a small append (what a claim's commit waits for), p50 of 300.
fn disk_sync(dir: &std::path::Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(dir.join("sync-anchor")).unwrap();
    let mut took: Vec<f64> = (0..300)
        .map(|_| {
            file.write_all(&[b'x'; 200]).unwrap();
            let started = Instant::now();
            file.sync_data().unwrap();
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    took.sort_by(f64::total_cmp);
    println!(
        "Sqlite: anchor: this disk syncs a 200-byte append in {:.3} ms (p50; {:.0} syncs/s one after another)",
        took[150],
        1000.0 / took[150]
    );
}

/// The other anchor: the driver's own cost, on a connection of its own
/// made from this thread — one statement's round trip (p10/p50/p90 of
/// 2,000: on a virtual machine it is either a few µs, when the driver's
/// thread runs on this thread's CPU, or tens, when each handoff wakes the
/// other CPU), the same with this thread and so the driver's kept to one
/// CPU as the SQLite writer keeps its own, and a write transaction (begin, one insert, commit) at `NORMAL`
/// and `FULL`, p50s.
async fn driver_round_trips(dir: &std::path::Path) {
    use sqlx::{Connection, Executor};
    fn spread(mut took: Vec<f64>) -> [f64; 3] {
        took.sort_by(f64::total_cmp);
        [took[took.len() / 10], took[took.len() / 2], took[took.len() * 9 / 10]]
    }
    async fn round_trips(url: &str) -> [f64; 3] {
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        let mut took = Vec::new();
        for _ in 0..2_000 {
            let started = Instant::now();
            sqlx::query("SELECT 1").execute(&mut conn).await.unwrap();
            took.push(started.elapsed().as_secs_f64() * 1e6);
        }
        spread(took)
    }
    let url = format!("sqlite://{}?mode=rwc", dir.join("anchor.db").display());
    let free = round_trips(&url).await;
    let pinned = {
        let url = url.clone();
        std::thread::spawn(move || {
            capstan::store::batch::keep_to_one_cpu();
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(round_trips(&url))
        })
        .join()
        .unwrap()
    };
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    conn.execute("PRAGMA journal_mode = WAL").await.unwrap();
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)").await.unwrap();
    let mut commits = Vec::new();
    for level in ["NORMAL", "FULL"] {
        conn.execute(format!("PRAGMA synchronous = {level}").as_str()).await.unwrap();
        let mut took = Vec::new();
        for _ in 0..2_000 {
            let started = Instant::now();
            let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.unwrap();
            sqlx::query("INSERT INTO t (v) VALUES ($1)").bind("x").execute(&mut *tx).await.unwrap();
            tx.commit().await.unwrap();
            took.push(started.elapsed().as_secs_f64() * 1e6);
        }
        commits.push(spread(took)[1]);
    }
    let [f10, f50, f90] = free;
    let [p10, p50, p90] = pinned;
    println!(
        "Sqlite: anchor: sqlx's SQLite driver, one statement's round trip (SELECT 1, p10/p50/p90): \
         {f10:.0}/{f50:.0}/{f90:.0} µs free to move, {p10:.0}/{p50:.0}/{p90:.0} µs kept to one CPU; \
         begin + one insert + commit p50 {:.0} µs (NORMAL), {:.0} µs (FULL)",
        commits[0], commits[1]
    );
}

async fn run(backend: Backend) {
    let mut host = TestHost::new();
    if backend == Backend::Sqlite {
        disk_sync(host.dir.path());
        driver_round_trips(host.dir.path()).await;
    }
    host.drop_plugin(components::PROBE, "probe.wasm");
    host.config.database_url = Some(fresh_url(backend, host.dir.path()).await);
    let db = Db::open(&host.config.database_url()).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let svc = app.services().clone();
    app.flush_component_events().await.unwrap();
    invokes(&svc, backend, 1, 50).await; // warm-up
    invokes(&svc, backend, 1, 1_000).await;
    invokes(&svc, backend, 8, 250).await;
    contention(&db, backend, true).await;
    contention(&db, backend, false).await;
}

fn main() {
    capstan_tests::load::trace_sql_if_asked();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        run(Backend::Sqlite).await;
        if std::env::var(POSTGRES_ENV).is_ok() {
            run(Backend::Postgres).await;
        } else {
            println!("Postgres: skipped ({POSTGRES_ENV} is not set; scripts/bench.sh starts a server)");
        }
    });
}
