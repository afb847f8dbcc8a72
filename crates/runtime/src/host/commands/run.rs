//! `capstan:host/commands` (execute): run a command and wait for it, start
//! one and answer at once, cancel one. Each is an effect: a process may do
//! anything once it starts, so a call that ends early after one of these
//! is `unknown`. A run waits for the end its supervisor enforces (the
//! command's timeout); if the call itself stops first (its deadline, an
//! aborted run) the process is stopped with it.

use std::sync::Arc;

use super::super::boundary::host_call;
use super::super::record::debug;
use super::super::views::CommandsView;
use super::archive::Archive;
use super::process::Process;
use super::shared::{OutputOpened, mirror};
use super::{CommandAct, CommandEnd, CommandRecord, owner_of, prepare::prepare, status};
use crate::bindings::capstan::host::commands;
use crate::bindings::capstan::host::types::{CommandRequest, CommandStatus, HostError};
use crate::effects::interface::COMMANDS;

/// Stops the process when the call that runs it goes away before it ended.
struct StopOnDrop(Arc<Process>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if self.0.ended().is_none() {
            self.0.cancel();
        }
    }
}

impl CommandsView<'_> {
    /// What the audit log keeps of `act` on `command` (`args` and `env`
    /// are counts: values are never recorded).
    fn command_record<'a>(
        &'a self,
        act: CommandAct,
        command: &'a str,
        args: usize,
        env: usize,
        handle: &'a str,
    ) -> CommandRecord<'a> {
        CommandRecord {
            act,
            actor_kind: self.core.grant.actor.as_str(),
            principal: &self.core.grant.principal,
            capability: &self.core.target.id,
            idempotency_key: self.core.grant.idempotency_key.as_deref(),
            command,
            arguments: args,
            env,
            handle,
        }
    }

    /// Checks `request`, records it in the audit log and starts it for
    /// this call's owner.
    async fn start_command(&mut self, request: &CommandRequest) -> Result<Arc<Process>, HostError> {
        let host = self.host;
        let Some(command) = host.commands.get(&request.name) else {
            return Err(HostError::NotFound(format!("no command named {:?} is configured", request.name)));
        };
        let spec = prepare(command, request, &self.core.setup.root_paths, &host.work_dir)?;
        let handle = format!("cmd_{}", capstan_foundation::store::new_id());
        let archive =
            Archive::create(&host.output_dir, &handle, command.archive_limit_bytes, command.output_limit_bytes)
                .map_err(|e| HostError::Unavailable(format!("cannot open an archive for the output: {e}")))?;
        let owner = owner_of(&self.core.grant);
        let args = request.args.len();
        let record = self.command_record(CommandAct::Start, &request.name, args, request.env.len(), &handle);
        host.record(record).await?;
        // From here the program may run: whatever ends the call early
        // leaves its outcome unknown.
        self.core.mark_effect();
        let notes = host.notes_dir.clone();
        let process = Process::spawn(handle, request.name.clone(), owner.clone(), spec, Arc::new(archive), notes)
            .map_err(|e| HostError::Unavailable(format!("command {} could not be started: {e}", request.name)))?;
        tracing::info!(target: "capstan::commands", capability = %self.core.target.id, command = %request.name, args,
            handle = %process.handle, %owner, "command started");
        host.keep(process.clone());
        if let Some(store) = &host.shared {
            // Noted before the handle is answered, so another node that is
            // given it finds it; a store that cannot be reached costs the
            // sharing, not the command, which already runs.
            let opened = OutputOpened { handle: process.handle.clone(), owner, command: request.name.clone() };
            match store.open(&opened).await {
                Ok(()) => mirror(store.clone(), process.clone()),
                Err(e) => tracing::warn!(handle = %process.handle, error = %e,
                    "cannot note the command in the database; other nodes will not see its output"),
            }
        }
        Ok(process)
    }
}

impl commands::Host for CommandsView<'_> {
    async fn run(&mut self, request: CommandRequest) -> Result<CommandStatus, HostError> {
        let recorded = self.core.args(|| debug(&request));
        host_call!(self, COMMANDS, "run", recorded, debug, |call| {
            let process = call.start_command(&request).await?;
            let _stop = StopOnDrop(process.clone());
            // The supervisor ends it by its timeout; this waits for that end.
            let ended = loop {
                if let Some(ended) = process.wait(std::time::Duration::from_secs(3600)).await {
                    break ended;
                }
            };
            *call.end = Some(CommandEnd { outcome: ended.outcome, exit_code: ended.exit_code });
            Ok(status(&process))
        })
    }

    async fn start(&mut self, request: CommandRequest) -> Result<CommandStatus, HostError> {
        let recorded = self.core.args(|| debug(&request));
        host_call!(self, COMMANDS, "start", recorded, debug, |call| {
            let process = call.start_command(&request).await?;
            Ok(status(&process))
        })
    }

    async fn cancel(&mut self, handle: String) -> Result<CommandStatus, HostError> {
        let recorded = self.core.args(|| handle.clone());
        host_call!(self, COMMANDS, "cancel", recorded, debug, |call| {
            let owner = owner_of(&call.core.grant);
            let process = call.host.owned(&owner, &handle)?;
            if process.ended().is_none() {
                let record = call.command_record(CommandAct::Cancel, &process.name, 0, 0, &handle);
                call.host.record(record).await?;
                call.core.mark_effect();
                process.cancel();
                let left = call.core.deadline.saturating_duration_since(std::time::Instant::now());
                process.wait(left).await;
            }
            Ok(status(&process))
        })
    }
}
