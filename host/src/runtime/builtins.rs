//! The capabilities compiled into the binary, and the core set the host
//! refuses to start without. This is the one place the core set is defined.

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

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
