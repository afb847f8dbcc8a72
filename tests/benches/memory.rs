//! Memory benchmark: prints figures, asserts nothing. Resident memory of
//! this process (`VmRSS`) as it becomes a server: before the host starts,
//! idle with the built-in capabilities loaded and the HTTP API listening,
//! per plugin component loaded on top, and across a soak of 100,000 read
//! invokes over HTTP (`wrk`, installed by `scripts/bench.sh`), sampled every
//! slice: a figure that grows with the number of calls served is a leak.
//! Memory per agent run in flight is printed by the `agent` benchmark.
//!
//! Run with `cargo bench -p capstan-tests --bench memory` (`SOAK_INVOKES`
//! sets the soak's length, 100,000 by default).

use std::time::{Duration, Instant};

use capstan::runtime::EffectClass;
use capstan::store::Db;
use capstan_tests::components;
use capstan_tests::host::TestHost;
use capstan_tests::load::{mib, resident_bytes, wrk};
use serde_json::json;

/// Plugins with ids of their own that load without an operator's accept,
/// on top of the built-ins.
const PLUGINS: &[(&str, &str)] = &[
    (components::PROBE, "probe.wasm"),
    (components::WORD_COUNT, "word-count.wasm"),
    (components::QBITTORRENT_CLIENT, "qbittorrent-client.wasm"),
];

fn main() {
    let soak: u64 = std::env::var("SOAK_INVOKES").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let before = resident_bytes();
    let host = TestHost::new();
    let (runtime, base, key) = rt.block_on(async {
        let db = Db::open(&host.config.database_url()).await.unwrap();
        let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
        let runtime = app.caps().runtime().clone();
        app.flush_component_events().await.unwrap();
        let key = capstan::http::keys::create(&db, "bench", &[EffectClass::Read], "bench").await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/api/v1", listener.local_addr().unwrap());
        tokio::spawn(capstan::http::serve(listener, app, Default::default(), std::future::pending()));
        tokio::time::sleep(Duration::from_secs(1)).await;
        (runtime, base, key)
    });
    let builtins = runtime.snapshot().active.len();
    let idle = resident_bytes();
    println!("== resident memory ==");
    println!("{:<58} {:>10}", "this process before the host starts", mib(before));
    println!("{:<58} {:>10}", format!("idle server, {builtins} built-ins loaded, HTTP listening"), mib(idle));
    println!(
        "{:<58} {:>10}",
        "  (idle - before) / built-ins: the whole host, per built-in",
        mib(idle.saturating_sub(before) / builtins as u64)
    );

    // Plugins are picked up as `serve` picks them up: the folder watcher.
    let _watch = rt.block_on(async { capstan::runtime::watcher::watch(runtime.clone()).unwrap() });
    for (path, name) in PLUGINS {
        host.drop_plugin(path, name);
    }
    let waited = Instant::now();
    while runtime.snapshot().active.len() < builtins + PLUGINS.len() && waited.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let added = runtime.snapshot().active.len() - builtins;
    for refusal in &runtime.snapshot().refused {
        println!("  (refused {}: {})", refusal.file.display(), refusal.reason);
    }
    for id in runtime.snapshot().held.keys() {
        println!("  (held until accepted: {id})");
    }
    let with_plugins = resident_bytes();
    println!(
        "{:<58} {:>10}",
        format!("per plugin loaded and compiled ({added} added: {})", mib(with_plugins.saturating_sub(idle))),
        mib(with_plugins.saturating_sub(idle) / added.max(1) as u64)
    );

    println!("== soak: release.inspect invokes over HTTP, 16 connections ==");
    let body = json!({ "input": { "name": "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX.mkv" } });
    let url = format!("{base}/capabilities/release.inspect/invoke");
    let body = body.to_string();
    let mut served = 0u64;
    let mut first = None;
    while served < soak {
        let load = wrk(&url, Some(&key), &body, 16, 2);
        assert!(load.requests > 0, "wrk served nothing: is it installed (scripts/bench.sh)?");
        assert_eq!(load.errors, 0, "invokes failed during the soak");
        served += load.requests;
        let now = resident_bytes();
        first.get_or_insert(now);
        println!(
            "{served:>8} invokes served ({:>6.0} req/s, {} errors): resident {}",
            load.rate,
            load.errors,
            mib(now)
        );
    }
    let last = resident_bytes();
    let first = first.unwrap_or(last);
    println!(
        "resident after the first slice {} and after {served} invokes {}: {:+.1} MiB",
        mib(first),
        mib(last),
        (last as f64 - first as f64) / (1 << 20) as f64
    );
    drop(runtime);
}
