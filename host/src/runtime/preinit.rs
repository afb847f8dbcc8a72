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

use wasmtime::component::{Component, Instance, Linker, WasmList};
use wasmtime::{Engine, Store};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use super::call_state::{CallState, CallTarget};
use super::effects::EffectClass;
use super::grant::{Actor, Grant};
use super::host::HostServices;
use super::invoke;
use crate::config::CallLimits;

/// The optional export that asks for pre-initialisation.
pub const PREINIT_EXPORT: &str = "capstan-preinit";

/// Whether `component` asks to be pre-initialised.
pub fn wanted(component: &Component) -> bool {
    component.get_export_index(None, PREINIT_EXPORT).is_some()
}

/// Reads state out of the instrumented instance for the snapshot. The
/// trait's methods cannot fail, so the first error is kept and checked after.
struct Access<'a> {
    store: &'a mut Store<CallState>,
    instance: Instance,
    error: Option<String>,
}

impl Access<'_> {
    async fn call<R>(&mut self, interface: &str, func: &str) -> Option<R>
    where
        R: wasmtime::component::Lift + Send + Sync + 'static,
    {
        let result = async {
            let parent = self
                .instance
                .get_export_index(&mut *self.store, None, interface)
                .ok_or_else(|| format!("instrumented component lacks {interface}"))?;
            let index = self
                .instance
                .get_export_index(&mut *self.store, Some(&parent), func)
                .ok_or_else(|| format!("instrumented component lacks {interface}#{func}"))?;
            let typed = self
                .instance
                .get_typed_func::<(), (R,)>(&mut *self.store, index)
                .map_err(|e| format!("{interface}#{func}: {e}"))?;
            let (value,) =
                typed.call_async(&mut *self.store, ()).await.map_err(|e| format!("{interface}#{func}: {e}"))?;
            Ok::<R, String>(value)
        }
        .await;
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }
}

impl ComponentInstanceState for Access<'_> {
    async fn call_func_ret_list_u8(&mut self, instance: &str, func: &str, contents: impl FnOnce(&[u8]) + Send) {
        match self.call::<WasmList<u8>>(instance, func).await {
            Some(list) => contents(list.as_le_slice(&*self.store)),
            None => contents(&[]),
        }
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call::<i32>(instance, func).await.unwrap_or(0)
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call::<i64>(instance, func).await.unwrap_or(0)
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call::<f32>(instance, func).await.map_or(0, f32::to_bits)
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call::<f64>(instance, func).await.map_or(0, f64::to_bits)
    }
}

fn first_line(e: impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or("").to_string()
}

/// Where the pre-initialised snapshot of the component with `digest` is
/// kept; a component whose snapshot is there loads without compiling twice.
pub fn cached_path(cache_dir: &Path, digest: &str) -> std::path::PathBuf {
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
) -> Result<Vec<u8>, String> {
    let cached = cached_path(cache_dir, digest);
    if let Ok(snap) = std::fs::read(&cached) {
        return Ok(snap);
    }
    let mut wizer = Wizer::new();
    // Keep the export: removing it leaves the component's lifted function
    // pointing at a core export that no longer exists. The host never calls
    // it again, so keeping it costs nothing.
    wizer.init_func(PREINIT_EXPORT).keep_init_func(true);
    let (cx, instrumented) =
        wizer.instrument_component(bytes).map_err(|e| format!("cannot pre-initialise: {}", first_line(e)))?;
    let component = super::loader::compile(engine, instrumented)
        .await
        .map_err(|e| format!("cannot pre-initialise: {}", first_line(e)))?;
    let pre = linker.instantiate_pre(&component).map_err(|e| format!("cannot pre-initialise: {}", first_line(e)))?;
    let target = Arc::new(CallTarget { id: "<pre-initialising>".into(), services: Vec::new() });
    let grant = Grant::new(Actor::Cli, EffectClass::Read);
    let mut store = invoke::new_store(engine, grant, target, services.clone(), limits).map_err(first_line)?;
    // The epoch deadline stops guest code; this one also stops a wait
    // inside a host import, so a load can never hang the scan.
    let backstop = std::time::Duration::from_millis(limits.deadline_ms + 1_000);
    let run = async {
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| format!("pre-initialisation failed: {}", first_line(e)))?;
        let init = instance
            .get_typed_func::<(), ()>(&mut store, PREINIT_EXPORT)
            .map_err(|e| format!("{PREINIT_EXPORT} has the wrong type: {}", first_line(e)))?;
        init.call_async(&mut store, ()).await.map_err(|e| format!("{PREINIT_EXPORT} trapped: {}", first_line(e)))?;
        let mut access = Access { store: &mut store, instance, error: None };
        let snap = wizer
            .snapshot_component(&cx, &mut access)
            .await
            .map_err(|e| format!("cannot snapshot the pre-initialised state: {}", first_line(e)))?;
        if let Some(e) = access.error {
            return Err(format!("cannot snapshot the pre-initialised state: {e}"));
        }
        Ok(snap)
    };
    let snap = tokio::time::timeout(backstop, run)
        .await
        .map_err(|_| format!("{PREINIT_EXPORT} did not finish within {} ms", limits.deadline_ms))??;
    // Cache atomically; a failure to cache only costs time on the next start.
    if std::fs::create_dir_all(cached.parent().unwrap_or(cache_dir)).is_ok() {
        let tmp = cached.with_extension("wasm.tmp");
        if std::fs::write(&tmp, &snap).is_ok() {
            let _ = std::fs::rename(&tmp, &cached);
        }
    }
    Ok(snap)
}
