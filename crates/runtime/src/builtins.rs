//! The capabilities compiled into the binary, as the runtime takes them —
//! each component with its pre-initialised snapshot compiled ahead — and
//! the core set the host refuses to start without. They are built by the
//! `capstan-builtins` crate (its build script), which the runtime does not
//! depend on: the composition root hands them over, so building them runs
//! beside compiling the runtime. This is the one place the core set is
//! defined.

/// One built-in component: its crate name, its component bytes, and its
/// pre-initialised snapshot compiled for [`BuiltIns::precompiled_for`]
/// (empty when nothing was compiled ahead).
pub type BuiltIn = (&'static str, &'static [u8], &'static [u8]);

/// The built-in capabilities a runtime loads.
#[derive(Debug)]
pub struct BuiltIns {
    /// The compatibility fingerprint of the engine the snapshots were
    /// compiled with (none: a build for another machine compiled nothing).
    pub precompiled_for: Option<u64>,
    pub components: &'static [BuiltIn],
}

impl BuiltIns {
    /// No built-ins: a runtime with these refuses to start, the core set
    /// being missing.
    pub const NONE: BuiltIns = BuiltIns { precompiled_for: None, components: &[] };

    /// Whether `engine` can run the code compiled ahead for them: its
    /// compatibility fingerprint is the one they were compiled for.
    pub(crate) fn precompiled_fits(&self, engine: &wasmtime::Engine) -> bool {
        self.precompiled_for == Some(super::engine_config::compatibility(engine))
    }
}

/// Capability ids that must be present, exactly once, for the host to start.
pub const CORE_CAPABILITIES: &[&str] = &[
    "catalog.lookup",
    "download.plan",
    "download.recheck",
    "download.replace",
    "download.status",
    "download.submit",
    "identity.resolve",
    "inventory.query",
    "library.want",
    "mediaserver.refresh",
    "notify.discord",
    "notify.ntfy",
    "notify.telegram",
    "notify.webhook",
    "organize.execute",
    "organize.plan",
    "organize.replace",
    "policy.apply",
    "policy.preview",
    "release.inspect",
    "release.search",
    "task.cancel",
    "task.inspect",
    "task.retry",
];
