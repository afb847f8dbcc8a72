//! Typed helpers for every `capstan:host` import. On `wasm32` they call the
//! real imports; elsewhere they call the thread's [`crate::testing::MockHost`].
//! Only the helpers a capability calls end up as imports of its component,
//! so a read-only capability that never calls a write helper stays read-only.

#[cfg(target_arch = "wasm32")]
#[path = "host/wasm.rs"]
mod backend;
#[cfg(not(target_arch = "wasm32"))]
#[path = "host/native.rs"]
mod backend;

/// The commands helpers' backend ([`crate::commands`]).
pub(crate) use backend::commands as commands_backend;

/// Why a host import refused or failed; mirrors the WIT `host-error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    Denied(String),
    Invalid(String),
    NotFound(String),
    Unavailable(String),
    TooLarge(String),
    Conflict(String),
    Internal(String),
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for HostError {}

/// Log severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// Who started the call: the host's actor kinds, from the contract both
/// sides compile (`as_str` gives the name the host writes).
pub use capstan_contract::ActorKind as Actor;

/// Facts about the current call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    pub capability_id: String,
    pub run_id: Option<String>,
    pub task_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub actor: Actor,
    pub grant: String,
    pub mode: String,
}

/// A request to a named outbound service.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    pub service: String,
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

impl Request {
    /// A GET of `path` on `service`.
    pub fn get(service: &str, path: &str) -> Self {
        Request { service: service.into(), method: "GET".into(), path: path.into(), ..Request::default() }
    }

    /// A GET of a link `service` gave out (an indexer's download link):
    /// the host sends it only when it is on the service's own address, and
    /// fills a query parameter whose value is `[redacted]` with the
    /// service's key.
    pub fn link(service: &str, url: &str) -> Self {
        Request::get(service, url)
    }

    /// Adds a query parameter.
    pub fn query(mut self, name: &str, value: impl Into<String>) -> Self {
        self.query.push((name.into(), value.into()));
        self
    }
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The body as (lossy) UTF-8.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, HostError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| HostError::Invalid(format!("response is not the expected JSON: {e}")))
    }
}

/// A file or directory under a named root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    pub path: String,
    pub is_dir: bool,
    pub size: u64,
    pub modified_ms: u64,
}

/// Writes a line to the host log (read class).
pub fn log(level: Level, message: &str) {
    backend::log(level, message)
}

/// The current call's context (read class).
pub fn context() -> Context {
    backend::context()
}

/// Wall-clock milliseconds since the Unix epoch (read class).
pub fn now_ms() -> u64 {
    backend::now_ms()
}

/// The operator's non-secret setting for this capability (read class).
pub fn setting(name: &str) -> Option<String> {
    backend::setting(name)
}

/// Outbound requests to named services.
pub mod outbound {
    use super::{HostError, Request, Response, backend};

    /// Sends a request the service classes as read (read class).
    pub fn read(req: Request) -> Result<Response, HostError> {
        backend::outbound_read(req)
    }

    /// Sends any request (execute class).
    pub fn write(req: Request) -> Result<Response, HostError> {
        backend::outbound_write(req)
    }
}

/// Files under the operator's named roots.
pub mod files {
    use super::{FileInfo, HostError, backend};

    /// Stat of one path (read class).
    pub fn stat(root: &str, path: &str) -> Result<FileInfo, HostError> {
        backend::stat(root, path)
    }

    /// Direct entries of a directory, sorted by name (read class).
    pub fn list(root: &str, path: &str, limit: u32) -> Result<Vec<FileInfo>, HostError> {
        backend::list(root, path, limit)
    }

    /// SHA-256 of a file as hex (read class).
    pub fn sha256(root: &str, path: &str) -> Result<String, HostError> {
        backend::sha256(root, path)
    }

    /// Creates a directory and its parents (execute class).
    pub fn mkdir(root: &str, path: &str) -> Result<(), HostError> {
        backend::mkdir(root, path)
    }

    /// Hard-links a file (execute class).
    pub fn hardlink(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<(), HostError> {
        backend::hardlink(from_root, from, to_root, to)
    }

    /// Copies a file, returning the bytes copied (execute class).
    pub fn copy(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<u64, HostError> {
        backend::copy(from_root, from, to_root, to)
    }

    /// Moves a file (execute class).
    pub fn move_file(from_root: &str, from: &str, to_root: &str, to: &str) -> Result<(), HostError> {
        backend::move_file(from_root, from, to_root, to)
    }
}

/// The domain store. [`call`] runs one of the contract's operations
/// (`capstan_contract::ops`) with typed arguments and answer; `query`,
/// `create_draft` and `transition` take any name with JSON, for operations
/// the contract does not know yet.
pub mod domain {
    use capstan_contract::ops::{Carrier, Operation};

    use super::{HostError, backend};

    /// Runs the domain operation `O` (`call::<PlanGet>(&ById::new(id))`),
    /// through the interface that carries it.
    pub fn call<O: Operation>(args: &O::Args) -> Result<O::Answer, HostError> {
        let text =
            serde_json::to_string(args).map_err(|e| HostError::Invalid(format!("arguments of {}: {e}", O::NAME)))?;
        let answer = match O::CARRIER {
            Carrier::Library => backend::library_query(O::NAME, &text)?,
            Carrier::Drafts => backend::drafts_create(O::NAME, &text)?,
            Carrier::Records => backend::records_transition(O::NAME, &text)?,
        };
        serde_json::from_str(&answer)
            .map_err(|e| HostError::Internal(format!("the host's answer to {} is not its contract's: {e}", O::NAME)))
    }

    /// A named query with JSON parameters (read class).
    pub fn query(name: &str, params: &serde_json::Value) -> Result<serde_json::Value, HostError> {
        decode(backend::library_query(name, &params.to_string())?)
    }

    /// Creates a draft record (propose class).
    pub fn create_draft(kind: &str, draft: &serde_json::Value) -> Result<serde_json::Value, HostError> {
        decode(backend::drafts_create(kind, &draft.to_string())?)
    }

    /// Applies a state transition (execute class).
    pub fn transition(name: &str, args: &serde_json::Value) -> Result<serde_json::Value, HostError> {
        decode(backend::records_transition(name, &args.to_string())?)
    }

    fn decode(text: String) -> Result<serde_json::Value, HostError> {
        serde_json::from_str(&text).map_err(|e| HostError::Internal(format!("host answered bad JSON: {e}")))
    }
}
