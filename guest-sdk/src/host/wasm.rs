//! The wasm32 backend: each helper calls one generated import. Nothing here
//! is referenced unless a capability calls the helper, so unused imports are
//! pruned from the component.

use super::{Actor, Context, FileInfo, HostError, Level, Request, Response};
use crate::bindings::capstan::host as h;

fn err(e: h::types::HostError) -> HostError {
    use h::types::HostError as E;
    match e {
        E::Denied(m) => HostError::Denied(m),
        E::Invalid(m) => HostError::Invalid(m),
        E::NotFound(m) => HostError::NotFound(m),
        E::Unavailable(m) => HostError::Unavailable(m),
        E::TooLarge(m) => HostError::TooLarge(m),
        E::Conflict(m) => HostError::Conflict(m),
        E::Internal(m) => HostError::Internal(m),
    }
}

pub fn log(level: Level, message: &str) {
    use h::log::Level as L;
    let level = match level {
        Level::Trace => L::Trace,
        Level::Debug => L::Debug,
        Level::Info => L::Info,
        Level::Warn => L::Warn,
        Level::Error => L::Error,
    };
    h::log::write(level, message)
}

pub fn context() -> Context {
    use h::invocation::ActorKind as A;
    let c = h::invocation::context();
    Context {
        capability_id: c.capability_id,
        run_id: c.run_id,
        task_id: c.task_id,
        idempotency_key: c.idempotency_key,
        actor: match c.actor {
            A::ConsoleAdmin => Actor::ConsoleAdmin,
            A::ApiKey => Actor::ApiKey,
            A::Agent => Actor::Agent,
            A::Subagent => Actor::Subagent,
            A::Task => Actor::Task,
            A::Cli => Actor::Cli,
        },
        grant: c.grant,
        mode: c.mode,
    }
}

pub fn now_ms() -> u64 {
    h::invocation::now_ms()
}

pub fn setting(name: &str) -> Option<String> {
    h::invocation::setting(name)
}

fn pairs(items: Vec<(String, String)>) -> Vec<h::types::Pair> {
    items.into_iter().map(|(name, value)| h::types::Pair { name, value }).collect()
}

fn request(req: Request) -> h::types::Request {
    h::types::Request {
        service: req.service,
        method: req.method,
        path: req.path,
        query: pairs(req.query),
        headers: pairs(req.headers),
        body: req.body,
    }
}

fn response(r: h::types::Response) -> Response {
    Response { status: r.status, headers: r.headers.into_iter().map(|p| (p.name, p.value)).collect(), body: r.body }
}

pub fn outbound_read(req: Request) -> Result<Response, HostError> {
    h::outbound_read::send(&request(req)).map(response).map_err(err)
}

pub fn outbound_write(req: Request) -> Result<Response, HostError> {
    h::outbound_write::send(&request(req)).map(response).map_err(err)
}

fn info(f: h::types::FileInfo) -> FileInfo {
    FileInfo { path: f.path, is_dir: f.is_dir, size: f.size, modified_ms: f.modified_ms }
}

pub fn stat(root: &str, path: &str) -> Result<FileInfo, HostError> {
    h::files_read::stat(root, path).map(info).map_err(err)
}

pub fn list(root: &str, path: &str, limit: u32) -> Result<Vec<FileInfo>, HostError> {
    h::files_read::list(root, path, limit).map(|v| v.into_iter().map(info).collect()).map_err(err)
}

pub fn sha256(root: &str, path: &str) -> Result<String, HostError> {
    h::files_read::sha256(root, path).map_err(err)
}

pub fn mkdir(root: &str, path: &str) -> Result<(), HostError> {
    h::files_write::mkdir(root, path).map_err(err)
}

pub fn hardlink(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<(), HostError> {
    h::files_write::hardlink(from_root, from, to_root, to).map_err(err)
}

pub fn copy(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<u64, HostError> {
    h::files_write::copy(from_root, from, to_root, to).map_err(err)
}

pub fn move_file(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<(), HostError> {
    h::files_write::move_(from_root, from, to_root, to).map_err(err)
}

pub fn library_query(name: &str, params: &str) -> Result<String, HostError> {
    h::library::query(name, params).map_err(err)
}

pub fn drafts_create(kind: &str, draft: &str) -> Result<String, HostError> {
    h::drafts::create(kind, draft).map_err(err)
}

pub fn records_transition(name: &str, args: &str) -> Result<String, HostError> {
    h::records::transition(name, args).map_err(err)
}

/// `commands` and `commands-read`.
pub mod commands {
    use super::{err, h, pairs};
    use crate::commands::{CommandRequest, CommandStatus, ExecutionOutcome};
    use crate::host::HostError;

    fn request(r: &CommandRequest) -> h::types::CommandRequest {
        h::types::CommandRequest {
            name: r.name.clone(),
            args: r.args.clone(),
            env: pairs(r.env.clone()),
            cwd: r.cwd.clone(),
            timeout_sec: r.timeout_sec,
        }
    }

    fn to_status(s: h::types::CommandStatus) -> CommandStatus {
        use h::types::ExecutionOutcome as O;
        CommandStatus {
            handle: s.handle,
            name: s.name,
            outcome: match s.outcome {
                O::Running => ExecutionOutcome::Running,
                O::Exited => ExecutionOutcome::Exited,
                O::KilledAfterTimeout => ExecutionOutcome::KilledAfterTimeout,
                O::Cancelled => ExecutionOutcome::Cancelled,
                O::Unknown => ExecutionOutcome::Unknown,
            },
            exit_code: s.exit_code,
            timed_out: s.timed_out,
            duration_ms: s.duration_ms,
            output_bytes: s.output_bytes,
            output_truncated: s.output_truncated,
            output_head: s.output_head,
            output_tail: s.output_tail,
            output_file: s.output_file,
        }
    }

    pub fn run(r: &CommandRequest) -> Result<CommandStatus, HostError> {
        h::commands::run(&request(r)).map(to_status).map_err(err)
    }

    pub fn start(r: &CommandRequest) -> Result<CommandStatus, HostError> {
        h::commands::start(&request(r)).map(to_status).map_err(err)
    }

    pub fn cancel(handle: &str) -> Result<CommandStatus, HostError> {
        h::commands::cancel(handle).map(to_status).map_err(err)
    }

    pub fn status(handle: &str) -> Result<CommandStatus, HostError> {
        h::commands_read::status(handle).map(to_status).map_err(err)
    }

    pub fn read_output(handle: &str, offset: u64, limit: u32) -> Result<Vec<u8>, HostError> {
        h::commands_read::read_output(handle, offset, limit).map_err(err)
    }

    pub fn wait(handle: &str, timeout_ms: u32) -> Result<CommandStatus, HostError> {
        h::commands_read::wait(handle, timeout_ms).map(to_status).map_err(err)
    }
}
