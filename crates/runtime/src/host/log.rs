//! `capstan:host/log` (read): guest log lines into `tracing`, tagged with the
//! capability and the call's run/task. A line is one line (control
//! characters escaped) of at most 4 KiB; a call keeps at most 200 lines and
//! 64 KiB, and all calls together at most 1 MiB a second. What is dropped
//! is counted and said once when the call ends.

use std::sync::atomic::{AtomicU64, Ordering};

use super::boundary::host_call;
use super::views::LogView;
use crate::bindings::capstan::host::log::{Host, Level};
use crate::bindings::capstan::host::types::HostError;
use crate::effects::interface;
use crate::text::{clip, escape_controls};

/// Longest message kept; the rest is cut.
const MAX_MESSAGE: usize = 4096;
/// Lines and bytes one call may log.
pub(crate) const MAX_CALL_LINES: u32 = 200;
pub(crate) const MAX_CALL_BYTES: usize = 64 << 10;
/// Bytes all calls together may log in one second.
const MAX_BYTES_PER_SECOND: u64 = 1 << 20;

/// The host-wide allowance of guest log bytes, refilled every second.
#[derive(Default)]
pub struct GuestLogBudget {
    second: AtomicU64,
    used: AtomicU64,
}

impl GuestLogBudget {
    fn take(&self, bytes: usize) -> bool {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if self.second.swap(now, Ordering::Relaxed) != now {
            self.used.store(0, Ordering::Relaxed);
        }
        self.used.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64 <= MAX_BYTES_PER_SECOND
    }
}

/// What one call logged and what it was not let log.
#[derive(Debug, Default)]
pub struct LogTally {
    lines: u32,
    bytes: usize,
    pub dropped: u32,
}

impl LogView<'_> {
    /// Whether a line of `len` bytes fits this call's and the host's allowance.
    pub(crate) fn may_log(&mut self, len: usize) -> bool {
        let tally = &mut *self.tally;
        let fits = tally.lines < MAX_CALL_LINES && tally.bytes + len <= MAX_CALL_BYTES && self.budget.take(len);
        if fits {
            tally.lines += 1;
            tally.bytes += len;
        } else {
            tally.dropped += 1;
        }
        fits
    }
}

impl Host for LogView<'_> {
    async fn write(&mut self, level: Level, message: String) {
        let message = clip(&escape_controls(&message), MAX_MESSAGE).into_owned();
        let args = self.core.args(|| {
            let level = format!("{level:?}");
            format!("{}: {message}", level.rsplit("::").next().unwrap_or("").to_lowercase())
        });
        // A line refused (its class) or over the allowance is not logged;
        // the record says which.
        let written = host_call!(self, interface::LOG, "write", args, |_| String::new(), |call| match call
            .may_log(message.len())
        {
            true => Ok(()),
            false => Err(HostError::TooLarge("over the call's log allowance; the line was dropped".into())),
        },);
        if written.is_err() {
            return;
        }
        let capability = self.core.target.id.as_str();
        let run_id = self.core.grant.run_id.as_deref();
        let task_id = self.core.grant.task_id.as_deref();
        match level {
            Level::Trace => tracing::trace!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
            Level::Debug => tracing::debug!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
            Level::Info => tracing::info!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
            Level::Warn => tracing::warn!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
            Level::Error => tracing::error!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
        }
    }
}
