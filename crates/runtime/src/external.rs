//! Capabilities that are not components: tools an external server offers
//! (an MCP server's), which the host calls itself. They enter the registry
//! as [`Loaded`] entries like any component, so every caller meets them
//! through the same gate, grants, ledger and audit; what differs is only
//! how a call is carried out. The whole call is the effect, of the class
//! the operator gave the tool: the server's own claims decide nothing.
//! Which tools exist is told to the runtime by whoever talks to the
//! servers ([`Runtime::set_external_tools`]); a change the operator has not
//! accepted is held by the rescan (see `scan`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use futures_util::future::BoxFuture;

use super::Runtime;
use super::descriptor::Descriptor;
use super::effects::{EffectClass, ImportSummary};
use super::grant::{Denial, Grant};
use super::invoke::{CallOutcome, CallReport, Failure, TrapKind};
use super::loader::{Code, Loaded, Source};
use super::registry::{Held, Refusal, Snapshot};
use super::scan::ScanReport;
use super::state::State;
use super::text;
use capstan_config::CallLimits;

/// How an external tool's call ended.
#[derive(Debug, Clone)]
pub enum ExternalAnswer {
    /// The tool answered; its output as JSON.
    Done(serde_json::Value),
    /// The server said the tool failed (`isError`), with its words.
    ToolError(String),
    /// The request never reached the server (not connected, refused).
    NotSent(String),
    /// The request was sent and no answer came (the connection broke, the
    /// server's deadline passed): the tool may or may not have acted.
    NoAnswer(String),
}

/// One tool on an external server.
pub trait ExternalTool: Send + Sync {
    /// Calls the tool with `input`; the host's limits and stop signal are
    /// applied around it by the caller.
    fn call(&self, input: serde_json::Value) -> BoxFuture<'_, ExternalAnswer>;
    /// How long a call may wait for the server (its operator's setting).
    fn deadline(&self) -> std::time::Duration;
}

/// The tools one server offers now, and those refused with why.
#[derive(Default, Clone)]
pub struct ExternalSet {
    pub tools: Vec<Arc<Loaded>>,
    pub refused: Vec<Refusal>,
}

impl ExternalSet {
    /// What the registry is built from: ids, digests and refusals.
    fn shape(&self) -> (Vec<(String, String)>, Vec<Refusal>) {
        let tools = self.tools.iter().map(|t| (t.descriptor.id.clone(), t.digest.clone())).collect();
        (tools, self.refused.clone())
    }
}

/// Builds the registry entry of an external tool: its descriptor (checked
/// as a component's is, schemas under the same caps), `digest` naming
/// everything the server said about it.
pub async fn external_loaded(
    descriptor: Descriptor,
    digest: String,
    server: &str,
    tool: Arc<dyn ExternalTool>,
) -> Result<Loaded, String> {
    let input_validator = super::loader::compile_schemas(&descriptor).await?;
    let imports = ImportSummary { class: descriptor.label, imports: vec![format!("mcp server {server}")] };
    Ok(Loaded {
        source: Source::External(server.to_string()),
        digest,
        imports,
        has_verifier: false,
        input_validator,
        descriptor,
        code: Code::External(tool),
    })
}

fn report(loaded: &Loaded, outcome: CallOutcome, effect_started: bool, started: Instant) -> CallReport {
    CallReport {
        capability: loaded.descriptor.id.clone(),
        version: loaded.descriptor.version,
        digest: loaded.digest.clone(),
        outcome,
        effect_started,
        denials: Vec::new(),
        elapsed_us: started.elapsed().as_micros() as u64,
        command: None,
        host_calls: Vec::new(),
        host_calls_dropped: 0,
    }
}

fn failed(kind: &str, message: &str) -> CallOutcome {
    let message = text::clip(&text::escape_controls(message), text::MAX_FAILURE).into_owned();
    CallOutcome::Failed { failure: Failure { kind: kind.into(), message } }
}

/// Calls an external tool under `grant`: refused outright when the grant
/// does not reach the tool's class, stopped with the caller, and answered
/// `unknown` when a request that could act was sent and no answer came.
pub(crate) async fn call(
    loaded: &Loaded,
    tool: &dyn ExternalTool,
    grant: Grant,
    limits: CallLimits,
    input: &str,
) -> CallReport {
    let started = Instant::now();
    let label = loaded.descriptor.label;
    if grant.max_class < label {
        let reason =
            format!("{} is classed {label}; this call may do at most {}", loaded.descriptor.id, grant.max_class);
        let mut denied = report(loaded, failed("denied", &reason), false, started);
        denied.denials.push(Denial {
            import: loaded.imports.imports.first().cloned().unwrap_or_default(),
            needed: label,
            granted: grant.max_class,
            reason,
        });
        return denied;
    }
    let input: serde_json::Value = match serde_json::from_str(input) {
        Ok(input) => input,
        Err(e) => return report(loaded, failed("invalid-input", &format!("input is not JSON: {e}")), false, started),
    };
    // A read changes nothing: however it ends, nothing is uncertain.
    let could_act = label > EffectClass::Read;
    let deadline = tool.deadline();
    let answer = tokio::select! {
        answer = tokio::time::timeout(deadline, tool.call(input)) => answer,
        () = grant.stop.stopped() => {
            let outcome = CallOutcome::Trapped {
                trap: TrapKind::Stopped,
                message: "the caller stopped the call before the server answered".into(),
            };
            return report(loaded, outcome, could_act, started);
        }
    };
    let (outcome, effect_started) = match answer {
        Err(_) => (
            CallOutcome::Trapped {
                trap: TrapKind::Deadline,
                message: "the server did not answer within the call's deadline".into(),
            },
            could_act,
        ),
        Ok(ExternalAnswer::Done(output)) => {
            let size = serde_json::to_vec(&output).map_or(0, |v| v.len() as u64);
            if size > limits.output_bytes {
                let message = format!("output of {size} bytes is over the cap of {} bytes", limits.output_bytes);
                (CallOutcome::Trapped { trap: TrapKind::OutputTooLarge, message }, could_act)
            } else {
                (CallOutcome::Succeeded { output }, could_act)
            }
        }
        // The server answered that the tool failed: a definite outcome,
        // in the server's words.
        Ok(ExternalAnswer::ToolError(text)) => {
            (failed("internal", &format!("the tool reported an error: {text}")), false)
        }
        Ok(ExternalAnswer::NotSent(why)) => (failed("unavailable", &why), false),
        Ok(ExternalAnswer::NoAnswer(why)) if could_act => {
            (CallOutcome::Trapped { trap: TrapKind::Trap, message: why }, true)
        }
        Ok(ExternalAnswer::NoAnswer(why)) => (failed("unavailable", &why), false),
    };
    report(loaded, outcome, effect_started, started)
}

/// Adds every external server's tools: offered when this data directory
/// has accepted them as they are, held otherwise (see
/// [`State::external_hold_reason`]). A held tool is not offered at all: its
/// server would run the changed tool whatever version a caller meant.
pub(super) fn add_external_tools(
    next: &mut Snapshot,
    report: &mut ScanReport,
    state: &State,
    sets: Vec<(String, ExternalSet)>,
) {
    for (server, set) in sets {
        report.refused.extend(set.refused.iter().cloned());
        next.refused.extend(set.refused);
        for tool in set.tools {
            let id = tool.descriptor.id.clone();
            if next.active.contains_key(&id) || next.held.contains_key(&id) {
                let reason = format!("two tools of MCP server {server} map to the id {id}");
                let refusal = Refusal { file: PathBuf::from(format!("mcp server {server}")), reason };
                report.refused.push(refusal.clone());
                next.refused.push(refusal);
                continue;
            }
            match state.external_hold_reason(&server, &id, &tool.digest) {
                None => {
                    next.active.insert(id, tool);
                }
                Some(reason) => {
                    next.held.insert(id, Held { candidate: tool, reason });
                }
            }
        }
    }
}

impl Runtime {
    /// Puts `set` in place as everything `server` offers now (an empty set
    /// removes it) and rebuilds the registry, holding what changed since
    /// the operator accepted the server.
    pub async fn set_external_tools(&self, server: &str, set: ExternalSet) -> anyhow::Result<()> {
        {
            let mut externals = self.externals.lock().unwrap_or_else(|e| e.into_inner());
            // A list read again and found the same changes nothing.
            if externals.get(server).map(ExternalSet::shape) == Some(set.shape()) {
                return Ok(());
            }
            if set.tools.is_empty() && set.refused.is_empty() {
                externals.remove(server);
            } else {
                externals.insert(server.to_string(), set);
            }
        }
        self.rescan(false).await.map(|_| ())
    }

    /// The external tools of every server, as last told.
    pub(super) fn external_sets(&self) -> Vec<(String, ExternalSet)> {
        let externals = self.externals.lock().unwrap_or_else(|e| e.into_inner());
        externals.iter().map(|(server, set)| (server.clone(), set.clone())).collect()
    }
}
