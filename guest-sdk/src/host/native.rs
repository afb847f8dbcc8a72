//! The native backend: every helper is answered by the thread's installed
//! [`MockHost`](crate::testing::MockHost). Calling a helper with no mock
//! installed panics with a message saying so, which is what a unit test
//! wants to see.

use super::{Context, FileInfo, HostError, Level, Request, Response};
use crate::testing::{class_of, with_mock};

pub fn log(level: Level, message: &str) {
    with_mock(|m| m.logs.push((level, message.to_string())))
}

pub fn context() -> Context {
    with_mock(|m| m.context.clone())
}

pub fn now_ms() -> u64 {
    with_mock(|m| m.now_ms)
}

pub fn setting(name: &str) -> Option<String> {
    with_mock(|m| m.settings.get(name).cloned())
}

pub fn outbound_read(req: Request) -> Result<Response, HostError> {
    let method = req.method.to_ascii_uppercase();
    if method != "GET" && method != "HEAD" && !with_mock(|m| m.classes_as_read(&req)) {
        return Err(HostError::Denied(format!("{method} is a write operation; use outbound::write")));
    }
    with_mock(|m| m.send(class_of("outbound-read"), req))
}

pub fn outbound_write(req: Request) -> Result<Response, HostError> {
    with_mock(|m| m.send(class_of("outbound-write"), req))
}

pub fn stat(root: &str, path: &str) -> Result<FileInfo, HostError> {
    with_mock(|m| m.files(class_of("files-read"))?.stat(root, path))
}

pub fn list(root: &str, path: &str, limit: u32) -> Result<Vec<FileInfo>, HostError> {
    with_mock(|m| m.files(class_of("files-read"))?.list(root, path, limit))
}

pub fn sha256(root: &str, path: &str) -> Result<String, HostError> {
    with_mock(|m| m.files(class_of("files-read"))?.sha256(root, path))
}

pub fn mkdir(root: &str, path: &str) -> Result<(), HostError> {
    with_mock(|m| m.files(class_of("files-write"))?.mkdir(root, path))
}

pub fn hardlink(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<(), HostError> {
    with_mock(|m| m.files(class_of("files-write"))?.hardlink(from_root, from, to_root, to))
}

pub fn copy(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<u64, HostError> {
    with_mock(|m| m.files(class_of("files-write"))?.copy(from_root, from, to_root, to))
}

pub fn move_file(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<(), HostError> {
    with_mock(|m| m.files(class_of("files-write"))?.move_file(from_root, from, to_root, to))
}

pub fn library_query(name: &str, params: &str) -> Result<String, HostError> {
    with_mock(|m| m.domain(class_of("library"), "library", name, params))
}

pub fn drafts_create(kind: &str, draft: &str) -> Result<String, HostError> {
    with_mock(|m| m.domain(class_of("drafts"), "drafts", kind, draft))
}

pub fn records_transition(name: &str, args: &str) -> Result<String, HostError> {
    with_mock(|m| m.domain(class_of("records"), "records", name, args))
}

/// `commands` and `commands-read`, answered by the mock's command handler.
pub mod commands {
    use crate::commands::{CommandRequest, CommandStatus};
    use crate::host::HostError;
    use crate::testing::{CommandCall, class_of, with_mock};

    pub fn run(r: &CommandRequest) -> Result<CommandStatus, HostError> {
        with_mock(|m| m.command(class_of("commands"), CommandCall::Run(r.clone()))?.status())
    }

    pub fn start(r: &CommandRequest) -> Result<CommandStatus, HostError> {
        with_mock(|m| m.command(class_of("commands"), CommandCall::Start(r.clone()))?.status())
    }

    pub fn cancel(handle: &str) -> Result<CommandStatus, HostError> {
        with_mock(|m| m.command(class_of("commands"), CommandCall::Cancel(handle.into()))?.status())
    }

    pub fn status(handle: &str) -> Result<CommandStatus, HostError> {
        with_mock(|m| m.command(class_of("commands-read"), CommandCall::Status(handle.into()))?.status())
    }

    pub fn read_output(handle: &str, offset: u64, limit: u32) -> Result<Vec<u8>, HostError> {
        let call = CommandCall::ReadOutput { handle: handle.into(), offset, limit };
        with_mock(|m| m.command(class_of("commands-read"), call)?.output())
    }

    pub fn wait(handle: &str, timeout_ms: u32) -> Result<CommandStatus, HostError> {
        with_mock(|m| {
            m.command(class_of("commands-read"), CommandCall::Wait { handle: handle.into(), timeout_ms })?.status()
        })
    }
}
