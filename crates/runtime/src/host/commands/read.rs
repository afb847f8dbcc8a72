//! `capstan:host/commands-read` (read): how a process of this caller's
//! run, task or principal stands, what it wrote, and waiting for its end —
//! nothing that starts or stops one, so a subagent or a plan-only run may
//! watch what its run started.

use std::time::{Duration, Instant};

use super::super::boundary::host_call;
use super::super::record::debug;
use super::super::views::CommandsView;
use super::{CommandEnd, MAX_READ, owner_of, status};
use crate::bindings::capstan::host::commands_read;
use crate::bindings::capstan::host::types::{CommandStatus, HostError};
use crate::effects::interface::COMMANDS_READ;

impl commands_read::Host for CommandsView<'_> {
    async fn status(&mut self, handle: String) -> Result<CommandStatus, HostError> {
        let recorded = self.core.args(|| handle.clone());
        host_call!(self, COMMANDS_READ, "status", recorded, debug, |call| {
            let process = call.host.owned(&owner_of(&call.core.grant), &handle)?;
            Ok(status(&process))
        })
    }

    async fn read_output(&mut self, handle: String, offset: u64, limit: u32) -> Result<Vec<u8>, HostError> {
        let recorded = self.core.args(|| format!("{handle} from {offset} limit {limit}"));
        host_call!(
            self,
            COMMANDS_READ,
            "read-output",
            recorded,
            |bytes: &Vec<u8>| format!("{} bytes", bytes.len()),
            |call| {
                let owner = owner_of(&call.core.grant);
                let read = call.host.output_of(&owner, &handle, offset, limit.min(MAX_READ) as usize).await;
                read.map(|(bytes, _)| bytes)
            },
        )
    }

    async fn wait(&mut self, handle: String, timeout_ms: u32) -> Result<CommandStatus, HostError> {
        let recorded = self.core.args(|| format!("{handle} up to {timeout_ms} ms"));
        host_call!(self, COMMANDS_READ, "wait", recorded, debug, |call| {
            let process = call.host.owned(&owner_of(&call.core.grant), &handle)?;
            let left = call.core.deadline.saturating_duration_since(Instant::now());
            if let Some(ended) = process.wait(Duration::from_millis(u64::from(timeout_ms)).min(left)).await {
                *call.end = Some(CommandEnd { outcome: ended.outcome, exit_code: ended.exit_code });
            }
            Ok(status(&process))
        })
    }
}
