//! The capabilities compiled into the binary — each component with its
//! pre-initialised snapshot compiled ahead by the build script
//! (`crates/runtime/build/precompile.rs`) — and the core set the host refuses to start
//! without. This is the one place the core set is defined.

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// Whether `engine` can run the code the build compiled for the built-ins:
/// its compatibility fingerprint is the one they were compiled for.
pub(crate) fn precompiled_fits(engine: &wasmtime::Engine) -> bool {
    PRECOMPILED_FOR == Some(super::engine_config::compatibility(engine))
}

/// Capability ids that must be present, exactly once, for the host to start.
pub const CORE_CAPABILITIES: &[&str] = &[
    "catalog.lookup",
    "download.plan",
    "download.recheck",
    "download.status",
    "download.submit",
    "identity.resolve",
    "inventory.query",
    "library.want",
    "organize.execute",
    "organize.plan",
    "policy.apply",
    "policy.preview",
    "release.inspect",
    "release.search",
    "task.cancel",
    "task.inspect",
    "task.retry",
];
