//! Capability `system.command-output` (label read): looks at a command
//! this caller's run, task or principal started with `system.command` —
//! how it stands (`status`), what it wrote (`read`, a page of its archive),
//! or waiting for its end (`wait`) — and changes nothing, so a subagent or
//! a plan-only run may watch what its run started. After a `wait` that saw
//! the end, the call's status is the command's: `succeeded` only for an
//! exit of its own with code 0.

#[cfg(test)]
mod tests;

use capstan_sdk::commands::{self, CommandResult};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

/// What to look at.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum OutputInput {
    /// How the command stands now.
    Status { handle: String },
    /// A page of what it wrote: `limit` bytes (default 16384, at most
    /// 1048576) from byte `offset`.
    Read {
        handle: String,
        #[serde(default)]
        offset: u64,
        #[serde(default)]
        limit: Option<u32>,
    },
    /// Wait up to `timeout_ms` (default 10000) for it to end.
    Wait {
        handle: String,
        #[serde(default)]
        timeout_ms: Option<u32>,
    },
}

/// A page of output.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct OutputPage {
    pub handle: String,
    pub offset: u64,
    /// The bytes as (lossy) UTF-8.
    pub text: String,
    pub bytes: u64,
    /// Where the next page starts; `None` at the end of what is archived.
    pub next_offset: Option<u64>,
}

/// A status, or a page of output.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum OutputAnswer {
    Status(CommandResult),
    Page(OutputPage),
}

/// The capability.
pub struct SystemCommandOutput;

impl Capability for SystemCommandOutput {
    type Input = OutputInput;
    type Output = OutputAnswer;

    const META: Meta = Meta {
        id: "system.command-output",
        version: 1,
        label: Label::Read,
        summary: "How a started command stands, what it wrote, or wait for its end",
        description: "Looks at a command started with system.command by this run, task or caller, by its handle: status (how it stands now), read (a page of its whole output: offset and limit in bytes), wait (up to timeout_ms for it to end). Changes nothing; subagents and plan-only runs may use it. The status fields are system.command's.",
        tags: &["system", "commands"],
        aliases: &["command output", "command status", "wait for command", "命令输出"],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: OutputInput) -> Result<Outcome<OutputAnswer>, Failure> {
        let answer = match input {
            OutputInput::Status { handle } => OutputAnswer::Status(CommandResult::from(&commands::status(&handle)?)),
            OutputInput::Wait { handle, timeout_ms } => {
                let status = commands::wait(&handle, timeout_ms.unwrap_or(10_000))?;
                OutputAnswer::Status(CommandResult::from(&status))
            }
            OutputInput::Read { handle, offset, limit } => {
                let limit = limit.unwrap_or(16 << 10).clamp(1, 1 << 20);
                let bytes = commands::read_output(&handle, offset, limit)?;
                let read = bytes.len() as u64;
                OutputAnswer::Page(OutputPage {
                    handle,
                    offset,
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                    bytes: read,
                    next_offset: (read == u64::from(limit)).then_some(offset + read),
                })
            }
        };
        Ok(Outcome::Succeeded(answer))
    }
}

capstan_sdk::export_capability!(SystemCommandOutput);
