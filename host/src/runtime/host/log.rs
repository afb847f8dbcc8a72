//! `capstan:host/log` (read): guest log lines into `tracing`, tagged with the
//! capability and the call's run/task.

use crate::runtime::bindings::capstan::host::log::{Host, Level};
use crate::runtime::call_state::CallState;
use crate::runtime::effects::EffectClass;

/// Longest message kept; the rest is cut so a guest cannot flood the log.
const MAX_MESSAGE: usize = 4096;

impl Host for CallState {
    async fn write(&mut self, level: Level, message: String) {
        if self.check("capstan:host/log", EffectClass::Read).is_err() {
            return;
        }
        let mut message = message;
        if message.len() > MAX_MESSAGE {
            let mut cut = MAX_MESSAGE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        let capability = self.target.id.as_str();
        let run_id = self.grant.run_id.as_deref();
        let task_id = self.grant.task_id.as_deref();
        match level {
            Level::Trace => tracing::trace!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
            Level::Debug => tracing::debug!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
            Level::Info => tracing::info!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
            Level::Warn => tracing::warn!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
            Level::Error => tracing::error!(target: "capstan::guest", capability, run_id, task_id, "{message}"),
        }
    }
}
