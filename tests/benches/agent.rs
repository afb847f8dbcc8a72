//! Agent benchmarks: print figures, assert nothing.
//!
//! 1. Loop overhead per step with the scripted model: a run of many steps,
//!    each a model answer and one read tool call (`inventory.query` in the
//!    sandbox), timed end to end minus the time spent inside the model.
//!    What remains is the loop: session-log appends (fsync), run events,
//!    budget checks, the invoke path and the sandboxed call.
//! 2. Concurrent runs on one worker: a batch of demo runs queued at once,
//!    drained by one worker; runs per second and resident memory per run
//!    in flight (peak over baseline, divided by the worker's concurrency).
//! 3. SSE fan-out: 100 subscribers on `GET /api/v1/events` while events
//!    are published; deliveries per second and p50/p99 delivery latency.
//!
//! Everything shares this machine's two cores, on SQLite in a temporary
//! directory. Run with `cargo bench -p capstan-tests --bench agent`;
//! `AGENT_BENCH=loop` runs only the first (`AGENT_LOOP_RUNS` runs of each
//! length, 5 by default), to profile the loop alone; `BENCH_TRACE_SQL=1`
//! prints every statement sqlx runs, to count a step's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan::agent::providers::scripted::Scripted;
use capstan::agent::providers::{CompletionFuture, ModelRequest, Provider, StreamEvent};
use capstan::agent::runs::{NewRun, RunMode};
use capstan::pipeline::Capabilities;
use capstan::runtime::EffectClass;
use capstan::store::Db;
use capstan::tasks::{Worker, WorkerConfig};
use capstan_tests::host::TestHost;
use capstan_tests::load::resident_bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The scripted model, with the time spent inside it.
struct Timed {
    model: Scripted,
    inside_us: AtomicU64,
}

impl Provider for Timed {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        Box::pin(async move {
            let started = Instant::now();
            let answer = self.model.complete(request, events).await;
            self.inside_us.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            answer
        })
    }
}

async fn setup() -> (TestHost, Arc<capstan::app::App>, Arc<Capabilities>) {
    let host = TestHost::new();
    let db = Db::open(&host.config.database_url()).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();
    let mut change = serde_json::Map::new();
    change.insert("budget.max_runs_per_day".into(), json!(1_000_000));
    change.insert("agent.max_tool_calls".into(), json!(10_000));
    // A long run's context grows every step: its tokens add up past the
    // default run budget, which would end it early and shorten the step
    // count the figures divide by.
    change.insert("agent.max_tokens_per_run".into(), json!(i64::MAX / 2));
    change.insert("agent.max_cost_usd_per_run".into(), json!(1.0e6));
    app.settings().update(&change).await.unwrap();
    (host, app, caps)
}

/// Runs of `steps` model answers (each with one read call) plus the final
/// answer; the time outside the model of each run, in microseconds, sorted,
/// and the group commits per step of the last run.
async fn drive_runs(app: &Arc<capstan::app::App>, steps: usize, runs: usize) -> (Vec<f64>, f64) {
    let answers: Vec<Value> = (0..steps)
        .map(|i| json!({"text": format!("Step {i}."), "tools": [{"name": "inventory.query", "input": {}}]}))
        .collect();
    let script = json!({"scripts": [{"steps": answers, "finalText": "Done."}]}).to_string();
    let mut outside_us = Vec::new();
    let mut commits_per_step = 0.0;
    for _ in 0..runs {
        let timed = Arc::new(Timed { model: Scripted::from_json(&script).unwrap(), inside_us: AtomicU64::new(0) });
        let agent = app.new_agent().with_provider(timed.clone());
        let new = NewRun {
            goal: "read".into(),
            mode: RunMode::PlanOnly,
            allowlist: None,
            created_by: "bench".into(),
            investigation: None,
            skill: None,
        };
        let run = agent.runs().create(&new).await.unwrap();
        let commits = app.services().db.group_commits();
        let started = Instant::now();
        agent.drive(&run.id).await.unwrap();
        let total = started.elapsed().as_micros() as u64;
        // A run that stopped short would make every figure a lie.
        let ended = agent.runs().get(&run.id).await.unwrap();
        assert_eq!(ended.status.as_str(), "succeeded", "the {steps}-step run ended early: {:?}", ended.error);
        assert_eq!(ended.tool_calls, steps as i64, "the {steps}-step run made every call");
        outside_us.push((total - timed.inside_us.load(Ordering::Relaxed)) as f64);
        commits_per_step = (app.services().db.group_commits() - commits) as f64 / steps as f64;
    }
    outside_us.sort_by(f64::total_cmp);
    (outside_us, commits_per_step)
}

/// The loop's cost per step two ways: a 41-step run's time outside the
/// model divided by its steps (the run's start and end spread over them;
/// a run without steps is printed first), and the marginal cost of a
/// step — a 161-step run's median less a 41-step run's, over the 120 steps
/// between them.
async fn loop_overhead(app: &Arc<capstan::app::App>) {
    let runs: usize = std::env::var("AGENT_LOOP_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5).max(1);
    let (zero, _) = drive_runs(app, 0, runs).await;
    let (short, commits_per_step) = drive_runs(app, 40, runs).await;
    let (long, _) = drive_runs(app, 160, runs).await;
    let median = |v: &[f64]| v[v.len() / 2];
    println!(
        "a run without steps (its start, the final answer, its report and end): median {:.2} ms",
        median(&zero) / 1000.0
    );
    println!(
        "loop overhead per step (model excluded, one sandboxed read each): median {:.2} ms, best {:.2} ms over {runs} runs of 41 steps",
        median(&short) / 41.0 / 1000.0,
        short[0] / 41.0 / 1000.0,
    );
    println!(
        "  marginal cost of a step (161-step run less 41-step run, medians, over 120 steps): {:.2} ms",
        (median(&long) - median(&short)) / 120.0 / 1000.0
    );
    println!(
        "  commits per step with one read call, the read's audit row included (a run's start and end spread over its steps): {commits_per_step:.2}"
    );
}

async fn concurrent_runs(app: &Arc<capstan::app::App>, runs: usize, concurrency: usize) {
    let agent = Arc::new(app.new_agent());
    let config = WorkerConfig { poll: Duration::from_millis(5), lease: Duration::from_secs(30), concurrency };
    let mut worker = Worker::new(app.tasks().clone(), "bench".into(), config);
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    let baseline = resident_bytes();
    let started = Instant::now();
    let mut ids = Vec::new();
    for i in 0..runs {
        let new = NewRun {
            goal: format!("what do I have? #{i}"),
            mode: RunMode::PlanOnly,
            allowlist: None,
            created_by: "bench".into(),
            investigation: None,
            skill: None,
        };
        ids.push(agent.start(new).await.unwrap().id);
    }
    let handle = tokio::spawn(Arc::new(worker).run(std::future::pending()));
    let mut peak = baseline;
    loop {
        peak = peak.max(resident_bytes());
        let mut done = 0;
        for id in &ids {
            if agent.runs().get(id).await.unwrap().status.is_final() {
                done += 1;
            }
        }
        if done == ids.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    handle.abort();
    println!(
        "{runs} demo runs, one worker running {concurrency} at once: {:.1} runs/s, ~{:.0} KiB resident per run in flight",
        runs as f64 / secs,
        peak.saturating_sub(baseline) as f64 / concurrency as f64 / 1024.0
    );
}

async fn sse_fan_out(app: &Arc<capstan::app::App>, subscribers: usize, events: usize) {
    let svc = app.services();
    let base = capstan_tests::api::serve(app.clone()).await;
    let key = capstan::http::keys::create(&svc.db, "bench", &[EffectClass::Read], "bench").await.unwrap();
    let head = svc.events.head().await.unwrap();
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(subscribers * events)));
    let ready = Arc::new(tokio::sync::Barrier::new(subscribers + 1));
    let mut tasks = Vec::new();
    for _ in 0..subscribers {
        let (base, key, latencies, ready) = (base.clone(), key.clone(), latencies.clone(), ready.clone());
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut resp = client
                .get(format!("{base}/events?after={head}"))
                .bearer_auth(&key)
                .header("accept", "text/event-stream")
                .send()
                .await
                .unwrap();
            ready.wait().await;
            let (mut buffer, mut seen) = (String::new(), 0);
            while seen < events {
                let chunk = resp.chunk().await.unwrap().expect("the stream stays open");
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buffer.find("\n\n") {
                    let block: String = buffer.drain(..end + 2).collect();
                    let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) else { continue };
                    let value: Value = serde_json::from_str(data.trim()).unwrap();
                    if let Some(sent) = value["payload"]["sentUs"].as_i64() {
                        latencies.lock().unwrap().push(micros_since(sent));
                        seen += 1;
                    }
                }
            }
        }));
    }
    ready.wait().await;
    let started = Instant::now();
    for n in 0..events {
        svc.events.publish("bench.tick", None, &json!({"n": n, "sentUs": epoch_micros()})).await.unwrap();
    }
    for t in tasks {
        t.await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let mut all = latencies.lock().unwrap().clone();
    all.sort_unstable();
    let pct = |p: f64| all[((all.len() as f64 - 1.0) * p).round() as usize] as f64 / 1000.0;
    println!(
        "SSE fan-out, {subscribers} subscribers x {events} events: {:.0} deliveries/s, latency p50 {:.1} ms, p99 {:.1} ms",
        all.len() as f64 / secs,
        pct(0.5),
        pct(0.99)
    );
}

fn epoch_micros() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64
}

fn micros_since(sent: i64) -> i64 {
    (epoch_micros() - sent).max(0)
}

fn main() {
    capstan_tests::load::trace_sql_if_asked();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (_host, app, _caps) = setup().await;
        loop_overhead(&app).await;
        if std::env::var("AGENT_BENCH").as_deref() == Ok("loop") {
            return;
        }
        concurrent_runs(&app, 200, 16).await;
        sse_fan_out(&app, 100, 300).await;
    });
}
