//! Components from three languages: prints figures, asserts nothing.
//!
//! - for the word-count example in Rust, Python and JavaScript: the file's
//!   size, its first load (compile, pre-initialisation, `describe`) into an
//!   empty cache, its load from the warm cache in a new runtime, and the
//!   p50/p99 of one call (a fresh instance, the call, the drop);
//! - the latency of `release.inspect` calls, from one caller and from two
//!   (both cores busy), while nothing else runs (the anchor) and while the
//!   Python component, dropped into the watched folder, compiles in the
//!   background, and how long that compile took.
//!
//! Needs the toolchains `scripts/setup.sh --tests` installs. Run with
//! `cargo bench -p capstan-tests --bench languages`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::Runtime;
use capstan::runtime::{Actor, EffectClass, Grant, Status, watcher};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use capstan_tests::languages::{self, Example};

fn grant() -> Grant {
    Grant::new(Actor::Cli, EffectClass::Read)
}

fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e6;
    (at(0.50), at(0.99))
}

/// A host whose compiled-code cache is `cache`.
fn host_with_cache(cache: &std::path::Path) -> TestHost {
    let mut host = TestHost::new();
    host.config.cache_dir = Some(cache.to_path_buf());
    host
}

async fn per_language(name: &str, file: PathBuf, id: &str) {
    let bytes = std::fs::read(&file).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let host = host_with_cache(cache.path());
    host.drop_plugin(file.to_str().unwrap(), "plugin.wasm");
    let started = Instant::now();
    drop(host.start().await.unwrap());
    let cold = started.elapsed();
    let started = Instant::now();
    let runtime = host.start().await.unwrap();
    let warm = started.elapsed();
    let input = serde_json::json!({"text": "one two three four"}).to_string();
    let mut samples = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        let report = runtime.call(id, &input, grant()).await.unwrap();
        samples.push(started.elapsed());
        assert_eq!(report.status(), Status::Succeeded, "{:?}", report.outcome);
    }
    let (p50, p99) = percentiles(samples);
    println!(
        "{name:<11} {:>8.1} MB   first load {:>7.2} s   from cache {:>6.3} s   call p50 {p50:>8.1} µs  p99 {p99:>8.1} µs",
        bytes.len() as f64 / 1e6,
        cold.as_secs_f64(),
        warm.as_secs_f64(),
    );
}

/// `release.inspect` latencies for `window`, one call after another.
async fn inspect_for(runtime: &Runtime, window: Duration) -> Vec<Duration> {
    let input = serde_json::json!({"name": "The.Last.of.Us.S01E03.1080p.WEB.H264-CAKES"}).to_string();
    let mut samples = Vec::new();
    let started = Instant::now();
    while started.elapsed() < window {
        let call = Instant::now();
        let report = runtime.call("release.inspect", &input, grant()).await.unwrap();
        samples.push(call.elapsed());
        assert_eq!(report.status(), Status::Succeeded);
    }
    samples
}

/// `callers` loops of `release.inspect` calls for `window`; all latencies.
async fn inspect_by(runtime: &Arc<Runtime>, callers: usize, window: Duration) -> Vec<Duration> {
    let loops: Vec<_> = (0..callers)
        .map(|_| {
            let runtime = runtime.clone();
            tokio::spawn(async move { inspect_for(&runtime, window).await })
        })
        .collect();
    let mut samples = Vec::new();
    for one in loops {
        samples.extend(one.await.unwrap());
    }
    samples
}

/// Latency of `callers` concurrent callers with nothing else running, then
/// while the Python component compiles in the background.
async fn while_compiling(python: &std::path::Path, callers: usize) {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with_cache(cache.path());
    let runtime: Arc<Runtime> = host.start().await.unwrap();
    let _watch = watcher::watch(runtime.clone()).unwrap();
    inspect_by(&runtime, callers, Duration::from_secs(1)).await; // warm up
    let (idle_p50, idle_p99) = percentiles(inspect_by(&runtime, callers, Duration::from_secs(3)).await);

    host.drop_plugin(python.to_str().unwrap(), "word-count-py.wasm");
    let started = Instant::now();
    while runtime.snapshot().compiling.is_empty() && runtime.snapshot().get(Example::Python.id()).is_none() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut samples = Vec::new();
    while runtime.snapshot().get(Example::Python.id()).is_none() {
        samples.extend(inspect_by(&runtime, callers, Duration::from_millis(100)).await);
    }
    let compile = started.elapsed();
    let count = samples.len();
    let (busy_p50, busy_p99) = percentiles(samples);
    println!(
        "release.inspect, {callers} caller(s), nothing else running   p50 {idle_p50:>8.1} µs  p99 {idle_p99:>8.1} µs   (anchor)"
    );
    println!(
        "release.inspect, {callers} caller(s), while Python compiles  p50 {busy_p50:>8.1} µs  p99 {busy_p99:>8.1} µs   ({count} calls during a {:.2} s compile; p50 {:.2}x the anchor)",
        compile.as_secs_f64(),
        busy_p50 / idle_p50
    );
}

#[tokio::main]
async fn main() {
    let python = languages::build(Example::Python, "read-capability");
    let javascript = languages::build(Example::JavaScript, "read-capability");
    println!("word-count in three languages (size, loads, one call: instantiate + invoke + drop)");
    per_language("Rust", PathBuf::from(components::WORD_COUNT), "example.word-count").await;
    per_language("Python", python.clone(), Example::Python.id()).await;
    per_language("JavaScript", javascript, Example::JavaScript.id()).await;
    println!();
    // One caller leaves a core to the compile; two keep both busy.
    while_compiling(&python, 1).await;
    while_compiling(&python, 2).await;
}
