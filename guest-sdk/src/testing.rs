//! A native mock host for unit-testing capability logic with `cargo test`.
//!
//! Build a [`MockHost`], give it canned service answers, file roots and
//! domain handlers, [`MockHost::install`] it on the test thread, then call
//! [`invoke`] with JSON input exactly as the real host would. The mock
//! enforces the same effect classes as the host: with a `read` grant, write
//! helpers answer `denied`.

#[path = "testing/files.rs"]
mod files;
#[path = "testing/records.rs"]
pub mod records;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;

use crate::commands::{CommandRequest, CommandStatus};
use crate::host::{Actor, Context, HostError, Level, Request, Response};
use crate::{Capability, Failure};

pub(crate) use files::MockFiles;

/// Effect classes, lowest first: the host's, from the contract.
pub use capstan_contract::EffectClass as Class;

/// The class of `capstan:host` interface `name` (`files-write`, ...), from
/// the host's effect table (the highest when it is not listed, so a mistake
/// only refuses).
pub(crate) fn class_of(name: &str) -> Class {
    capstan_contract::effects::interface_class(&format!("capstan:host/{name}"))
}

type ServiceHandler = Box<dyn FnMut(&Request) -> Result<Response, HostError>>;
type DomainHandler = Box<dyn FnMut(&str, &str, &serde_json::Value) -> Result<serde_json::Value, HostError>>;
type CommandHandler = Box<dyn FnMut(&CommandCall) -> Result<CommandAnswer, HostError>>;

/// A `commands` / `commands-read` call the mock is asked to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandCall {
    Run(CommandRequest),
    Start(CommandRequest),
    Cancel(String),
    Status(String),
    ReadOutput { handle: String, offset: u64, limit: u32 },
    Wait { handle: String, timeout_ms: u32 },
}

/// What the mock's command handler answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandAnswer {
    Status(CommandStatus),
    Output(Vec<u8>),
}

impl CommandAnswer {
    pub(crate) fn status(self) -> Result<CommandStatus, HostError> {
        match self {
            CommandAnswer::Status(s) => Ok(s),
            CommandAnswer::Output(_) => Err(HostError::Internal("the mock answered output, not a status".into())),
        }
    }

    pub(crate) fn output(self) -> Result<Vec<u8>, HostError> {
        match self {
            CommandAnswer::Output(o) => Ok(o),
            CommandAnswer::Status(_) => Err(HostError::Internal("the mock answered a status, not output".into())),
        }
    }
}

/// The mock host: what the capability sees through [`crate::host`].
pub struct MockHost {
    pub context: Context,
    pub grant: Class,
    pub now_ms: u64,
    pub settings: HashMap<String, String>,
    /// Every log line the capability wrote.
    pub logs: Vec<(Level, String)>,
    /// Every outbound request the capability sent, in order.
    pub requests: Vec<Request>,
    services: HashMap<String, ServiceHandler>,
    roots: HashMap<String, PathBuf>,
    domain: Option<DomainHandler>,
    commands: Option<CommandHandler>,
    /// Every command call the capability made, in order.
    pub command_calls: Vec<CommandCall>,
    /// Requests other than GET and HEAD a service's operation table would
    /// class as reads: (service, method, path prefix, RPC methods).
    reads: Vec<(String, String, String, Vec<String>)>,
}

thread_local! {
    static MOCK: RefCell<Option<MockHost>> = const { RefCell::new(None) };
}

pub(crate) fn with_mock<R>(f: impl FnOnce(&mut MockHost) -> R) -> R {
    MOCK.with(|cell| {
        let mut slot = cell.borrow_mut();
        let mock = slot.as_mut().expect("no MockHost installed on this thread: call MockHost::install() first");
        f(mock)
    })
}

impl MockHost {
    /// A mock for capability `id` with an execute grant and nothing configured.
    pub fn new(id: &str) -> Self {
        MockHost {
            context: Context {
                capability_id: id.to_string(),
                run_id: None,
                task_id: None,
                idempotency_key: None,
                actor: Actor::Cli,
                grant: "execute".into(),
                mode: "execute".into(),
            },
            grant: Class::Execute,
            now_ms: 1_700_000_000_000,
            settings: HashMap::new(),
            logs: Vec::new(),
            requests: Vec::new(),
            services: HashMap::new(),
            roots: HashMap::new(),
            domain: None,
            commands: None,
            command_calls: Vec::new(),
            reads: Vec::new(),
        }
    }

    /// Classes `method` requests to `service` under `path_prefix` as reads,
    /// as an operation table rule would; with `rpc_methods`, only bodies
    /// whose JSON `method` is one of them.
    pub fn with_read_operation(mut self, service: &str, method: &str, path_prefix: &str, rpc_methods: &[&str]) -> Self {
        let rpc = rpc_methods.iter().map(|m| m.to_string()).collect();
        self.reads.push((service.into(), method.to_ascii_uppercase(), path_prefix.into(), rpc));
        self
    }

    /// Whether a request other than GET or HEAD is a read here.
    pub(crate) fn classes_as_read(&self, req: &Request) -> bool {
        let named = || -> Option<String> {
            let body: serde_json::Value = serde_json::from_slice(req.body.as_deref()?).ok()?;
            body["method"].as_str().map(str::to_string)
        };
        self.reads.iter().any(|(service, method, prefix, rpc)| {
            *service == req.service
                && method.eq_ignore_ascii_case(&req.method)
                && req.path.starts_with(prefix.as_str())
                && (rpc.is_empty() || named().is_some_and(|m| rpc.contains(&m)))
        })
    }

    /// Limits the call to `class`, as the host's grant would.
    pub fn with_grant(mut self, class: Class) -> Self {
        self.grant = class;
        self.context.grant = format!("{class:?}").to_lowercase();
        self
    }

    /// Sets a non-secret setting.
    pub fn with_setting(mut self, name: &str, value: &str) -> Self {
        self.settings.insert(name.into(), value.into());
        self
    }

    /// Answers requests to `service` with `handler`.
    pub fn with_service(
        mut self,
        service: &str,
        handler: impl FnMut(&Request) -> Result<Response, HostError> + 'static,
    ) -> Self {
        self.services.insert(service.into(), Box::new(handler));
        self
    }

    /// Maps root `name` to a real directory (use a temporary one).
    pub fn with_root(mut self, name: &str, dir: impl Into<PathBuf>) -> Self {
        self.roots.insert(name.into(), dir.into());
        self
    }

    /// Answers `library`, `drafts` and `records` calls: the handler gets the
    /// interface name, the query/kind/transition name and the JSON argument.
    pub fn with_domain(
        mut self,
        handler: impl FnMut(&str, &str, &serde_json::Value) -> Result<serde_json::Value, HostError> + 'static,
    ) -> Self {
        self.domain = Some(Box::new(handler));
        self
    }

    /// Answers `commands` and `commands-read` calls.
    pub fn with_commands(
        mut self,
        handler: impl FnMut(&CommandCall) -> Result<CommandAnswer, HostError> + 'static,
    ) -> Self {
        self.commands = Some(Box::new(handler));
        self
    }

    /// Installs the mock on this thread, replacing any earlier one.
    pub fn install(self) {
        MOCK.with(|cell| *cell.borrow_mut() = Some(self));
    }

    /// Removes and returns the installed mock, to inspect logs and requests.
    pub fn take() -> Option<MockHost> {
        MOCK.with(|cell| cell.borrow_mut().take())
    }

    fn check(&self, needed: Class, what: &str) -> Result<(), HostError> {
        if needed > self.grant {
            return Err(HostError::Denied(format!(
                "{what} needs {needed:?} but this call's grant is {:?}",
                self.grant
            )));
        }
        Ok(())
    }

    pub(crate) fn send(&mut self, class: Class, req: Request) -> Result<Response, HostError> {
        self.check(class, "outbound request")?;
        self.requests.push(req.clone());
        let handler = self
            .services
            .get_mut(&req.service)
            .ok_or_else(|| HostError::NotFound(format!("service {} is not configured", req.service)))?;
        handler(&req)
    }

    pub(crate) fn files(&self, class: Class) -> Result<MockFiles<'_>, HostError> {
        self.check(class, "file access")?;
        Ok(MockFiles { roots: &self.roots })
    }

    pub(crate) fn domain(&mut self, class: Class, iface: &str, name: &str, arg: &str) -> Result<String, HostError> {
        self.check(class, iface)?;
        let arg: serde_json::Value =
            serde_json::from_str(arg).map_err(|e| HostError::Invalid(format!("bad JSON: {e}")))?;
        let handler =
            self.domain.as_mut().ok_or_else(|| HostError::Unavailable("no domain handler in this mock".into()))?;
        handler(iface, name, &arg).map(|v| v.to_string())
    }
}

impl MockHost {
    pub(crate) fn command(&mut self, class: Class, call: CommandCall) -> Result<CommandAnswer, HostError> {
        self.check(class, "commands")?;
        self.command_calls.push(call.clone());
        let handler = self
            .commands
            .as_mut()
            .ok_or_else(|| HostError::NotFound("no command is configured in this mock".into()))?;
        handler(&call)
    }
}

/// What [`invoke`] returns: the status and output JSON, as the host sees them.
#[derive(Debug, Clone, PartialEq)]
pub enum Called {
    Succeeded(serde_json::Value),
    Pending(serde_json::Value),
}

/// Calls capability `C` with `input` through the same glue the component
/// export uses (JSON in, JSON out), against the installed mock.
pub fn invoke<C: Capability>(input: serde_json::Value) -> Result<Called, Failure> {
    use crate::bindings::capstan::capability::types as wit;
    let to_failure = |f: wit::Failure| match f {
        wit::Failure::InvalidInput(m) => Failure::InvalidInput(m),
        wit::Failure::NotFound(m) => Failure::NotFound(m),
        wit::Failure::Conflict(m) => Failure::Conflict(m),
        wit::Failure::Denied(m) => Failure::Denied(m),
        wit::Failure::Unavailable(m) => Failure::Unavailable(m),
        wit::Failure::Internal(m) => Failure::Internal(m),
    };
    let outcome = crate::__invoke::<C>(&input.to_string()).map_err(to_failure)?;
    let output: serde_json::Value =
        serde_json::from_str(&outcome.output).map_err(|e| Failure::Internal(format!("output is not JSON: {e}")))?;
    Ok(match outcome.status {
        wit::OutcomeStatus::Succeeded => Called::Succeeded(output),
        wit::OutcomeStatus::Pending => Called::Pending(output),
    })
}

/// The descriptor capability `C` would report, with its generated schemas.
pub fn descriptor<C: Capability>() -> crate::bindings::capstan::capability::types::Descriptor {
    crate::__describe::<C>()
}
