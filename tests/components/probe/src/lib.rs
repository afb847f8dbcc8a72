//! Test component `test.probe` (label execute): does whatever its input asks
//! — misbehave, touch host imports, print — so the suites can show that the
//! host contains each behaviour and keeps serving.

use capstan_sdk::host::{self, Level, Request, files, outbound};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// Loops forever.
    Spin,
    /// Allocates until memory runs out.
    Alloc,
    /// Reads /etc/passwd with std::fs.
    Passwd,
    /// Sends a GET through outbound-read.
    Read {
        service: String,
        path: String,
        #[serde(default)]
        query: Vec<(String, String)>,
    },
    /// Sends a request through outbound-write.
    Write { service: String, method: String, path: String },
    /// Creates a directory through files-write.
    Mkdir { root: String, path: String },
    /// Stats a path through files-read.
    Stat { root: String, path: String },
    /// Copies a file through files-write.
    Copy { root: String, from: String, to: String },
    /// Returns an output of about `bytes` bytes.
    Big { bytes: usize },
    /// Panics.
    Panic,
    /// Returns the call context and a setting, after logging and printing.
    Context,
    /// Creates a directory, then loops forever (effect, then deadline).
    MkdirThenSpin { root: String, path: String },
    /// Sends any request through outbound-read (`import: read`) or
    /// outbound-write, and returns everything the component got back.
    Send {
        import: String,
        service: String,
        method: String,
        path: String,
        #[serde(default)]
        query: Vec<(String, String)>,
        #[serde(default)]
        headers: Vec<(String, String)>,
        #[serde(default)]
        body: Option<String>,
    },
    /// Hashes a file through files-read.
    Sha256 { root: String, path: String },
    /// Lists a directory through files-read.
    List { root: String, path: String, limit: u32 },
    /// Moves, hard-links or copies between roots through files-write.
    Place { op: String, from_root: String, from: String, to_root: String, to: String },
    /// Writes `lines` log lines of `bytes` bytes each, or `message` once.
    Log {
        #[serde(default)]
        lines: u32,
        #[serde(default)]
        bytes: usize,
        #[serde(default)]
        message: Option<String>,
    },
    /// Fails with a message of `bytes` bytes.
    FailHuge { bytes: usize },
    /// Asks `times` times for a service it did not declare (each denied).
    DenyLoop { times: u32 },
    /// Creates a draft of `kind` through the drafts import and returns what
    /// the host answered, or its refusal as `{"refused": message}`.
    Draft { kind: String, draft: serde_json::Value },
    /// Sends a request through outbound-write, then fails with `fail`
    /// (`unavailable`, `conflict`, ...) whatever came back.
    SendThenFail { service: String, method: String, path: String, fail: String },
    /// Creates a draft through the drafts import, then fails `unavailable`
    /// whatever came back.
    DraftThenFail { kind: String, draft: serde_json::Value },
    /// Runs a `library` query and returns what the host answered.
    Query { name: String, params: serde_json::Value },
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Output {
    pub result: serde_json::Value,
}

pub struct Probe;

fn ok(result: serde_json::Value) -> Result<Outcome<Output>, Failure> {
    Ok(Outcome::Succeeded(Output { result }))
}

impl Capability for Probe {
    type Input = Action;
    type Output = Output;
    const META: Meta = Meta {
        id: "test.probe",
        version: 1,
        label: Label::Execute,
        summary: "Test component that does what its input asks",
        description: "Used by the end-to-end suites only.",
        tags: &["test"],
        aliases: &[],
        replay: Replay::Never,
        services: &["echo"],
    };

    fn invoke(action: Action) -> Result<Outcome<Output>, Failure> {
        match action {
            Action::Spin => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            Action::Alloc => {
                let mut keep: Vec<Vec<u8>> = Vec::new();
                loop {
                    keep.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&keep);
                }
            }
            Action::Passwd => match std::fs::read_to_string("/etc/passwd") {
                Ok(text) => ok(serde_json::json!(text)),
                Err(e) => Err(Failure::Unavailable(format!("cannot read /etc/passwd: {e}"))),
            },
            Action::Read { service, path, query } => {
                let mut req = Request::get(&service, &path);
                req.query = query;
                let resp = outbound::read(req)?;
                ok(serde_json::json!({ "status": resp.status, "body": resp.text() }))
            }
            Action::Write { service, method, path } => {
                let req = Request { service, method, path, ..Request::default() };
                let resp = outbound::write(req)?;
                ok(serde_json::json!({ "status": resp.status, "body": resp.text() }))
            }
            Action::Mkdir { root, path } => {
                files::mkdir(&root, &path)?;
                ok(serde_json::json!("created"))
            }
            Action::Stat { root, path } => {
                let info = files::stat(&root, &path)?;
                ok(serde_json::json!({ "size": info.size, "isDir": info.is_dir }))
            }
            Action::Copy { root, from, to } => {
                let n = files::copy(&root, &from, &root, &to)?;
                ok(serde_json::json!(n))
            }
            Action::Big { bytes } => ok(serde_json::json!("x".repeat(bytes))),
            Action::Panic => panic!("probe was asked to panic"),
            Action::Context => {
                host::log(Level::Info, "probe context requested");
                println!("probe says hello on stdout");
                let c = host::context();
                ok(serde_json::json!({
                    "capability": c.capability_id,
                    "grant": c.grant,
                    "mode": c.mode,
                    "runId": c.run_id,
                    "setting": host::setting("greeting"),
                    "env": std::env::vars().count(),
                }))
            }
            Action::Send { import, service, method, path, query, headers, body } => {
                let req = Request { service, method, path, query, headers, body: body.map(String::into_bytes) };
                let resp = if import == "read" { outbound::read(req)? } else { outbound::write(req)? };
                ok(serde_json::json!({ "status": resp.status, "headers": resp.headers, "body": resp.text() }))
            }
            Action::Sha256 { root, path } => ok(serde_json::json!(files::sha256(&root, &path)?)),
            Action::List { root, path, limit } => {
                let names: Vec<String> = files::list(&root, &path, limit)?.into_iter().map(|f| f.path).collect();
                ok(serde_json::json!(names))
            }
            Action::Place { op, from_root, from, to_root, to } => {
                match op.as_str() {
                    "move" => files::move_file(&from_root, &from, &to_root, &to)?,
                    "hardlink" => files::hardlink(&from_root, &from, &to_root, &to)?,
                    _ => {
                        files::copy(&from_root, &from, &to_root, &to)?;
                    }
                }
                ok(serde_json::json!(op))
            }
            Action::Log { lines, bytes, message } => {
                if let Some(message) = message {
                    host::log(Level::Warn, &message);
                }
                let line = "l".repeat(bytes);
                for _ in 0..lines {
                    host::log(Level::Info, &line);
                }
                ok(serde_json::json!("logged"))
            }
            Action::FailHuge { bytes } => Err(Failure::Unavailable("f".repeat(bytes))),
            Action::DenyLoop { times } => {
                let denied = (0..times).filter(|_| outbound::read(Request::get("undeclared", "/x")).is_err()).count();
                ok(serde_json::json!(denied))
            }
            Action::Draft { kind, draft } => match host::domain::create_draft(&kind, &draft) {
                Ok(answer) => ok(answer),
                Err(e) => ok(serde_json::json!({ "refused": e.to_string() })),
            },
            Action::SendThenFail { service, method, path, fail } => {
                let sent = outbound::write(Request { service, method, path, ..Request::default() });
                let said = match sent {
                    Ok(resp) => format!("the service answered {}", resp.status),
                    Err(e) => format!("the request failed: {e}"),
                };
                Err(match fail.as_str() {
                    "conflict" => Failure::Conflict(said),
                    "invalid-input" => Failure::InvalidInput(said),
                    "internal" => Failure::Internal(said),
                    _ => Failure::Unavailable(said),
                })
            }
            Action::Query { name, params } => match host::domain::query(&name, &params) {
                Ok(answer) => ok(answer),
                Err(e) => ok(serde_json::json!({ "refused": e.to_string() })),
            },
            Action::DraftThenFail { kind, draft } => {
                let said = match host::domain::create_draft(&kind, &draft) {
                    Ok(_) => "drafted".to_string(),
                    Err(e) => format!("refused: {e}"),
                };
                Err(Failure::Unavailable(said))
            }
            Action::MkdirThenSpin { root, path } => {
                files::mkdir(&root, &path)?;
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
        }
    }
}

capstan_sdk::export_capability!(Probe);
