//! The sandboxed component runtime: one engine, the linker with the WASI
//! context and every `capstan:host` interface, the registry of loaded
//! capabilities (built-ins plus the watched directory), and the per-call
//! path that runs a capability under a grant with limits. Owns nothing
//! durable except the capability state file; ledgers, authorisation and
//! audit sit above it and call [`Runtime::call`].

pub mod bindings;
pub mod builtins;
pub(crate) mod call_state;
pub mod catalog;
mod compiling;
pub mod descriptor;
pub mod effects;
mod engine;
mod engine_config;
pub mod external;
pub mod grant;
pub mod host;
pub mod input_validator;
mod invoke;
pub mod loader;
pub mod plugins;
mod preinit;
mod preinit_run;
pub mod registry;
mod scan;
pub mod schema_caps;
mod state;
pub mod text;
pub mod watcher;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use wasmtime::Engine;
use wasmtime::component::Linker;

pub use call_state::{CallState, MAX_DENIALS_KEPT};
pub use catalog::{Catalog, CatalogPlugin};
pub use compiling::Compiling;
pub use descriptor::{Descriptor, Replay};
pub use effects::EffectClass;
pub use external::{ExternalAnswer, ExternalSet, ExternalTool};
pub use grant::{Actor, Denial, Grant, Mode, StopSignal};
pub use host::{HOLD_LEASE, HostCall, HostStores, run_owner, task_owner};
pub use input_validator::InputValidator;
pub use invoke::{CallOutcome, CallReport, Failure, Status, TrapKind, VerifyOutcome};
pub use loader::{LoadError, Loaded, Source};
pub use registry::{Held, Refusal, Snapshot};
pub use scan::{ComponentEvent, ScanReport};

use capstan_config::Config;

/// A call could not even start: no capability with this id is loaded.
#[derive(Debug, thiserror::Error)]
#[error("no capability with id {0} is loaded")]
pub struct NotLoaded(pub String);

/// The runtime. Cheap to share behind an `Arc`.
pub struct Runtime {
    engine: Engine,
    linker: Linker<CallState>,
    services: Arc<host::HostServices>,
    /// What `describe` and pre-initialisation see while a component loads:
    /// nothing (see [`host::HostServices::isolated`]).
    loading: Arc<host::HostServices>,
    config: Arc<Config>,
    /// The built-in capabilities, as the composition root handed them.
    builtins: &'static builtins::BuiltIns,
    /// Whether the built-ins load from the code compiled with the binary:
    /// the engine fits it and the operator did not ask to compile them.
    builtins_precompiled: bool,
    registry: registry::Registry,
    /// Loaded components by digest, so unchanged files are not reloaded.
    loads: Mutex<HashMap<String, Arc<Loaded>>>,
    /// Why bytes were refused, by digest, so they are not compiled again.
    refusals: Mutex<HashMap<String, LoadError>>,
    /// Serialises rescans; the registry swap itself is atomic.
    scan_lock: tokio::sync::Mutex<()>,
    /// Held while a plugin is installed or removed through the API.
    plugin_changes: tokio::sync::Mutex<()>,
    /// Component changes waiting for the audit log.
    component_events: Mutex<Vec<scan::ComponentEvent>>,
    component_events_ready: tokio::sync::Notify,
    /// Rescans done since start; an idle host does none.
    rescans: std::sync::atomic::AtomicU64,
    /// Components compiling in the background.
    compiles: compiling::Compiles,
    /// The tools external servers offer, by server, as last told.
    externals: Mutex<std::collections::BTreeMap<String, external::ExternalSet>>,
    /// The cluster's plugins and their record, on PostgreSQL ([`catalog`]).
    cluster: Option<catalog::Cluster>,
    _ticker: engine::EpochTicker,
}

impl Runtime {
    /// Builds the runtime without loading anything, and without the stores
    /// the domain and command imports reach ([`Runtime::new_with`]).
    pub fn new(config: Config, builtins: &'static builtins::BuiltIns) -> anyhow::Result<Runtime> {
        Runtime::new_with(config, None, None, builtins)
    }

    /// Builds the runtime over `stores` without loading anything; it will
    /// load `builtins` as its built-in capabilities, and its plugins from
    /// `catalog` when it has one (PostgreSQL), else from its folder.
    pub(crate) fn new_with(
        mut config: Config,
        stores: Option<host::HostStores>,
        catalog: Option<Arc<dyn catalog::Catalog>>,
        builtins: &'static builtins::BuiltIns,
    ) -> anyhow::Result<Runtime> {
        // Callers that did not go through the command line get the same
        // resolution: wasmtime's cache, among others, wants absolute paths.
        config.resolve_paths(&std::env::current_dir()?);
        config.check_root_overlaps()?;
        let engine = engine::build(config.max_memory_bytes(), &config.cache_dir())?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        host::add_to_linker(&mut linker)?;
        let cluster = match catalog {
            Some(catalog) => Some(catalog::Cluster::new(catalog, &config.data_dir())?),
            None => None,
        };
        let services = Arc::new(host::HostServices::from_config(&config, stores)?);
        let ticker = engine::EpochTicker::start(&engine);
        let builtins_precompiled = !config.compile_builtins && builtins.precompiled_fits(&engine);
        Ok(Runtime {
            builtins,
            builtins_precompiled,
            engine,
            linker,
            services,
            loading: Arc::new(host::HostServices::isolated()),
            config: Arc::new(config),
            registry: registry::Registry::default(),
            loads: Mutex::new(HashMap::new()),
            refusals: Mutex::new(HashMap::new()),
            scan_lock: tokio::sync::Mutex::new(()),
            plugin_changes: tokio::sync::Mutex::new(()),
            component_events: Mutex::new(Vec::new()),
            component_events_ready: tokio::sync::Notify::new(),
            rescans: std::sync::atomic::AtomicU64::new(0),
            compiles: compiling::Compiles::default(),
            externals: Mutex::new(std::collections::BTreeMap::new()),
            cluster,
            _ticker: ticker,
        })
    }

    /// Builds the runtime and loads the built-ins and the directory,
    /// refusing to start when a core capability is missing or duplicated;
    /// the domain and command imports have no stores to reach (the sandbox
    /// alone, as its tests and the command line's checks use it).
    pub async fn start(config: Config, builtins: &'static builtins::BuiltIns) -> anyhow::Result<Arc<Runtime>> {
        Runtime::start_with(config, None, None, builtins).await
    }

    /// [`Runtime::start`] over `stores` and `catalog`: what a host process
    /// runs.
    pub async fn start_with(
        config: Config,
        stores: Option<host::HostStores>,
        catalog: Option<Arc<dyn catalog::Catalog>>,
        builtins: &'static builtins::BuiltIns,
    ) -> anyhow::Result<Arc<Runtime>> {
        let runtime = Arc::new(Runtime::new_with(config, stores, catalog, builtins)?);
        std::fs::create_dir_all(runtime.config.data_dir())?;
        std::fs::create_dir_all(runtime.config.capabilities_dir())?;
        runtime.rescan(true).await?;
        Ok(runtime)
    }

    /// A runtime for looking only (`capstan capabilities list`): a plugin
    /// file whose code is not known yet is compiled in the background and
    /// listed as compiling, and nothing is recorded in the data directory,
    /// which a server may be using (its rescans keep its state).
    pub async fn start_listing(
        config: Config,
        catalog: Option<Arc<dyn catalog::Catalog>>,
        builtins: &'static builtins::BuiltIns,
    ) -> anyhow::Result<Arc<Runtime>> {
        let runtime = Arc::new(Runtime::new_with(config, None, catalog, builtins)?);
        runtime.rescan_with(true, Some(runtime.clone()), false).await?;
        Ok(runtime)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Puts another set of outbound services, file roots and capabilities'
    /// settings in place (the file configuration merged with the
    /// console's); calls that start from now on use it, calls in flight
    /// finish with theirs. Nothing changes when it is refused.
    pub fn reconfigure(
        &self,
        services: &std::collections::BTreeMap<String, capstan_config::ServiceConfig>,
        roots: &std::collections::BTreeMap<String, PathBuf>,
        settings: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    ) -> anyhow::Result<()> {
        for (name, service) in services {
            service.validate(name).map_err(anyhow::Error::msg)?;
        }
        let mut check = (*self.config).clone();
        check.roots = roots.clone();
        check.check_root_overlaps()?;
        let roots = self.services.roots_with_output(roots)?;
        self.services.replace_setup(host::Setup::build(services, &roots, settings)?);
        Ok(())
    }

    /// For a component that imports `commands`: the refusal a command its
    /// input names would meet (`not-found`, `invalid-input`, with why),
    /// checked before the call is claimed so it leaves no receipt.
    pub fn command_refusal(&self, loaded: &Loaded, input: &serde_json::Value) -> Option<(&'static str, String)> {
        let commands = effects::interface::COMMANDS;
        if !loaded.imports.imports.iter().any(|i| i.split('@').next() == Some(commands)) {
            return None;
        }
        let request = host::commands_request_in(input)?;
        self.services.commands.precheck(&request, &self.services.setup().root_paths)
    }

    /// Removes the archives of command output older than `age`, the
    /// files here and what the shared store keeps; returns how many went.
    pub async fn prune_command_output(&self, age: std::time::Duration) -> usize {
        let files = self.services.commands.prune_archives(age);
        let shared = self.services.commands.prune_shared(age).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot remove old command output from the database");
            0
        });
        files + shared
    }

    /// A page of the output of `owner`'s command `id` (handle or archive
    /// name) and the bytes archived; `None` when `owner` has no such one.
    pub async fn command_output(
        &self,
        owner: &str,
        id: &str,
        offset: u64,
        limit: usize,
    ) -> Option<Result<(Vec<u8>, u64), String>> {
        match self.services.commands.output_of(owner, id, offset, limit).await {
            Err(bindings::capstan::host::types::HostError::NotFound(_)) => None,
            read => Some(read.map_err(|e| e.to_string())),
        }
    }

    /// Stops the commands `owner` started that still run (its run or task
    /// ended); returns how many were told to stop.
    pub fn stop_commands_of(&self, owner: &str) -> usize {
        self.services.commands.stop_owned(owner)
    }

    /// Whether the operator set up the outbound service `name` (in
    /// `capstan.toml` or the console).
    pub fn has_service(&self, name: &str) -> bool {
        self.services.setup().outbound.has(name)
    }

    /// Capability `id`'s setting `name` as it is now (`capstan.toml`'s or
    /// the console's).
    pub fn setting(&self, id: &str, name: &str) -> Option<String> {
        self.services.setup().settings.get(id).and_then(|s| s.get(name)).cloned()
    }

    /// Where each file root is now.
    pub fn root_paths(&self) -> std::collections::BTreeMap<String, PathBuf> {
        self.services.setup().root_paths.clone()
    }

    /// How many times the registry was rebuilt since start.
    pub fn rescan_count(&self) -> u64 {
        self.rescans.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The current registry snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.registry.snapshot()
    }

    /// Loads one component without registering it (`capabilities check`).
    pub async fn check(&self, bytes: &[u8], file: PathBuf) -> Result<Loaded, LoadError> {
        loader::load(
            &self.engine,
            &self.linker,
            &self.loading,
            bytes,
            Source::Directory(file),
            &self.config.cache_dir(),
        )
        .await
    }

    /// Calls capability `id` with JSON `input` under `grant`.
    pub async fn call(&self, id: &str, input: &str, grant: Grant) -> Result<CallReport, NotLoaded> {
        let loaded = self.snapshot().get(id).ok_or_else(|| NotLoaded(id.to_string()))?;
        let limits = self.config.limits_for(id);
        Ok(match &loaded.code {
            loader::Code::Component(code) => {
                invoke::call(&self.engine, &loaded, code, self.services.clone(), grant, limits, input).await
            }
            loader::Code::External(tool) => external::call(&loaded, tool.as_ref(), grant, limits, input).await,
        })
    }

    /// Calls component `id` as [`Runtime::call`] does, but with `services`
    /// and `settings` as its whole setup — no roots, no store, no commands:
    /// the console's Test of a notification target with the form's values,
    /// saved or not. Nothing of the running setup is reached.
    pub async fn call_trial(
        &self,
        id: &str,
        input: &str,
        grant: Grant,
        services: &std::collections::BTreeMap<String, capstan_config::ServiceConfig>,
        settings: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    ) -> Result<CallReport, String> {
        let loaded = self.snapshot().get(id).ok_or_else(|| format!("capability {id} is not loaded"))?;
        let loader::Code::Component(code) = &loaded.code else {
            return Err(format!("{id} is a tool of an external server, which is not tried here"));
        };
        let setup = host::Setup::build(services, &std::collections::BTreeMap::new(), settings)
            .map_err(|e| format!("the service cannot be built: {e}"))?;
        let services = Arc::new(host::HostServices::trial(setup));
        let limits = self.config.limits_for(id);
        Ok(invoke::call(&self.engine, &loaded, code, services, grant, limits, input).await)
    }

    /// Asks capability `id` whether `invoke(input)` took effect, under a
    /// read grant derived from `grant`.
    pub async fn verify(&self, id: &str, input: &str, grant: Grant) -> Result<VerifyOutcome, NotLoaded> {
        let loaded = self.snapshot().get(id).ok_or_else(|| NotLoaded(id.to_string()))?;
        let limits = self.config.limits_for(id);
        Ok(match &loaded.code {
            loader::Code::Component(code) => {
                invoke::verify(&self.engine, &loaded, code, self.services.clone(), grant, limits, input).await
            }
            loader::Code::External(_) => VerifyOutcome::CannotTell {
                reason: format!("{id} is a tool of an external server, which cannot be asked"),
            },
        })
    }
}
