//! Command output other nodes can read. On PostgreSQL several nodes share
//! one database and nothing else, and the agent run that started a command
//! may go on on another node; so, when the runtime is given an
//! [`OutputStore`], each process's archive is copied there while it runs
//! (a page at a time, read back from the archive file, which is the
//! buffer) with its state — how much it wrote, the preview, how it ended —
//! and a heartbeat. A handle this node does not know is then looked up in
//! the store, for its owner only and only while its handle would be valid
//! here. A process whose node stopped writing its heartbeat is `unknown`:
//! it may still run on a machine nobody can reach.
//!
//! The store keeps at most [`SHARED_LIMIT`] bytes of one archive; the
//! node that ran the command keeps the rest in its file, up to the
//! command's own archive limit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use super::process::{CommandOutcome, Process};
use super::{CommandHost, REAP_AFTER, no_process};
use crate::bindings::capstan::host::types::{CommandStatus, ExecutionOutcome, HostError};

/// The most bytes of one archive the store keeps.
pub const SHARED_LIMIT: u64 = 64 << 20;

/// How often a running process's new output and state are written.
const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// How often the state of a process that writes nothing is written anyway,
/// so that readers elsewhere know its node still runs it.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// How long without a heartbeat before a running process is `unknown`.
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// The most bytes one append carries.
const PAGE: u64 = 256 << 10;

/// A process as the store first hears of it.
#[derive(Debug, Clone)]
pub struct OutputOpened {
    pub handle: String,
    /// The run, task or principal that started it ([`super::owner_of`]).
    pub owner: String,
    /// The configured command's name.
    pub command: String,
}

/// How a process stands, as its node last wrote it.
#[derive(Debug, Clone, Default)]
pub struct OutputState {
    /// Bytes the process wrote.
    pub written: u64,
    /// Bytes the store holds (a prefix of them).
    pub kept: u64,
    pub truncated: bool,
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    /// How it ended, once it did.
    pub outcome: Option<CommandOutcome>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// When its node wrote this, in ms since the epoch.
    pub seen_ms: i64,
}

/// A process found in the store.
#[derive(Debug, Clone)]
pub struct StoredOutput {
    pub command: String,
    pub state: OutputState,
}

/// Where command output is kept for every node (the database on
/// PostgreSQL). The runtime is handed one when it is built
/// ([`HostStores`](crate::host::HostStores)); errors are words.
pub trait OutputStore: Send + Sync {
    /// Notes that `opened` started.
    fn open<'a>(&'a self, opened: &'a OutputOpened) -> BoxFuture<'a, Result<(), String>>;
    /// Stores `bytes` at byte `at` of `handle`'s archive.
    fn append<'a>(&'a self, handle: &'a str, at: u64, bytes: &'a [u8]) -> BoxFuture<'a, Result<(), String>>;
    /// Replaces `handle`'s state.
    fn update<'a>(&'a self, handle: &'a str, state: &'a OutputState) -> BoxFuture<'a, Result<(), String>>;
    /// `owner`'s process `handle`; `None` when there is none of `owner`.
    fn find<'a>(&'a self, owner: &'a str, handle: &'a str) -> BoxFuture<'a, Result<Option<StoredOutput>, String>>;
    /// Up to `limit` stored bytes of `handle` from `offset`.
    fn read<'a>(&'a self, handle: &'a str, offset: u64, limit: usize) -> BoxFuture<'a, Result<Vec<u8>, String>>;
    /// Removes what was last written before `before_ms` (ms since the
    /// epoch) and is not running; returns how many processes went.
    fn prune(&self, before_ms: i64) -> BoxFuture<'_, Result<usize, String>>;
}

/// Copies `process`'s output and state into `store` until it ended.
pub(crate) fn mirror(store: Arc<dyn OutputStore>, process: Arc<Process>) {
    tokio::spawn(async move {
        let mut copied = 0u64;
        let mut last_update = Instant::now();
        loop {
            let ended = process.wait(FLUSH_EVERY).await;
            let before = copied;
            if let Err(e) = copy_new(&*store, &process, &mut copied).await {
                tracing::warn!(handle = %process.handle, error = %e, "cannot copy command output to the database");
            }
            if ended.is_some() || copied != before || last_update.elapsed() >= HEARTBEAT {
                let state = state_of(&process, copied);
                match store.update(&process.handle, &state).await {
                    Ok(()) => last_update = Instant::now(),
                    Err(e) => tracing::warn!(handle = %process.handle, error = %e,
                        "cannot write how a command stands to the database"),
                }
            }
            if ended.is_some() {
                return;
            }
        }
    });
}

/// Appends what the archive file holds past `copied`, a page at a time.
async fn copy_new(store: &dyn OutputStore, process: &Arc<Process>, copied: &mut u64) -> Result<(), String> {
    let kept = process.archive.kept().min(SHARED_LIMIT);
    while *copied < kept {
        let archive = process.archive.clone();
        let (at, take) = (*copied, (kept - *copied).min(PAGE) as usize);
        let bytes = tokio::task::spawn_blocking(move || archive.read(at, take))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        if bytes.is_empty() {
            break;
        }
        store.append(&process.handle, at, &bytes).await?;
        *copied += bytes.len() as u64;
    }
    Ok(())
}

fn state_of(process: &Process, copied: u64) -> OutputState {
    let written = process.archive.written();
    let ended = process.ended();
    OutputState {
        truncated: written.truncated || written.bytes > copied,
        written: written.bytes,
        kept: copied,
        head: written.head,
        tail: written.tail,
        outcome: ended.map(|e| e.outcome),
        exit_code: ended.and_then(|e| e.exit_code),
        duration_ms: ended.map_or(process.started.elapsed(), |e| e.duration).as_millis() as u64,
        seen_ms: capstan_foundation::store::now_ms(),
    }
}

impl StoredOutput {
    /// How it ended, as a reader here sees it: a running process whose
    /// node stopped writing is `unknown`.
    pub fn outcome(&self, now_ms: i64) -> Option<CommandOutcome> {
        let silent = now_ms - self.state.seen_ms > STALE_AFTER.as_millis() as i64;
        self.state.outcome.or(silent.then_some(CommandOutcome::Unknown))
    }

    /// Whether its handle is still valid: ended (or silent) no longer
    /// ago than a handle here is kept.
    fn valid(&self, now_ms: i64) -> bool {
        self.outcome(now_ms).is_none() || now_ms - self.state.seen_ms <= REAP_AFTER.as_millis() as i64
    }

    /// What a caller is told of it.
    pub(crate) fn status(&self, handle: &str, now_ms: i64) -> CommandStatus {
        let outcome = self.outcome(now_ms);
        let s = &self.state;
        CommandStatus {
            handle: handle.to_string(),
            name: self.command.clone(),
            outcome: outcome.map_or(ExecutionOutcome::Running, |o| match o {
                CommandOutcome::Exited => ExecutionOutcome::Exited,
                CommandOutcome::KilledAfterTimeout => ExecutionOutcome::KilledAfterTimeout,
                CommandOutcome::Cancelled => ExecutionOutcome::Cancelled,
                CommandOutcome::Unknown => ExecutionOutcome::Unknown,
            }),
            exit_code: s.exit_code,
            timed_out: outcome == Some(CommandOutcome::KilledAfterTimeout),
            duration_ms: s.duration_ms,
            output_bytes: s.written,
            output_truncated: s.truncated,
            output_head: String::from_utf8_lossy(&s.head).into_owned(),
            output_tail: String::from_utf8_lossy(&s.tail).into_owned(),
            output_file: format!("{handle}.log"),
        }
    }
}

impl CommandHost {
    /// `owner`'s process `handle` as the shared store has it, when this
    /// node does not run it: another node's, or one this node ran before
    /// it restarted. `not-found` when there is no store or no such process.
    pub(crate) async fn elsewhere(&self, owner: &str, handle: &str) -> Result<StoredOutput, HostError> {
        Ok(self.found_elsewhere(owner, handle).await?.1)
    }

    /// [`Self::elsewhere`], with the store it was found in.
    async fn found_elsewhere(
        &self,
        owner: &str,
        handle: &str,
    ) -> Result<(&Arc<dyn OutputStore>, StoredOutput), HostError> {
        let Some(store) = &self.shared else { return Err(no_process(handle)) };
        let found = store
            .find(owner, handle)
            .await
            .map_err(|e| HostError::Unavailable(format!("cannot look up {handle} in the database: {e}")))?;
        let found = found.filter(|f| f.valid(capstan_foundation::store::now_ms())).ok_or_else(|| no_process(handle))?;
        Ok((store, found))
    }

    /// Waits up to `limit` for a process of another node to end; answers
    /// how it stands then.
    pub(crate) async fn wait_elsewhere(
        &self,
        owner: &str,
        handle: &str,
        limit: Duration,
    ) -> Result<StoredOutput, HostError> {
        let until = Instant::now() + limit;
        loop {
            let found = self.elsewhere(owner, handle).await?;
            let now = Instant::now();
            if found.outcome(capstan_foundation::store::now_ms()).is_some() || now >= until {
                return Ok(found);
            }
            tokio::time::sleep(FLUSH_EVERY.min(until - now)).await;
        }
    }

    /// Up to `limit` bytes from `offset` of another node's archive, and
    /// how many it holds.
    pub(crate) async fn read_elsewhere(
        &self,
        owner: &str,
        handle: &str,
        offset: u64,
        limit: usize,
    ) -> Result<(Vec<u8>, u64), HostError> {
        let (store, found) = self.found_elsewhere(owner, handle).await?;
        let bytes = store
            .read(handle, offset, limit)
            .await
            .map_err(|e| HostError::Unavailable(format!("cannot read the output of {handle}: {e}")))?;
        Ok((bytes, found.state.kept))
    }

    /// Removes what the shared store keeps of processes last heard of
    /// more than `age` ago; 0 without a store.
    pub(crate) async fn prune_shared(&self, age: Duration) -> Result<usize, String> {
        match &self.shared {
            Some(store) => store.prune(capstan_foundation::store::now_ms() - age.as_millis() as i64).await,
            None => Ok(0),
        }
    }
}
