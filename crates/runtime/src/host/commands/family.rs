//! Every process a command started, however far it went. A process group
//! is not enough: a descendant can call `setsid()` (or `setpgid()`) and
//! leave its group, and one whose parent exited is handed to another
//! process. So the host is a child subreaper ([`adopt_orphans`]): what a
//! command's descendants orphan is reparented to the host, not to init,
//! and stays findable. One tracker per host process ([`Tracker`]) keeps, for
//! each running command, the processes that belong to it, read from
//! `/proc` every few hundred milliseconds while commands run and again
//! before each signal:
//!
//! - the leader itself, and whatever is in its session or its process
//!   group (each leader starts a session of its own, [`super::child`]);
//! - every process whose parent belongs to it;
//! - every process seen in it before, while it still runs (the same pid
//!   with the same kernel start time, so a reused pid is never taken for
//!   it);
//! - an orphan handed to the host from another session (the host's own
//!   children stay in its session; a command's never are): the command
//!   whose output pipe it holds, else every command that was running when
//!   it started. One claimed by several is stopped when the last of them
//!   stops, so stopping one command never kills what may be another's.
//!
//! A stop signals every member; orphans the host adopted are reaped here
//! (tokio reaps only the children it spawned), so they leave no zombies.

use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions, getpid, kill_process, waitpid};

/// How often a running command's members are read at most.
pub(super) const TRACK_EVERY: Duration = Duration::from_millis(250);

/// What `/proc/<pid>/stat` says that matters here.
#[derive(Debug, Clone, Copy)]
struct Stat {
    pid: i32,
    ppid: i32,
    group: i32,
    session: i32,
    /// In clock ticks since boot.
    started: u64,
    zombie: bool,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold anything, spaces and ')' included.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        pid,
        zombie: matches!(*fields.first()?, "Z" | "X"),
        ppid: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

/// Every process on the machine now.
fn processes() -> HashMap<i32, Stat> {
    let mut all = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Some(s) = entry.file_name().to_str().and_then(|n| n.parse().ok()).and_then(stat) {
            all.insert(s.pid, s);
        }
    }
    all
}

/// Whether process `pid` holds the pipe whose inode is `inode`.
fn holds_pipe(pid: i32, inode: u64) -> bool {
    let wanted = format!("pipe:[{inode}]");
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == wanted.as_str()))
}

/// Makes this process the one orphans of its descendants are handed to,
/// once. Without it a descendant whose parent exited goes to init and can
/// no longer be told from anyone else's.
pub(super) fn adopt_orphans() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Err(e) = rustix::process::set_child_subreaper(Some(getpid())) {
            tracing::warn!(error = %e, "cannot adopt what commands orphan; a descendant that leaves its session may outlive its command");
        }
    });
}

struct Family {
    leader: i32,
    leader_started: u64,
    /// The inode of its output pipe.
    pipe: Option<u64>,
    /// Every process seen in it, with its start.
    members: HashMap<i32, u64>,
}

/// The running commands of this host process and their members.
pub(super) struct Tracker {
    families: HashMap<u64, Family>,
    next: u64,
    last_read: Option<Instant>,
}

static TRACKER: LazyLock<Mutex<Tracker>> =
    LazyLock::new(|| Mutex::new(Tracker { families: HashMap::new(), next: 0, last_read: None }));

/// The tracker, held: a command is spawned and registered under it, so a
/// leader that ends at once is never reaped as an orphan before tokio
/// waits for it.
pub(super) fn tracker() -> MutexGuard<'static, Tracker> {
    TRACKER.lock().unwrap_or_else(|e| e.into_inner())
}

impl Tracker {
    /// Starts tracking the command led by `leader`, whose output goes to
    /// the pipe `pipe`; returns its key.
    pub(super) fn register(&mut self, leader: i32, pipe: Option<u64>) -> u64 {
        let started = stat(leader).map_or(0, |s| s.started);
        self.next += 1;
        let members = HashMap::from([(leader, started)]);
        self.families.insert(self.next, Family { leader, leader_started: started, pipe, members });
        self.next
    }

    /// Stops tracking `key`; what is left of it is no longer its.
    pub(super) fn forget(&mut self, key: u64) {
        self.families.remove(&key);
    }

    /// Reads the members again unless that was done less than
    /// [`TRACK_EVERY`] ago.
    pub(super) fn track(&mut self) {
        if self.last_read.is_none_or(|at| at.elapsed() >= TRACK_EVERY - Duration::from_millis(50)) {
            self.read();
        }
    }

    /// Reads every family's members from `/proc` now, and reaps the orphans
    /// the host adopted that ended.
    fn read(&mut self) {
        self.last_read = Some(Instant::now());
        let me = getpid().as_raw_nonzero().get();
        let all = processes();
        // Read from `/proc`, not getsid(2): a host whose session leader lives
        // outside its pid namespace (a container's) is in session 0, which
        // no pid type can hold.
        let my_session = all.get(&me).map_or(0, |s| s.session);
        let leaders: HashSet<i32> = self.families.values().map(|f| f.leader).collect();
        for f in self.families.values_mut() {
            // A member that ended is dropped; its pid may be someone's now.
            f.members.retain(|pid, started| all.get(pid).is_some_and(|s| s.started == *started && !s.zombie));
            for s in all.values() {
                let leader = s.pid == f.leader && s.started == f.leader_started;
                let joined = (s.session == f.leader || s.group == f.leader) && s.started >= f.leader_started;
                if (leader || joined) && !s.zombie && s.pid != me {
                    f.members.insert(s.pid, s.started);
                }
            }
        }
        // Orphans handed to the host. A child of the host in its own session
        // is one it spawned itself (no command's process can join it).
        let claimed: HashSet<i32> = self.families.values().flat_map(|f| f.members.keys().copied()).collect();
        for s in all.values().filter(|s| s.ppid == me && s.session != my_session && !s.zombie) {
            if leaders.contains(&s.pid) || claimed.contains(&s.pid) {
                continue;
            }
            let candidates: Vec<u64> =
                self.families.iter().filter(|(_, f)| f.leader_started <= s.started).map(|(k, _)| *k).collect();
            let holder = candidates.iter().copied().find(|k| {
                let f = &self.families[k];
                f.pipe.is_some_and(|inode| holds_pipe(s.pid, inode))
            });
            for key in holder.map_or(candidates, |k| vec![k]) {
                if let Some(f) = self.families.get_mut(&key) {
                    f.members.insert(s.pid, s.started);
                }
            }
        }
        // Everything below a member is a member.
        let mut children: HashMap<i32, Vec<&Stat>> = HashMap::new();
        for s in all.values().filter(|s| !s.zombie && s.pid != me) {
            children.entry(s.ppid).or_default().push(s);
        }
        for f in self.families.values_mut() {
            let mut queue: Vec<i32> = f.members.keys().copied().collect();
            while let Some(pid) = queue.pop() {
                for child in children.get(&pid).into_iter().flatten() {
                    if f.members.insert(child.pid, child.started).is_none() {
                        queue.push(child.pid);
                    }
                }
            }
        }
        reap(&all, me, my_session, &leaders);
    }

    /// The members of `key` no other running command also claims.
    fn own(&self, key: u64) -> Vec<(i32, u64)> {
        let Some(family) = self.families.get(&key) else { return Vec::new() };
        let others: HashSet<i32> =
            self.families.iter().filter(|(k, _)| **k != key).flat_map(|(_, f)| f.members.keys().copied()).collect();
        family.members.iter().filter(|(pid, _)| !others.contains(pid)).map(|(p, s)| (*p, *s)).collect()
    }

    /// Sends `signal` to every member of `key` no other running command
    /// also claims; returns how many were sent one.
    pub(super) fn signal(&mut self, key: u64, signal: Signal) -> usize {
        self.read();
        let mut sent = 0;
        for (pid, started) in self.own(key) {
            // Checked again just before: a pid that ended since is not signalled.
            let same = stat(pid).is_some_and(|s| s.started == started && !s.zombie);
            if same && Pid::from_raw(pid).is_some_and(|p| kill_process(p, signal).is_ok()) {
                sent += 1;
            }
        }
        sent
    }

    /// How many members of `key` no other command claims still run (after
    /// reading them again).
    pub(super) fn running(&mut self, key: u64) -> usize {
        self.read();
        self.own(key).len()
    }
}

/// Reaps the orphans the host adopted that ended. Never a process it
/// spawned itself (whoever spawned it waits for it: a registered leader,
/// or a child in the host's own session), so no exit status is taken from
/// anyone.
fn reap(all: &HashMap<i32, Stat>, me: i32, my_session: i32, leaders: &HashSet<i32>) {
    for s in all.values() {
        if s.zombie && s.ppid == me && s.session != my_session && !leaders.contains(&s.pid) {
            let _ = Pid::from_raw(s.pid).map(|p| waitpid(Some(p), WaitOptions::NOHANG));
        }
    }
}
