//! `capstan:host/commands` (execute: run, start, cancel) and
//! `capstan:host/commands-read` (read: status, read-output, wait): the
//! programs the operator named under `[commands.<name>]`, run for a
//! caller. The host owns the processes, not the component: a handle is
//! valid for the run, task or principal that started it ([`owner_of`]),
//! a process is stopped when its owner ends ([`CommandHost::stop_owned`])
//! or its time runs out, and it is reaped a while after it ended; what a
//! host that died left running is stopped when the next one starts
//! ([`orphans`]). Its
//! output is archived under the data folder's `command-output`, which is
//! also a file root of that name; through it a caller sees only the
//! archives of its own processes ([`CommandHost::hides`]). A process starts
//! in a session of its own with no descriptor of the host's above stderr
//! ([`child`]), and stopping it stops every process it started, wherever
//! it went ([`family`]). What a caller asks is checked against
//! the configuration before anything runs ([`prepare`]); no argument or
//! environment value is ever logged.

mod archive;
mod child;
mod family;
mod orphans;
mod prepare;
mod process;
mod read;
mod record;
mod run;
mod shared;

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use process::CommandOutcome;
pub use record::{CommandAct, CommandRecord, CommandRecorder};
pub use shared::{OutputOpened, OutputState, OutputStore, SHARED_LIMIT, STALE_AFTER, StoredOutput};

use crate::bindings::capstan::host::types::{CommandRequest, CommandStatus, ExecutionOutcome, HostError, Pair};
use crate::grant::Grant;
use capstan_config::{CommandConfig, Config};
use process::Process;

/// The name of the file root that holds command output.
pub const OUTPUT_ROOT: &str = "command-output";

/// How long an ended process's handle stays valid.
const REAP_AFTER: Duration = Duration::from_secs(15 * 60);

/// The most bytes one `read-output` answers.
const MAX_READ: u32 = 1 << 20;

/// How a process a call ran or waited for ended, which decides the call's
/// status: `succeeded` only for an exit of its own with code 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandEnd {
    pub outcome: CommandOutcome,
    pub exit_code: Option<i32>,
}

impl CommandEnd {
    /// The status of a call that answered after it: a success only when
    /// the process exited by itself with code 0, `unknown` when its end
    /// cannot be confirmed.
    pub fn status(&self) -> crate::Status {
        use crate::Status;
        match (self.outcome, self.exit_code) {
            (CommandOutcome::Exited, Some(0)) => Status::Succeeded,
            (CommandOutcome::Unknown, _) => Status::Unknown,
            _ => Status::Failed,
        }
    }

    /// Why it is not a success, in words; `None` when it is.
    pub fn failure(&self) -> Option<String> {
        match (self.outcome, self.exit_code) {
            (CommandOutcome::Exited, Some(0)) => None,
            (CommandOutcome::Exited, Some(code)) => Some(format!("the command exited with code {code}")),
            (CommandOutcome::Exited, None) => Some("the command was ended by a signal".into()),
            (CommandOutcome::KilledAfterTimeout, _) => {
                Some("the command ran out of time and was stopped; what it did before stays done".into())
            }
            (CommandOutcome::Cancelled, _) => Some("the command was cancelled; what it did before stays done".into()),
            (CommandOutcome::Unknown, _) => {
                Some("the command's end cannot be confirmed: it did not stop when told".into())
            }
        }
    }
}

/// Who a process belongs to: the run of an agent (and its subagents), the
/// task, or else the principal.
pub fn owner_of(grant: &Grant) -> String {
    match (&grant.run_id, &grant.task_id) {
        (Some(run), _) => run_owner(run),
        (None, Some(task)) => task_owner(task),
        (None, None) => format!("principal:{}", grant.principal),
    }
}

/// The owner name of run `run_id`'s processes.
pub fn run_owner(run_id: &str) -> String {
    format!("run:{run_id}")
}

/// The owner name of task `task_id`'s processes.
pub fn task_owner(task_id: &str) -> String {
    format!("task:{task_id}")
}

/// The commands of one host and the processes running for its callers.
#[derive(Default)]
pub struct CommandHost {
    commands: BTreeMap<String, CommandConfig>,
    /// `<data>/command-output`: the archives.
    output_dir: PathBuf,
    /// `<data>/command-work`: where a command without a `cwd` runs.
    work_dir: PathBuf,
    /// `<data>/command-running`: a note of each process running
    /// ([`orphans`]), kept out of the output root components read.
    notes_dir: PathBuf,
    processes: Mutex<HashMap<String, Arc<Process>>>,
    /// The audit log starts and cancels are written to first.
    recorder: Option<Arc<dyn CommandRecorder>>,
    /// Where output is copied for other nodes ([`shared`]), on PostgreSQL.
    shared: Option<Arc<dyn OutputStore>>,
}

impl CommandHost {
    /// The commands `config` names; what a host that died left running
    /// of them is stopped now.
    pub fn from_config(
        config: &Config,
        recorder: Option<Arc<dyn CommandRecorder>>,
        shared: Option<Arc<dyn OutputStore>>,
    ) -> CommandHost {
        let data = config.data_dir();
        let host = CommandHost {
            commands: config.commands.clone(),
            output_dir: data.join(OUTPUT_ROOT),
            work_dir: data.join("command-work"),
            notes_dir: data.join("command-running"),
            processes: Mutex::new(HashMap::new()),
            recorder,
            shared,
        };
        if !host.commands.is_empty() {
            if let Err(e) = std::fs::create_dir_all(&host.notes_dir) {
                tracing::warn!(dir = %host.notes_dir.display(), error = %e, "cannot make the folder of running commands");
            }
            let killed = orphans::stop_orphans(&host.notes_dir);
            if killed > 0 {
                tracing::warn!(killed, "stopped processes of commands a host that died had left running");
            }
        }
        host
    }

    /// Where archives go (a file root of [`OUTPUT_ROOT`]'s name), when any
    /// command is configured.
    pub(crate) fn output_dir(&self) -> Option<&Path> {
        (!self.commands.is_empty()).then_some(self.output_dir.as_path())
    }

    /// The refusal `request` would meet before anything runs — a command
    /// that is not configured (`not-found`), arguments, environment or a
    /// folder it does not allow (`invalid-input`) — with why. Starts nothing.
    pub(crate) fn precheck(
        &self,
        request: &CommandRequest,
        roots: &BTreeMap<String, PathBuf>,
    ) -> Option<(&'static str, String)> {
        let Some(command) = self.commands.get(&request.name) else {
            return Some(("not-found", format!("no command named {:?} is configured", request.name)));
        };
        match prepare::prepare(command, request, roots, &self.work_dir) {
            Err(HostError::NotFound(m)) => Some(("not-found", m)),
            Err(HostError::Invalid(m)) => Some(("invalid-input", m)),
            _ => None,
        }
    }

    /// Records `record` in the audit log, when the runtime has one; a record
    /// that cannot be written keeps the act from happening.
    async fn record(&self, record: CommandRecord<'_>) -> Result<(), HostError> {
        match &self.recorder {
            Some(recorder) => recorder.record(record).await.map_err(|e| {
                HostError::Unavailable(format!("the command could not be recorded, so it did not run: {e}"))
            }),
            None => Ok(()),
        }
    }

    /// A process of `owner` by handle; anyone else's is not found.
    fn owned(&self, owner: &str, handle: &str) -> Result<Arc<Process>, HostError> {
        let processes = self.processes.lock().unwrap_or_else(|e| e.into_inner());
        processes.get(handle).filter(|p| p.owner == owner).cloned().ok_or_else(|| no_process(handle))
    }

    /// Whether `path`, below the `command-output` root, leads to an archive
    /// that is not `owner`'s: a file root is shared by every caller, but an
    /// archive (`cmd_<id>.log`, below it or beside it) is listed, described
    /// and reached only by the run, task or principal whose process wrote
    /// it, and only while its handle is valid, as `read-output` is.
    pub(crate) fn hides(&self, owner: &str, path: &Path) -> bool {
        let first = path.components().find_map(|c| match c {
            Component::Normal(name) => Some(name.to_string_lossy()),
            _ => None,
        });
        let Some(name) = first.filter(|n| n.starts_with("cmd_")) else { return false };
        let handle = name.strip_suffix(".log").unwrap_or(&name);
        let processes = self.processes.lock().unwrap_or_else(|e| e.into_inner());
        processes.get(handle).is_none_or(|p| p.owner != owner)
    }

    /// Up to `limit` bytes from `offset` of the output of `owner`'s process
    /// `id` (its handle or its archive's name), and how many bytes its
    /// archive holds now — read from the shared store when another node
    /// ran it; `not-found` when `id` names no process of `owner`.
    pub async fn output_of(
        &self,
        owner: &str,
        id: &str,
        offset: u64,
        limit: usize,
    ) -> Result<(Vec<u8>, u64), HostError> {
        let handle = id.strip_suffix(".log").unwrap_or(id);
        let archive = match self.owned(owner, handle) {
            Ok(process) => process.archive.clone(),
            Err(_) => return self.read_elsewhere(owner, handle, offset, limit).await,
        };
        let kept = archive.kept();
        tokio::task::spawn_blocking(move || archive.read(offset, limit))
            .await
            .map_err(|e| HostError::Internal(format!("reading the output stopped: {e}")))?
            .map(|bytes| (bytes, kept))
            .map_err(|e| HostError::Unavailable(format!("cannot read the output of {handle}: {e}")))
    }

    fn keep(&self, process: Arc<Process>) {
        let mut processes = self.processes.lock().unwrap_or_else(|e| e.into_inner());
        processes.retain(|_, p| p.ended().is_none_or(|e| p.started.elapsed() < e.duration + REAP_AFTER));
        processes.insert(process.handle.clone(), process);
    }

    /// Removes archives last written more than `age` ago whose process no
    /// longer runs; returns how many went.
    pub(crate) fn prune_archives(&self, age: Duration) -> usize {
        let Some(dir) = self.output_dir() else { return 0 };
        let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
        let running: Vec<String> = {
            let processes = self.processes.lock().unwrap_or_else(|e| e.into_inner());
            processes.values().filter(|p| p.ended().is_none()).map(|p| p.archive.name.clone()).collect()
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let old = entry.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".log") && old.is_some_and(|o| o > age) && !running.contains(&name) {
                removed += usize::from(std::fs::remove_file(entry.path()).is_ok());
            }
        }
        removed
    }

    /// Stops every process `owner` started that still runs (its run ended,
    /// its task ended); returns how many were told to stop.
    pub(crate) fn stop_owned(&self, owner: &str) -> usize {
        let processes = self.processes.lock().unwrap_or_else(|e| e.into_inner());
        let running: Vec<&Arc<Process>> =
            processes.values().filter(|p| p.owner == owner && p.ended().is_none()).collect();
        for p in &running {
            tracing::info!(handle = %p.handle, command = %p.name, owner, "stopping a command whose owner ended");
            p.cancel();
        }
        running.len()
    }
}

impl super::views::FilesView<'_> {
    /// Whether a file import's `path` in root `root` leads to another
    /// caller's command output ([`CommandHost::hides`]).
    pub(in crate::host) fn hides_output(&self, root: &str, path: &Path) -> bool {
        root == OUTPUT_ROOT && self.commands.hides(&owner_of(&self.core.grant), path)
    }
}

/// The answer for a handle that names no process of this caller.
fn no_process(handle: &str) -> HostError {
    HostError::NotFound(format!("no process {handle} of this caller (handles are reaped a while after they end)"))
}

/// What a caller is told about `process`.
fn status(process: &Process) -> CommandStatus {
    let ended = process.ended();
    let written = process.archive.written();
    let (outcome, exit_code, duration) = match ended {
        None => (ExecutionOutcome::Running, None, process.started.elapsed()),
        Some(e) => {
            let outcome = match e.outcome {
                CommandOutcome::Exited => ExecutionOutcome::Exited,
                CommandOutcome::KilledAfterTimeout => ExecutionOutcome::KilledAfterTimeout,
                CommandOutcome::Cancelled => ExecutionOutcome::Cancelled,
                CommandOutcome::Unknown => ExecutionOutcome::Unknown,
            };
            (outcome, e.exit_code, e.duration)
        }
    };
    CommandStatus {
        handle: process.handle.clone(),
        name: process.name.clone(),
        outcome,
        exit_code,
        timed_out: ended.is_some_and(|e| e.outcome == CommandOutcome::KilledAfterTimeout),
        duration_ms: duration.as_millis() as u64,
        output_bytes: written.bytes,
        output_truncated: written.truncated,
        output_head: String::from_utf8_lossy(&written.head).into_owned(),
        output_tail: String::from_utf8_lossy(&written.tail).into_owned(),
        output_file: process.archive.name.clone(),
    }
}

/// The command a capability's input names in the shape the host knows —
/// `command`, `args`, `env`, `cwd` — so a request the host would refuse is
/// refused before the call is claimed. `None` when the input names none.
pub fn request_in(input: &serde_json::Value) -> Option<CommandRequest> {
    let name = input.get("command")?.as_str()?.to_string();
    let strings = |v: Option<&serde_json::Value>| -> Vec<String> {
        v.and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let env = input
        .get("env")
        .and_then(|e| e.as_object())
        .map(|o| {
            o.iter().map(|(k, v)| Pair { name: k.clone(), value: v.as_str().unwrap_or_default().to_string() }).collect()
        })
        .unwrap_or_default();
    let cwd = input.get("cwd").and_then(|c| c.as_str()).unwrap_or_default().to_string();
    Some(CommandRequest { name, args: strings(input.get("args")), env, cwd, timeout_sec: 0 })
}
