//! HTTP benchmark: prints figures, asserts nothing. An in-repo load
//! generator drives `POST /api/v1/capabilities/{id}/invoke` of read
//! capabilities over loopback with 1, 16 and 64 connections, each sending
//! requests back to back for a fixed time, and reports requests per second
//! and p50/p99 latency. Server and load generator share this machine's two
//! cores, so the figures are a floor.
//!
//! Run with `cargo bench -p capstan-tests --bench http`.

use std::time::{Duration, Instant};

use capstan::runtime::EffectClass;
use capstan::store::Db;
use capstan_tests::components;
use capstan_tests::host::TestHost;
use serde_json::{Value, json};

const RUN_FOR: Duration = Duration::from_secs(4);

async fn load(base: &str, key: &str, id: &str, input: &Value, connections: usize) {
    let body = json!({ "input": input }).to_string();
    let url = format!("{base}/capabilities/{id}/invoke");
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        // One client per connection, so each keeps one keep-alive connection.
        let client = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
        let (url, body, key) = (url.clone(), body.clone(), key.to_string());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while started.elapsed() < RUN_FOR {
                let t = Instant::now();
                let resp = client
                    .post(&url)
                    .bearer_auth(&key)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                assert!(resp.status().is_success(), "{}", resp.status());
                let _ = resp.bytes().await.unwrap();
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3;
    println!(
        "{id:<16} {connections:>3} connection(s): {:>7.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms   ({} requests)",
        all.len() as f64 / secs,
        pct(0.5),
        pct(0.99),
        all.len()
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let host = TestHost::new();
        host.drop_plugin(components::PROBE_LITE, "probe-lite.wasm");
        let db = Db::open(&host.config.database_url()).await.unwrap();
        let runtime = host.start().await.unwrap();
        let app = capstan::app::App::new(runtime, db.clone(), capstan::store::new_id());
        app.flush_component_events().await.unwrap();
        let key = capstan::http::keys::create(&db, "bench", &[EffectClass::Read], "bench").await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/api/v1", listener.local_addr().unwrap());
        tokio::spawn(capstan::http::serve(listener, app, Default::default(), std::future::pending()));

        let trivial = json!({});
        load(&base, &key, "test.probe", &trivial, 4).await; // warm-up
        for connections in [1, 16, 64] {
            load(&base, &key, "test.probe", &trivial, connections).await;
        }
        let release = json!({ "name": "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX.mkv" });
        load(&base, &key, "release.inspect", &release, 16).await;
    });
}
