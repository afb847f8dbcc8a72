//! The audit of commands: each start and each cancel is written to the
//! audit log *before* the process is spawned or signalled, so a host that
//! dies while a command runs has still recorded it. The runtime knows the
//! log only as [`CommandRecorder`], handed in when the runtime is built
//! ([`HostStores`](crate::host::HostStores)); a runtime built without one
//! keeps the host log's line only. What is
//! recorded is the command's name and how many arguments it was given —
//! never an argument or environment value, which may be anything.

use futures_util::future::BoxFuture;

/// What a caller did with a command, as the audit log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandAct {
    Start,
    Cancel,
}

/// One start or cancel of a command.
#[derive(Debug, Clone)]
pub struct CommandRecord<'a> {
    pub act: CommandAct,
    /// `agent`, `subagent`, `task`, `api-key`, … as the grant says.
    pub actor_kind: &'a str,
    pub principal: &'a str,
    /// The capability whose component asked.
    pub capability: &'a str,
    /// The call's idempotency key, which names its ledger row.
    pub idempotency_key: Option<&'a str>,
    /// The configured command's name.
    pub command: &'a str,
    /// How many arguments the caller appended (values are never kept).
    pub arguments: usize,
    /// How many environment variables the caller set.
    pub env: usize,
    pub handle: &'a str,
}

/// Where command starts and cancels are recorded before they happen.
pub trait CommandRecorder: Send + Sync {
    /// Records `record` durably; an error keeps the act from happening.
    fn record<'a>(&'a self, record: CommandRecord<'a>) -> BoxFuture<'a, Result<(), String>>;
}
