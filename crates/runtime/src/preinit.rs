//! Pre-initialisation: a component that exports `capstan-preinit` has it
//! run once at load time, and the memory that results is snapshotted into a
//! new component (wasmtime's wizer). Every call then starts from that
//! snapshot, so lazily built state (pattern tables, parsers) is not rebuilt
//! per call even though each call still gets a fresh instance. The snapshot
//! is cached on disk by the original component's digest.
//!
//! Pre-initialisation runs under a read grant, the describe limits and a
//! deadline that also bounds waits inside host imports, against host
//! services that offer nothing (no roots, no services, no store): it can
//! neither change nor wait on anything, and a failure refuses the component.

use std::path::Path;
use std::sync::Arc;

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use super::call_state::{CallState, CallTarget};
use super::effects::EffectClass;
use super::grant::{Actor, Grant};
use super::host::HostServices;
use super::invoke;
use super::preinit_run::{self, PREINIT_EXPORT, first_line};
use capstan_config::CallLimits;

/// Whether `component` asks to be pre-initialised.
pub fn wanted(component: &Component) -> bool {
    component.get_export_index(None, PREINIT_EXPORT).is_some()
}

/// Where the pre-initialised snapshot of the component with `digest` is
/// kept; a component whose snapshot is there loads without compiling twice.
pub(crate) fn cached_path(cache_dir: &Path, digest: &str) -> std::path::PathBuf {
    cache_dir.join("preinit").join(format!("{digest}.wasm"))
}

/// Returns the pre-initialised component bytes for `bytes` (digest
/// `digest`), from the cache when it has them.
pub async fn snapshot(
    engine: &Engine,
    linker: &Linker<CallState>,
    services: &Arc<HostServices>,
    bytes: &[u8],
    digest: &str,
    cache_dir: &Path,
    limits: CallLimits,
) -> Result<Vec<u8>, super::loader::LoadError> {
    use super::loader::LoadError;
    let cached = cached_path(cache_dir, digest);
    if let Ok(snap) = std::fs::read(&cached) {
        return Ok(snap);
    }
    let mut instrumented = preinit_run::instrument(bytes)?;
    let component = super::loader::compile(engine, std::mem::take(&mut instrumented.bytes))
        .await
        .map_err(|e| format!("cannot pre-initialise: {}", first_line(e)))?;
    let pre = linker.instantiate_pre(&component).map_err(|e| format!("cannot pre-initialise: {}", first_line(e)))?;
    let target = Arc::new(CallTarget { id: "<pre-initialising>".into(), services: Vec::new() });
    let grant = Grant::new(Actor::Cli, EffectClass::Read);
    let mut store = invoke::new_store(engine, grant, target, services.clone(), limits).map_err(first_line)?;
    // The epoch deadline stops guest code; this one also stops a wait
    // inside a host import, so a load can never hang the scan.
    let backstop = std::time::Duration::from_millis(limits.deadline_ms + 1_000);
    let snap =
        tokio::time::timeout(backstop, instrumented.run_and_snapshot(&pre, &mut store)).await.map_err(|_| {
            LoadError::OutOfTime(format!("{PREINIT_EXPORT} did not finish within {} ms", limits.deadline_ms))
        })??;
    // Cache atomically; a failure to cache only costs time on the next start.
    if std::fs::create_dir_all(cached.parent().unwrap_or(cache_dir)).is_ok() {
        let tmp = cached.with_extension("wasm.tmp");
        if std::fs::write(&tmp, &snap).is_ok() {
            let _ = std::fs::rename(&tmp, &cached);
        }
    }
    Ok(snap)
}
