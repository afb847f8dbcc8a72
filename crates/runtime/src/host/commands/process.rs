//! One process the host runs for a caller: spawned in a session of its
//! own with a cleared environment and no descriptor above stderr
//! ([`super::child`]), its stdout and stderr on one pipe into its
//! [`Archive`], and a supervisor that waits for it. When its time runs out
//! or it is cancelled, the supervisor stops everything it started
//! ([`super::family`], however far a descendant went: its own session, a
//! parent that exited) — SIGTERM, then SIGKILL after the command's grace —
//! and a leader that is still there after that is `unknown`. Whatever ends
//! it, what is left of it is stopped the same way, and its output is read
//! only until then: what is in the pipe is kept, but a descendant that
//! still holds it cannot keep the call waiting.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::archive::Archive;
use super::family::{TRACK_EVERY, tracker};

/// How long a process gets to die after SIGKILL before its end is
/// `unknown`.
const AFTER_KILL: Duration = Duration::from_secs(5);

/// How long the reader gets, once the process and its descendants are
/// stopped, to take what is left in the pipe.
const LAST_READ: Duration = Duration::from_secs(1);

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandOutcome {
    /// By itself; `exit_code` is `None` when a signal it did not get from
    /// the host ended it.
    Exited,
    KilledAfterTimeout,
    Cancelled,
    Unknown,
}

impl CommandOutcome {
    /// The word it is stored as.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandOutcome::Exited => "exited",
            CommandOutcome::KilledAfterTimeout => "killed_after_timeout",
            CommandOutcome::Cancelled => "cancelled",
            CommandOutcome::Unknown => "unknown",
        }
    }

    /// The outcome `word` names ([`Self::as_str`]); anything else is
    /// `Unknown`.
    pub fn parse(word: &str) -> CommandOutcome {
        [CommandOutcome::Exited, CommandOutcome::KilledAfterTimeout, CommandOutcome::Cancelled]
            .into_iter()
            .find(|o| o.as_str() == word)
            .unwrap_or(CommandOutcome::Unknown)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Ended {
    pub outcome: CommandOutcome,
    pub exit_code: Option<i32>,
    pub duration: Duration,
}

/// What to run.
pub(crate) struct ProcessSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The folder it starts in, opened when it was checked.
    pub cwd: cap_std::fs::Dir,
    pub timeout: Duration,
    pub grace: Duration,
}

pub(crate) struct Process {
    pub handle: String,
    pub name: String,
    /// The run, task or principal that started it.
    pub owner: String,
    pub started: Instant,
    pub archive: Arc<Archive>,
    ended: watch::Receiver<Option<Ended>>,
    cancel: watch::Sender<bool>,
}

impl Process {
    /// Starts `spec`; the supervisor runs until the process ended. A note
    /// of it stays in `notes` while it runs ([`super::orphans`]).
    pub fn spawn(
        handle: String,
        name: String,
        owner: String,
        spec: ProcessSpec,
        archive: Arc<Archive>,
        notes: PathBuf,
    ) -> std::io::Result<Arc<Process>> {
        use std::os::fd::AsRawFd;
        let (reader, writer) = std::io::pipe()?;
        let pipe_inode = rustix::fs::fstat(&reader).ok().map(|s| s.st_ino);
        // The child changes to the folder this process holds open, by its
        // descriptor: the path that was checked is not looked up again.
        let cwd = format!("/proc/self/fd/{}", spec.cwd.as_raw_fd());
        let mut command = tokio::process::Command::new(&spec.program);
        command
            .args(&spec.args)
            .env_clear()
            .env("PATH", capstan_config::COMMAND_PATH)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&cwd)
            .stdin(std::process::Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer);
        super::child::confine(&mut command);
        super::family::adopt_orphans();
        // Spawned and registered under the tracker, so an orphan reaper
        // never takes a leader that ended at once for an orphan.
        let (mut child, family) = {
            let mut tracker = tracker();
            let child = command.spawn()?;
            let leader = child.id().map(|id| id as i32).filter(|id| *id > 1);
            (child, leader.map(|leader| (leader, tracker.register(leader, pipe_inode))))
        };
        // The child holds the write end now; ours is closed with the
        // Command, so the pipe ends when the last process holding it does.
        drop(command);
        if let Some((leader, _)) = family {
            super::orphans::note(&notes, &handle, leader as u32);
        }
        let family = family.map(|(_, key)| key);
        let (ended_tx, ended) = watch::channel(None);
        let (cancel, cancel_rx) = watch::channel(false);
        let started = Instant::now();
        let process = Arc::new(Process { handle, name, owner, started, archive, ended, cancel });
        let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())?;
        let (finish, finish_rx) = watch::channel(false);
        let draining = tokio::spawn(drain(pipe, process.archive.clone(), finish_rx));
        let archive = process.archive.clone();
        let noted = process.handle.clone();
        tokio::spawn(async move {
            let (ended, told) = supervise(&mut child, family, &spec, cancel_rx, started).await;
            // The leader is gone; so is whatever it left, wherever it went,
            // within the grace that began when it was told to stop.
            if let Some(family) = family {
                stop_family(family, told.unwrap_or_else(Instant::now) + spec.grace).await;
                tracker().forget(family);
            }
            // Whatever still holds the pipe, the output ends here: what is
            // in it is read, nothing more is waited for.
            let _ = finish.send(true);
            let abort = draining.abort_handle();
            if tokio::time::timeout(LAST_READ, draining).await.is_err() {
                abort.abort();
            }
            archive.close();
            super::orphans::forget(&notes, &noted);
            let _ = ended_tx.send(Some(ended));
        });
        Ok(process)
    }

    /// How it ended, or `None` while it runs.
    pub fn ended(&self) -> Option<Ended> {
        *self.ended.borrow()
    }

    /// Waits up to `limit` for it to end.
    pub async fn wait(&self, limit: Duration) -> Option<Ended> {
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout(limit, ended.wait_for(Option::is_some)).await;
        self.ended()
    }

    /// Asks its supervisor to stop it (the group gets SIGTERM, then
    /// SIGKILL after the grace). Stopping an ended process does nothing.
    pub fn cancel(&self) {
        let _ = self.cancel.send(true);
    }
}

/// Waits for the leader to end by itself, or stops it and everything it
/// started at its timeout or a cancel; returns how it ended and when it was
/// told to stop, if it was.
async fn supervise(
    child: &mut tokio::process::Child,
    family: Option<u64>,
    spec: &ProcessSpec,
    mut cancel: watch::Receiver<bool>,
    started: Instant,
) -> (Ended, Option<Instant>) {
    let timeout = tokio::time::sleep(spec.timeout);
    tokio::pin!(timeout);
    let mut track = tokio::time::interval(TRACK_EVERY);
    let stopped = loop {
        tokio::select! {
            status = child.wait() => {
                let exit_code = status.ok().and_then(|s| s.code());
                return (Ended { outcome: CommandOutcome::Exited, exit_code, duration: started.elapsed() }, None);
            }
            () = &mut timeout => break CommandOutcome::KilledAfterTimeout,
            _ = cancel.wait_for(|c| *c) => break CommandOutcome::Cancelled,
            // Who belongs to it is read while it runs: a descendant whose
            // parent exits between two readings is still known as its.
            _ = track.tick() => {
                if family.is_some() {
                    tracker().track();
                }
            }
        }
    };
    let signal = |signal| {
        if let Some(family) = family {
            tracker().signal(family, signal);
        }
    };
    let told = Instant::now();
    signal(Signal::TERM);
    let ended = match tokio::time::timeout(spec.grace, child.wait()).await {
        Ok(_) => true,
        Err(_) => {
            signal(Signal::KILL);
            tokio::time::timeout(AFTER_KILL, child.wait()).await.is_ok()
        }
    };
    let outcome = if ended { stopped } else { CommandOutcome::Unknown };
    (Ended { outcome, exit_code: None, duration: started.elapsed() }, Some(told))
}

/// Stops what is left of `family`: SIGTERM until `kill_at`, then SIGKILL,
/// each sent again to what appeared since, until nothing of it runs or
/// SIGKILL had [`AFTER_KILL`] to work.
async fn stop_family(family: u64, kill_at: Instant) {
    let mut signal = Signal::TERM;
    loop {
        if tracker().signal(family, signal) == 0 {
            return;
        }
        let now = Instant::now();
        if signal == Signal::TERM && now >= kill_at {
            signal = Signal::KILL;
            continue;
        }
        if signal == Signal::KILL && now >= kill_at + AFTER_KILL {
            let left = tracker().running(family);
            tracing::warn!(left, "processes of a command did not stop when killed");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads the pipe into the archive until it ends or `finish` is set; then
/// takes what is in it without waiting for more.
async fn drain(mut pipe: tokio::net::unix::pipe::Receiver, archive: Arc<Archive>, mut finish: watch::Receiver<bool>) {
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        tokio::select! {
            biased;
            read = pipe.read(&mut buffer) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => archive.append(&buffer[..n]),
            },
            _ = finish.wait_for(|f| *f) => {
                // Read from the descriptor itself (it is non-blocking): the
                // reactor may not have seen what the last writers left yet.
                while let Ok(n) = rustix::io::read(&pipe, &mut buffer) {
                    if n == 0 {
                        break;
                    }
                    archive.append(&buffer[..n]);
                }
                break;
            }
        }
    }
    archive.close();
}
