//! One process the host runs for a caller: spawned in a process group of
//! its own with a cleared environment, its stdout and stderr on one pipe
//! into its [`Archive`], and a supervisor that waits for it. When its time
//! runs out or it is cancelled, the supervisor stops the whole group —
//! SIGTERM, then SIGKILL after the command's grace — and a process that is
//! still there after that is `unknown`. Whatever ends it, what is left of
//! its group is stopped and its output reader does not outlive it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::archive::Archive;

/// How long a process gets to die after SIGKILL before its end is
/// `unknown`, and its reader to drain once it ended.
const AFTER_KILL: Duration = Duration::from_secs(5);

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// By itself; `exit_code` is `None` when a signal it did not get from
    /// the host ended it.
    Exited,
    KilledAfterTimeout,
    Cancelled,
    Unknown,
}

#[derive(Debug, Clone, Copy)]
pub struct Ended {
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub duration: Duration,
}

/// What to run.
pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The folder it starts in, opened when it was checked.
    pub cwd: cap_std::fs::Dir,
    pub timeout: Duration,
    pub grace: Duration,
}

pub struct Process {
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
        spec: Spec,
        archive: Arc<Archive>,
        notes: PathBuf,
    ) -> std::io::Result<Arc<Process>> {
        use std::os::fd::AsRawFd;
        let (reader, writer) = std::io::pipe()?;
        // The child changes to the folder this process holds open, by its
        // descriptor: the path that was checked is not looked up again.
        let cwd = format!("/proc/self/fd/{}", spec.cwd.as_raw_fd());
        let mut child = tokio::process::Command::new(&spec.program)
            .args(&spec.args)
            .env_clear()
            .env("PATH", crate::config::COMMAND_PATH)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&cwd)
            .stdin(std::process::Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer)
            .process_group(0)
            .spawn()?;
        // The child holds the write end now; ours is closed with the
        // Command, so the pipe ends when the group does.
        let group = child.id().and_then(|id| Pid::from_raw(id as i32)).filter(|p| p.as_raw_nonzero().get() > 1);
        if let Some(group) = group {
            super::orphans::note(&notes, &handle, group.as_raw_nonzero().get() as u32);
        }
        let (ended_tx, ended) = watch::channel(None);
        let (cancel, cancel_rx) = watch::channel(false);
        let started = Instant::now();
        let process = Arc::new(Process { handle, name, owner, started, archive, ended, cancel });
        let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())?;
        let draining = tokio::spawn(drain(pipe, process.archive.clone()));
        let archive = process.archive.clone();
        let noted = process.handle.clone();
        tokio::spawn(async move {
            let ended = supervise(&mut child, group, &spec, cancel_rx, started).await;
            // The leader is gone; so is whatever it left in its group.
            if let Some(group) = group {
                stop_group(group, spec.grace).await;
            }
            let abort = draining.abort_handle();
            if tokio::time::timeout(AFTER_KILL, draining).await.is_err() {
                // Something that left the group still holds the pipe: the
                // reader stops anyway.
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

async fn supervise(
    child: &mut tokio::process::Child,
    group: Option<Pid>,
    spec: &Spec,
    mut cancel: watch::Receiver<bool>,
    started: Instant,
) -> Ended {
    let stopped = tokio::select! {
        status = child.wait() => {
            let exit_code = status.ok().and_then(|s| s.code());
            return Ended { outcome: Outcome::Exited, exit_code, duration: started.elapsed() };
        }
        () = tokio::time::sleep(spec.timeout) => Outcome::KilledAfterTimeout,
        _ = cancel.wait_for(|c| *c) => Outcome::Cancelled,
    };
    if let Some(group) = group {
        let _ = kill_process_group(group, Signal::TERM);
    }
    let ended = match tokio::time::timeout(spec.grace, child.wait()).await {
        Ok(_) => true,
        Err(_) => {
            if let Some(group) = group {
                let _ = kill_process_group(group, Signal::KILL);
            }
            tokio::time::timeout(AFTER_KILL, child.wait()).await.is_ok()
        }
    };
    let outcome = if ended { stopped } else { Outcome::Unknown };
    Ended { outcome, exit_code: None, duration: started.elapsed() }
}

/// Stops what is left in `group`: SIGTERM, then SIGKILL after `grace`.
async fn stop_group(group: Pid, grace: Duration) {
    if test_kill_process_group(group).is_err() {
        return;
    }
    let _ = kill_process_group(group, Signal::TERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if test_kill_process_group(group).is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = kill_process_group(group, Signal::KILL);
}

/// Reads the pipe into the archive until it ends.
async fn drain(mut pipe: tokio::net::unix::pipe::Receiver, archive: Arc<Archive>) {
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => archive.append(&buffer[..n]),
        }
    }
    archive.close();
}
