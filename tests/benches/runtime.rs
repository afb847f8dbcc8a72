//! Runtime benchmark: prints figures, asserts nothing.
//!
//! - p50/p99 of one `release.inspect` call through the sandbox, the same
//!   parse natively in-process, and their ratio;
//! - a trivial call (instantiate + call + drop) of a component that does
//!   almost nothing, beside raw wasmtime doing the same in the same run: an
//!   `InstancePre` of the same pre-initialised component, an engine with
//!   the same configuration, a fresh store per call with WASI granting
//!   nothing, the call, the drop — and no Capstan code;
//! - calls per second with 1, 2 and 8 concurrent callers.
//!
//! Run with `cargo bench -p capstan-tests --bench runtime`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::Runtime;
use capstan::runtime::bindings::exports::capstan::capability::capability::GuestIndices;
use capstan::runtime::{Actor, EffectClass, Grant, Status};
use capstan_tests::components;
use capstan_tests::host::TestHost;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{ResourceTable, WasiCtx, WasiCtxView, WasiView};

const NAMES: &[&str] = &[
    "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX.mkv",
    "The.Last.of.Us.S01E03.1080p.WEB.H264-CAKES",
    "Breaking.Bad.S05E14.720p.BluRay.x264-DEMAND.mkv",
    "[SubsPlease] Frieren - 12 (1080p) [ABCD1234].mkv",
];

fn grant() -> Grant {
    Grant::new(Actor::Cli, EffectClass::Read)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn summary(label: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let p50 = percentile(&samples, 0.50);
    let p99 = percentile(&samples, 0.99);
    println!("{label:<44} n={:<6} p50={:>9.1} µs  p99={:>9.1} µs", samples.len(), us(p50), us(p99));
    p50
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

async fn sandboxed(runtime: &Runtime, id: &str, inputs: &[String], rounds: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let input = &inputs[i % inputs.len()];
        let started = Instant::now();
        let report = runtime.call(id, input, grant()).await.unwrap();
        samples.push(started.elapsed());
        assert_eq!(report.status(), Status::Succeeded, "{:?}", report.outcome);
    }
    samples
}

async fn throughput(runtime: &Arc<Runtime>, callers: usize, per_caller: usize, inputs: &[String]) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..callers {
        let runtime = runtime.clone();
        let inputs = inputs.to_vec();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_caller {
                let input = &inputs[(c + i) % inputs.len()];
                let report = runtime.call("release.inspect", input, grant()).await.unwrap();
                assert_eq!(report.status(), Status::Succeeded);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let total = callers * per_caller;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "release.inspect, {callers} concurrent caller(s){:<10} {:>9.0} calls/s ({total} calls in {secs:.2} s)",
        "",
        total as f64 / secs
    );
}

/// The engine configuration of this build (the file the host and its build
/// script use), so the raw figure runs the same compiled code.
#[path = "../../crates/runtime/src/engine_config.rs"]
#[allow(dead_code)]
mod engine_config;

struct RawState {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for RawState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// The trivial call with wasmtime alone: `snapshot` is the pre-initialised
/// component the host runs.
async fn raw_wasmtime(snapshot: &[u8], rounds: usize) -> Vec<Duration> {
    let engine = Engine::new(&engine_config::config(64 << 20)).unwrap();
    let component = Component::new(&engine, snapshot).unwrap();
    let mut linker: Linker<RawState> = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
    linker.define_unknown_imports_as_traps(&component).unwrap();
    let pre = linker.instantiate_pre(&component).unwrap();
    let exports = GuestIndices::new(&pre).unwrap();
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds + 200 {
        let started = Instant::now();
        let mut store = Store::new(&engine, RawState { wasi: WasiCtx::builder().build(), table: ResourceTable::new() });
        store.set_fuel(1_000_000_000).unwrap();
        store.set_epoch_deadline(1 << 40);
        let instance = pre.instantiate_async(&mut store).await.unwrap();
        let guest = exports.load(&mut store, &instance).unwrap();
        let result = guest.call_invoke(&mut store, "{}").await.unwrap();
        assert!(result.is_ok());
        drop(store);
        samples.push(started.elapsed());
    }
    // The first 200 warm the pool and the code up.
    samples.split_off(200)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let host = TestHost::new();
        host.drop_plugin(components::PROBE_LITE, "probe-lite.wasm");
        let runtime = host.start().await.unwrap();
        let inputs: Vec<String> = NAMES.iter().map(|n| serde_json::json!({ "name": n }).to_string()).collect();

        // Warm up: first calls fault in the pool's memory and the code.
        sandboxed(&runtime, "release.inspect", &inputs, 200).await;
        sandboxed(&runtime, "test.probe", &["{}".to_string()], 200).await;

        println!("== latency (one caller) ==");
        let trivial = summary(
            "trivial call (instantiate + call + drop)",
            sandboxed(&runtime, "test.probe", &["{}".to_string()], 5_000).await,
        );
        let digest = capstan::runtime::loader::digest(&std::fs::read(components::PROBE_LITE).unwrap());
        let snapshot =
            std::fs::read(capstan_tests::host::shared_cache().join("preinit").join(format!("{digest}.wasm")))
                .expect("the host keeps the pre-initialised probe in its cache");
        let raw = summary("the same with raw wasmtime (anchor)", raw_wasmtime(&snapshot, 5_000).await);
        println!(
            "trivial call / raw wasmtime p50 ratio: {:.2}x   (target ≤ 1.2x)",
            trivial.as_secs_f64() / raw.as_secs_f64()
        );
        let sandbox =
            summary("release.inspect in the sandbox", sandboxed(&runtime, "release.inspect", &inputs, 3_000).await);
        let mut native = Vec::with_capacity(3_000);
        for i in 0..3_000 {
            let name = NAMES[i % NAMES.len()];
            let started = Instant::now();
            let info = cap_release_inspect::parse::inspect(std::hint::black_box(name));
            let out = serde_json::to_string(&info).unwrap();
            std::hint::black_box(out);
            native.push(started.elapsed());
        }
        let native = summary("release.inspect parse natively (+ JSON)", native);
        println!("sandbox / native p50 ratio: {:.2}x   (target ≤ 3x)", sandbox.as_secs_f64() / native.as_secs_f64());
        println!("trivial call p50: {:.1} µs   (target ≤ 50 µs)", us(trivial));

        println!("== throughput ==");
        for callers in [1, 2, 8] {
            throughput(&runtime, callers, 2_000 / callers.min(4), &inputs).await;
        }
    });
}
