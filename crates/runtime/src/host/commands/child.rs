//! What a command's process does between fork and exec, so the program
//! starts with nothing of the host's but what it was given:
//!
//! - a session of its own (and so a process group of its own, numbered as
//!   its pid): no controlling terminal of the host's, and no descendant can
//!   join the host's process group (`setpgid` stays inside a session);
//! - no descriptor above stderr: every one is marked close-on-exec, those
//!   the host inherited from its own parent or a library opened without
//!   the flag included. They are marked rather than closed because the
//!   spawn reports a failed exec through a close-on-exec pipe of its own.

use std::ffi::c_uint;

/// Sets `command` up to run as above.
pub(super) fn confine(command: &mut tokio::process::Command) {
    let highest = highest_descriptor();
    set_up_in_child(command, highest);
}

#[allow(unsafe_code)]
fn set_up_in_child(command: &mut tokio::process::Command, highest: i32) {
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe work is sound. It makes the `setsid`, `close_range`
    // and `fcntl` system calls and nothing else: it allocates nothing,
    // takes no lock and touches no state shared with the parent's threads.
    unsafe {
        command.pre_exec(move || {
            rustix::process::setsid()?;
            close_above_stderr(highest);
            Ok(())
        });
    }
}

/// Marks every descriptor above stderr close-on-exec. `close_range` does
/// it in one call (Linux 5.11 and later); before that each descriptor up to
/// `highest` is marked on its own.
#[allow(unsafe_code)]
fn close_above_stderr(highest: i32) {
    // SAFETY: plain system calls on descriptor numbers; a number that is
    // not open answers EBADF and nothing else happens.
    unsafe {
        let all = libc::syscall(libc::SYS_close_range, 3 as c_uint, c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC);
        if all != 0 {
            for fd in 3..=highest {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}

/// The highest descriptor this process may have open when it forks, for
/// kernels without `close_range`'s flag: the highest it has now, or its
/// limit when that is lower than 65536, whichever is higher.
fn highest_descriptor() -> i32 {
    let open = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .max()
        .unwrap_or(1023);
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(u64::MAX);
    open.max(limit.min(65_536) as i32 - 1)
}
