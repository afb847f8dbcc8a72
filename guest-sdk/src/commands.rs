//! The operator's commands, through `capstan:host/commands` (execute: run,
//! start, cancel) and `commands-read` (read: status, read-output, wait),
//! and the structured result a capability answers with. The host builds
//! the command line, runs the process, keeps its output and decides the
//! call's status from how it ended: a success only when it exited by
//! itself with code 0.

use serde::Serialize;

use crate::host::{HostError, commands_backend as backend};

/// A program to run, by the name the operator gave it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandRequest {
    pub name: String,
    /// Arguments after the configured ones.
    pub args: Vec<String>,
    /// Environment variables the operator lets callers set.
    pub env: Vec<(String, String)>,
    /// A folder below the command's working folder ("" for that folder).
    pub cwd: String,
    /// Seconds before it is stopped; 0 for the command's default.
    pub timeout_sec: u32,
}

/// How a process ended, or that it has not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionOutcome {
    Running,
    Exited,
    KilledAfterTimeout,
    Cancelled,
    Unknown,
}

/// A process as the host reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandStatus {
    pub handle: String,
    pub name: String,
    pub outcome: ExecutionOutcome,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    pub output_bytes: u64,
    pub output_truncated: bool,
    pub output_head: String,
    pub output_tail: String,
    /// Relative to the `command-output` file root.
    pub output_file: String,
}

/// Runs a command and waits for it to end (execute class).
pub fn run(request: &CommandRequest) -> Result<CommandStatus, HostError> {
    backend::run(request)
}

/// Starts a command and answers at once with its handle (execute class).
pub fn start(request: &CommandRequest) -> Result<CommandStatus, HostError> {
    backend::start(request)
}

/// Stops a process this caller started (execute class).
pub fn cancel(handle: &str) -> Result<CommandStatus, HostError> {
    backend::cancel(handle)
}

/// How a process stands (read class).
pub fn status(handle: &str) -> Result<CommandStatus, HostError> {
    backend::status(handle)
}

/// Up to `limit` bytes of its output from `offset` (read class).
pub fn read_output(handle: &str, offset: u64, limit: u32) -> Result<Vec<u8>, HostError> {
    backend::read_output(handle, offset, limit)
}

/// Waits up to `timeout_ms` for it to end (read class).
pub fn wait(handle: &str, timeout_ms: u32) -> Result<CommandStatus, HostError> {
    backend::wait(handle, timeout_ms)
}

/// The result a capability answers with: what the process did, in the
/// words of its status, a preview of its output and where the rest is.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CommandResult {
    /// The process's handle, for status, read, wait and cancel.
    pub handle: String,
    pub command: String,
    /// `running`, `succeeded` (exited by itself with code 0), `failed` or
    /// `unknown` (its end cannot be confirmed).
    pub status: String,
    /// `running`, `exited`, `killed_after_timeout`, `cancelled`, `unknown`.
    pub execution_outcome: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The start and end of what it wrote (stdout and stderr together).
    pub output: String,
    pub output_bytes: u64,
    /// Whether the archive stopped keeping output at its limit.
    pub output_truncated: bool,
    /// The whole output, under the `command-output` file root.
    pub output_file: String,
    /// What stopping it means, when it was stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl From<&CommandStatus> for CommandResult {
    fn from(s: &CommandStatus) -> CommandResult {
        let (status, note) = match (s.outcome, s.exit_code) {
            (ExecutionOutcome::Running, _) => ("running", None),
            (ExecutionOutcome::Exited, Some(0)) => ("succeeded", None),
            (ExecutionOutcome::Exited, _) => ("failed", None),
            (ExecutionOutcome::KilledAfterTimeout | ExecutionOutcome::Cancelled, _) => {
                ("failed", Some("stopping the process does not undo what it already did"))
            }
            (ExecutionOutcome::Unknown, _) => ("unknown", Some("the process did not stop when told; it may still run")),
        };
        let shown = s.output_head.len() as u64 + s.output_tail.len() as u64;
        let output = if s.output_tail.is_empty() {
            s.output_head.clone()
        } else if shown < s.output_bytes {
            format!("{}\n[… {} bytes not shown …]\n{}", s.output_head, s.output_bytes - shown, s.output_tail)
        } else {
            format!("{}{}", s.output_head, s.output_tail)
        };
        let outcome = serde_json::to_value(s.outcome).ok().and_then(|v| v.as_str().map(str::to_string));
        CommandResult {
            handle: s.handle.clone(),
            command: s.name.clone(),
            status: status.into(),
            execution_outcome: outcome.unwrap_or_default(),
            exit_code: s.exit_code,
            timed_out: s.timed_out,
            duration_ms: s.duration_ms,
            output,
            output_bytes: s.output_bytes,
            output_truncated: s.output_truncated,
            output_file: s.output_file.clone(),
            note: note.map(str::to_string),
        }
    }
}
