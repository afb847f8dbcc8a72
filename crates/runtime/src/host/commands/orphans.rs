//! Processes a host started and then lost with itself. Each started
//! process leaves a note in `<data>/command-running` (`<handle>.pid`: its process
//! group, when it started, the host process that owns it, the machine);
//! the note goes when the process ends. A host starting up stops what the
//! notes of dead hosts on this machine still name — the processes of that
//! group or session (a command leads a session of its own) started no
//! earlier than it and no later than this host — so a
//! command outlives the host that owned it by no more than a restart. Its
//! archive stays. Start times are the kernel's (`/proc/<pid>/stat`), so a
//! process id reused since is never mistaken for the one that was noted.

use std::path::Path;

use rustix::process::{Pid, Signal, kill_process};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Note {
    group: i32,
    /// The group leader's start, in clock ticks since boot.
    started: u64,
    host_pid: u32,
    host_started: u64,
    machine: String,
}

/// `(process group, start time)` of process `pid`, from `/proc`.
fn stat(pid: u32) -> Option<(i32, u64)> {
    stat_with_session(pid).map(|(group, _, started)| (group, started))
}

/// `(process group, session, start time)` of process `pid`, from `/proc`.
fn stat_with_session(pid: u32) -> Option<(i32, i32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold anything, spaces and ')' included.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

fn machine() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string()
}

/// Notes that this host started process group `group` for `handle`.
pub(super) fn note(dir: &Path, handle: &str, group: u32) {
    let Some((_, started)) = stat(group) else { return };
    let host = std::process::id();
    let Some((_, host_started)) = stat(host) else { return };
    let note = Note { group: group as i32, started, host_pid: host, host_started, machine: machine() };
    let path = dir.join(format!("{handle}.pid"));
    if let Err(e) = std::fs::write(&path, serde_json::to_vec(&note).unwrap_or_default()) {
        tracing::warn!(path = %path.display(), error = %e, "cannot note a started command");
    }
}

/// The process noted for `handle` ended.
pub(super) fn forget(dir: &Path, handle: &str) {
    let _ = std::fs::remove_file(dir.join(format!("{handle}.pid")));
}

/// Stops what dead hosts on this machine left running; returns how many
/// processes were killed.
pub(super) fn stop_orphans(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let here = machine();
    let Some((_, now)) = stat(std::process::id()) else { return 0 };
    let mut killed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "pid") {
            continue;
        }
        let Some(note) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<Note>(&b).ok()) else {
            continue;
        };
        let host_alive = stat(note.host_pid).is_some_and(|(_, started)| started == note.host_started);
        if note.machine != here || host_alive {
            continue;
        }
        for pid in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = pid.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let Some((group, session, started)) = stat_with_session(pid) else { continue };
            let ours = group == note.group || session == note.group;
            let noted = ours && (note.started..=now).contains(&started);
            if noted && Pid::from_raw(pid as i32).is_some_and(|p| kill_process(p, Signal::KILL).is_ok()) {
                killed += 1;
            }
        }
        tracing::warn!(note = %path.display(), "stopped what a command of a host that died left running");
        let _ = std::fs::remove_file(&path);
    }
    killed
}
