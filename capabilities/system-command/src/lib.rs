//! Capability `system.command` (label execute, replay never): runs a
//! command the operator configured under `[commands.<name>]` and waits for
//! it (`run`), starts one and answers with its handle (`start`), or stops
//! one it started (`cancel`). Only the operator's commands exist, with the
//! arguments, environment and folder they allow; the host checks all of it
//! before anything runs. The result says what happened — `succeeded` only
//! when the process exited by itself with code 0 — with a preview of its
//! output and the archive of the rest. A run is never repeated on a guess:
//! an outcome nobody can confirm stays `unknown`. Watching a started
//! command without changing anything is `system.command-output`'s.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use capstan_sdk::commands::{self, CommandRequest, CommandResult};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::Deserialize;

/// What to do.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum CommandInput {
    /// Run a command and wait for it to end (at most its timeout).
    Run(Launch),
    /// Start a command; the answer carries its handle at once.
    Start(Launch),
    /// Stop a command this caller started.
    Cancel {
        /// The handle `start` answered.
        handle: String,
    },
}

/// A command to launch.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// The command's name in the operator's configuration (`ffprobe`, `df`).
    pub command: String,
    /// Arguments after the configured ones, each as the operator allows.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables the operator lets callers set.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A folder below the command's working folder.
    #[serde(default)]
    pub cwd: String,
    /// Seconds before it is stopped (default: the command's own; never
    /// past its maximum).
    #[serde(default)]
    pub timeout_sec: u32,
}

impl Launch {
    fn request(self) -> CommandRequest {
        CommandRequest {
            name: self.command,
            args: self.args,
            env: self.env.into_iter().collect(),
            cwd: self.cwd,
            timeout_sec: self.timeout_sec,
        }
    }
}

/// The capability.
pub struct SystemCommand;

impl Capability for SystemCommand {
    type Input = CommandInput;
    type Output = CommandResult;

    const META: Meta = Meta {
        id: "system.command",
        version: 1,
        label: Label::Execute,
        summary: "Run, start or cancel a command the operator configured",
        description: "Runs one of the programs the operator named under [commands.<name>] in capstan.toml (ffprobe, df, mediainfo, a site script), with only the arguments, environment and folder the operator allows: run waits for it to end (at most its timeout), start answers at once with a handle (watch it with system.command-output), cancel stops one this caller started. The result is structured: status (succeeded only when the process exited by itself with code 0; failed for another exit code, a timeout or a cancel; unknown when its end cannot be confirmed), execution_outcome, exit_code, timed_out, duration_ms, a preview of its output (start and end) and output_file, the whole output under the command-output file root. Stopping a process never undoes what it already did. Never repeated on a guess.",
        tags: &["system", "commands"],
        aliases: &["run command", "shell", "ffprobe", "df", "mediainfo", "运行命令", "命令", "执行"],
        replay: Replay::Never,
        services: &[],
    };

    fn invoke(input: CommandInput) -> Result<Outcome<CommandResult>, Failure> {
        let status = match input {
            CommandInput::Run(launch) => commands::run(&launch.request()),
            CommandInput::Start(launch) => commands::start(&launch.request()),
            CommandInput::Cancel { handle } => commands::cancel(&handle),
        }?;
        Ok(Outcome::Succeeded(CommandResult::from(&status)))
    }
}

capstan_sdk::export_capability!(SystemCommand);
