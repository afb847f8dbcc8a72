//! Pre-initialises and compiles the built-in components at build time, with
//! the engine configuration the binary uses (the runtime's
//! `src/engine_config.rs`, included here), so a fresh data folder does not spend half a minute
//! compiling them at its first start. The binary uses this code only when
//! its engine has the same compatibility fingerprint, and compiles the
//! component itself otherwise.
//!
//! Pre-initialisation here runs against WASI with nothing granted and every
//! Capstan host import trapping: `capstan-preinit` must not call host
//! imports, and the host's own pre-initialisation grants nothing either.

use std::path::{Path, PathBuf};

use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{ResourceTable, WasiCtx, WasiCtxView, WasiView};

#[path = "../../runtime/src/engine_config.rs"]
mod engine_config;
#[path = "../../runtime/src/preinit_run.rs"]
mod preinit_run;

/// Any value: the pool's size does not change compiled code.
const MAX_MEMORY_BYTES: u64 = 256 << 20;
/// Pre-initialisation's instruction bound, as the host's describe limits.
const PREINIT_FUEL: u64 = 2_000_000_000;

struct BuildState {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for BuildState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// The engine the built-ins are compiled with.
pub struct Precompiler {
    engine: Engine,
    runtime: tokio::runtime::Runtime,
}

impl Precompiler {
    pub fn new() -> Precompiler {
        let engine = Engine::new(&engine_config::config(MAX_MEMORY_BYTES)).expect("cannot build the wasmtime engine");
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        Precompiler { engine, runtime }
    }

    /// The engine's compatibility fingerprint, which the binary compares
    /// with its own before using anything compiled here.
    pub fn compatibility(&self) -> u64 {
        engine_config::compatibility(&self.engine)
    }

    /// Pre-initialises the component at `wasm`, compiles the snapshot and
    /// writes the compiled code to `out`.
    pub fn precompile(&self, name: &str, wasm: &Path, out: &Path) -> PathBuf {
        let bytes = std::fs::read(wasm).unwrap_or_else(|e| panic!("cannot read {}: {e}", wasm.display()));
        let snapshot =
            self.snapshot(&bytes).unwrap_or_else(|e| panic!("built-in {name} cannot be pre-initialised: {e}"));
        let compiled = self
            .engine
            .precompile_component(&snapshot)
            .unwrap_or_else(|e| panic!("built-in {name} cannot be compiled: {e}"));
        let path = out.join(format!("{name}.cwasm"));
        std::fs::write(&path, compiled).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    fn snapshot(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let instrumented = preinit_run::instrument(bytes)?;
        let component = Component::new(&self.engine, &instrumented.bytes).map_err(preinit_run::first_line)?;
        let mut linker: Linker<BuildState> = Linker::new(&self.engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(preinit_run::first_line)?;
        linker.define_unknown_imports_as_traps(&component).map_err(preinit_run::first_line)?;
        let pre = linker.instantiate_pre(&component).map_err(preinit_run::first_line)?;
        let state = BuildState { wasi: WasiCtx::builder().build(), table: ResourceTable::new() };
        let mut store = Store::new(&self.engine, state);
        store.set_fuel(PREINIT_FUEL).map_err(preinit_run::first_line)?;
        // No ticker advances the epoch here; the fuel bounds the run.
        store.set_epoch_deadline(u64::MAX / 2);
        self.runtime.block_on(instrumented.run_and_snapshot(&pre, &mut store))
    }
}
