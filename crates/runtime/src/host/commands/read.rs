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
use capstan_foundation::store::now_ms;

impl commands_read::Host for CommandsView<'_> {
    async fn status(&mut self, handle: String) -> Result<CommandStatus, HostError> {
        let recorded = self.core.args(|| handle.clone());
        host_call!(self, COMMANDS_READ, "status", recorded, debug, |call| {
            let owner = owner_of(&call.core.grant);
            match call.host.owned(&owner, &handle) {
                Ok(process) => Ok(status(&process)),
                Err(_) => Ok(call.host.elsewhere(&owner, &handle).await?.status(&handle, now_ms())),
            }
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
            let owner = owner_of(&call.core.grant);
            let left = call.core.deadline.saturating_duration_since(Instant::now());
            let limit = Duration::from_millis(u64::from(timeout_ms)).min(left);
            let process = match call.host.owned(&owner, &handle) {
                Ok(process) => process,
                Err(_) => {
                    let found = call.host.wait_elsewhere(&owner, &handle, limit).await?;
                    if let Some(outcome) = found.outcome(now_ms()) {
                        *call.end = Some(CommandEnd { outcome, exit_code: found.state.exit_code });
                    }
                    return Ok(found.status(&handle, now_ms()));
                }
            };
            if let Some(ended) = process.wait(limit).await {
                *call.end = Some(CommandEnd { outcome: ended.outcome, exit_code: ended.exit_code });
            }
            Ok(status(&process))
        })
    }
}
