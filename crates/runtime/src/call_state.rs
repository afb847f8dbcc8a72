//! The data inside each call's `Store`: the grant, the capability being
//! called, the shared host services, a WASI context that grants nothing,
//! resource limits, and what the call did (effects started, denials).
//! Every host import goes through `host_call` before doing anything
//! (`runtime/host/boundary.rs`), on its family's view of this state
//! (`runtime/host/views.rs`).

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::effects::EffectClass;
use super::grant::{Denial, Grant};
use super::host::{CommandEnd, Hold, HostServices, LogTally, Recording, Setup};
use super::text::{MAX_DENIAL, clip, escape_controls};

/// Denials one call keeps (and logs); the rest are counted.
pub const MAX_DENIALS_KEPT: usize = 32;

/// Bytes of guest stdout/stderr kept per call; the rest is dropped.
const STDIO_CAPTURE_BYTES: usize = 64 * 1024;

/// Static facts about the capability a store is calling.
#[derive(Debug, Clone)]
pub(crate) struct CallTarget {
    pub id: String,
    pub services: Vec<String>,
}

/// The call's memory and table limits, remembering whether it refused a
/// memory growth: a call that traps after one ran over its memory cap, told
/// by this flag rather than by the trap's message.
pub(crate) struct CallLimiter {
    limits: StoreLimits,
    pub(crate) refused_memory: bool,
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let grown = self.limits.memory_growing(current, desired, maximum);
        if !matches!(grown, Ok(true)) {
            self.refused_memory = true;
        }
        grown
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.refused_memory = true;
        self.limits.memory_grow_failed(error)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// What every host import reaches, whatever its interface: who calls under
/// which grant, the setup the call started with, its deadline, and what the
/// call has done so far (effects entered, denials, the record). The
/// interface families see this and their own few parts (`host/views.rs`),
/// never the whole [`CallState`].
pub(crate) struct CallCore {
    pub(crate) grant: Grant,
    pub(crate) target: Arc<CallTarget>,
    /// The services, roots and settings as they were when the call began.
    pub(crate) setup: Arc<Setup>,
    /// When the call's wall-clock deadline passes; host work that can run
    /// long (hashing, copying, waiting for a command) stops there too.
    pub(crate) deadline: Instant,
    /// Effect imports entered whose effect may have happened: a trap, a
    /// timeout or an `unavailable` / `internal` answer after one leaves the
    /// outcome unknown.
    pub(crate) effects: u32,
    pub(crate) denials: Vec<Denial>,
    /// Denials past [`MAX_DENIALS_KEPT`], counted only.
    pub(crate) denials_dropped: u64,
    /// Every host import the call made, when its grant asks for a record.
    pub(crate) recording: Option<Recording>,
}

/// The data inside one call's `Store`.
pub struct CallState {
    pub(crate) core: CallCore,
    pub(crate) services: Arc<HostServices>,
    pub(crate) limits: CallLimiter,
    pub(crate) stdout: MemoryOutputPipe,
    pub(crate) stderr: MemoryOutputPipe,
    /// Records this call holds until its store is dropped.
    pub(crate) holds: Vec<Hold>,
    /// What the call logged, and how many lines it was not let log.
    pub(crate) log: LogTally,
    /// How the last command this call ran or waited for ended, which
    /// decides the call's status (`succeeded` only for exit code 0).
    pub(crate) command_end: Option<CommandEnd>,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl CallState {
    pub(crate) fn new(
        grant: Grant,
        target: Arc<CallTarget>,
        services: Arc<HostServices>,
        limits: StoreLimits,
        deadline: Instant,
    ) -> Self {
        let stdout = MemoryOutputPipe::new(STDIO_CAPTURE_BYTES);
        let stderr = MemoryOutputPipe::new(STDIO_CAPTURE_BYTES);
        // Nothing is inherited or preopened: no env, no args, no directories,
        // no network. Output goes to in-memory pipes the host logs afterwards.
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let setup = services.setup();
        let recording = grant.record.then(Recording::default);
        let core =
            CallCore { grant, target, setup, deadline, effects: 0, denials: Vec::new(), denials_dropped: 0, recording };
        CallState {
            core,
            services,
            limits: CallLimiter { limits, refused_memory: false },
            stdout,
            stderr,
            holds: Vec::new(),
            log: LogTally::default(),
            command_end: None,
            wasi,
            table: ResourceTable::new(),
        }
    }
}

impl CallCore {
    /// Records a denial that is not about the class (an undeclared service,
    /// a path out of a root).
    pub(crate) fn deny(&mut self, import: &str, needed: EffectClass, reason: String) {
        // A component looping on refused calls gets each refusal, but only
        // the first ones are logged and kept (each becomes an audit event).
        if self.denials.len() >= MAX_DENIALS_KEPT {
            self.denials_dropped += 1;
            return;
        }
        // Reasons quote what the component sent (a path, a name): bounded.
        let reason = clip(&escape_controls(&reason), MAX_DENIAL).into_owned();
        tracing::warn!(
            target: "capstan::denial",
            capability = %self.target.id,
            import,
            needed = %needed,
            granted = %self.grant.max_class,
            actor = ?self.grant.actor,
            run_id = self.grant.run_id.as_deref(),
            %reason,
            "host import denied"
        );
        self.denials.push(Denial { import: import.to_string(), needed, granted: self.grant.max_class, reason });
    }

    /// Marks that an effect is about to happen: from here on, a trap, a
    /// timeout or an error answer other than a refusal leaves the outcome
    /// unknown rather than failed.
    pub(crate) fn mark_effect(&mut self) {
        self.effects += 1;
    }

    /// Takes back the mark of the effect import that just ended in a
    /// definite refusal (the service answered 4xx, the store refused the
    /// change in its transaction): nothing happened through it.
    pub(crate) fn no_effect(&mut self) {
        self.effects = self.effects.saturating_sub(1);
    }

    /// Whether an effect may have happened in this call.
    pub(crate) fn effect_started(&self) -> bool {
        self.effects > 0
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}
