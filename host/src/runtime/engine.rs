//! The one wasmtime `Engine` and what keeps it honest: component model,
//! epoch interruption driven by a ticker thread (wall-clock deadlines), fuel
//! (instruction bounds), the pooling allocator sized from the configured
//! memory caps, and an on-disk compilation cache keyed by the component's
//! contents so restarts do not recompile.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::{Cache, CacheConfig, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances: the granularity of deadlines and of guest
/// yields to the executor.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Concurrent calls the instance pool is sized for.
const POOL_INSTANCES: u32 = 128;

/// Linear memory a warm pool slot keeps resident between calls.
const KEEP_RESIDENT_BYTES: usize = 64 << 20;

/// Builds the engine. `max_memory_bytes` is the largest memory cap any
/// capability may get; `cache_dir` holds compiled components.
pub fn build(max_memory_bytes: u64, cache_dir: &Path) -> anyhow::Result<Engine> {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.consume_fuel(true);
    // Map each component's initial memory (its data segments, or its
    // pre-initialised snapshot) copy-on-write into the pool slot. With the
    // page-map scan below, a slot reused for the same component keeps the
    // pages a call only read, and only the pages it wrote are copied back
    // from the image, so a call neither copies the whole image nor faults
    // its way through it (see docs/benchmarks.md).
    config.memory_init_cow(true);

    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(POOL_INSTANCES)
        .total_core_instances(POOL_INSTANCES * 8)
        .total_memories(POOL_INSTANCES * 2)
        .total_tables(POOL_INSTANCES * 4)
        .total_stacks(POOL_INSTANCES)
        .max_core_instances_per_component(32)
        .max_memories_per_component(4)
        .max_tables_per_component(8)
        .max_memory_size(max_memory_bytes as usize)
        // Keep a slot's pages resident between calls and reset only the
        // dirty ones from the component's (pre-initialised) image, found by
        // scanning the page map; otherwise every call page-faults its way
        // back through the snapshot.
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(1 << 20)
        .async_stack_keep_resident(2 << 20)
        .pagemap_scan(Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));

    std::fs::create_dir_all(cache_dir)?;
    let mut cache = CacheConfig::new();
    cache.with_directory(cache_dir);
    config.cache(Some(Cache::new(cache)?));

    Ok(Engine::new(&config)?)
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    pub fn start(engine: &Engine) -> EpochTicker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let engine = engine.clone();
        std::thread::Builder::new()
            .name("capstan-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .expect("cannot start the epoch ticker thread");
        EpochTicker { stop }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
