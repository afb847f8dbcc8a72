//! The one wasmtime `Engine` and what keeps it honest: component model,
//! epoch interruption driven by a ticker thread (wall-clock deadlines), fuel
//! (instruction bounds), the pooling allocator sized from the configured
//! memory caps, and an on-disk compilation cache keyed by the component's
//! contents so restarts do not recompile. The settings themselves are in
//! `engine_config`, shared with the build script.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::{Cache, CacheConfig, Engine};

/// How often the epoch advances: the granularity of deadlines and of guest
/// yields to the executor.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Builds the engine. `max_memory_bytes` is the largest memory cap any
/// capability may get; `cache_dir` holds compiled components.
pub fn build(max_memory_bytes: u64, cache_dir: &Path) -> anyhow::Result<Engine> {
    let mut config = super::engine_config::config(max_memory_bytes);
    std::fs::create_dir_all(cache_dir)?;
    let mut cache = CacheConfig::new();
    cache.with_directory(cache_dir);
    config.cache(Some(Cache::new(cache)?));
    Ok(Engine::new(&config)?)
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
pub(crate) struct EpochTicker {
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
