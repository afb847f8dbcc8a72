//! One sandboxed call: a fresh `Store` holding the grant and limits, an
//! instance from the component's `InstancePre`, the export call under an
//! epoch deadline, fuel and a memory limiter, then classification of what
//! happened into a [`CallOutcome`]. The store is dropped after every call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use wasmtime::component::InstancePre;
use wasmtime::{Engine, Store, StoreLimitsBuilder, Trap, UpdateDeadline};

use super::bindings::capstan::capability::types as wit;
use super::bindings::exports::capstan::capability::capability;
use super::call_state::{CallState, CallTarget};
use super::grant::{Denial, Grant};
use super::host::HostServices;
use super::loader::{ComponentCode, Loaded};
use super::text;
use capstan_config::CallLimits;

/// A business failure the component returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// `invalid-input`, `not-found`, `conflict`, `denied`, `unavailable`, `internal`.
    pub kind: String,
    pub message: String,
}

impl Failure {
    /// Whether the component says the call was refused, so nothing it
    /// asked for was done.
    pub fn is_refusal(&self) -> bool {
        matches!(self.kind.as_str(), "invalid-input" | "not-found" | "conflict" | "denied")
    }
}

/// Why the host stopped a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrapKind {
    Deadline,
    InstructionBound,
    MemoryCap,
    OutputTooLarge,
    Panic,
    Trap,
    /// The caller stopped waiting (an aborted run) and the call was ended.
    Stopped,
}

/// What a call produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CallOutcome {
    Succeeded { output: serde_json::Value },
    Pending { output: serde_json::Value },
    Failed { failure: Failure },
    Trapped { trap: TrapKind, message: String },
}

/// The four statuses every result carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Succeeded,
    Failed,
    Pending,
    Unknown,
}

/// Everything the host learned from one call.
#[derive(Debug, Clone, Serialize)]
pub struct CallReport {
    pub capability: String,
    pub version: u32,
    pub digest: String,
    pub outcome: CallOutcome,
    /// Whether an effect import ran before the call ended.
    pub effect_started: bool,
    pub denials: Vec<Denial>,
    pub elapsed_us: u64,
    /// How the last command the call ran or waited for ended.
    pub command: Option<super::host::CommandEnd>,
    /// Every host import the call made, when its grant asked for a record
    /// ([`Grant::recorded`]); empty otherwise.
    pub host_calls: Vec<super::host::HostCall>,
    /// Host imports past the record's cap, counted only.
    pub host_calls_dropped: u64,
}

impl CallReport {
    /// A trap after an effect started is `unknown`: something may have
    /// happened. So is a failure that is not a refusal (`unavailable`,
    /// `internal`: a timeout, a transport error, a server error): the write
    /// may have been carried out before it. A refusal (`invalid-input`,
    /// `not-found`, `conflict`, `denied`) says nothing was done. A success
    /// after a command ran (or was waited for) is the command's to decide:
    /// only an exit of its own with code 0 is a success.
    pub fn status(&self) -> Status {
        match &self.outcome {
            // What a command did is the host's to say, not the component's.
            CallOutcome::Succeeded { .. } => self.command.map_or(Status::Succeeded, |end| end.status()),
            CallOutcome::Pending { .. } => Status::Pending,
            CallOutcome::Failed { failure } if self.effect_started && !failure.is_refusal() => Status::Unknown,
            CallOutcome::Failed { .. } => Status::Failed,
            CallOutcome::Trapped { .. } if self.effect_started => Status::Unknown,
            CallOutcome::Trapped { .. } => Status::Failed,
        }
    }
}

pub(crate) fn new_store(
    engine: &Engine,
    grant: Grant,
    target: Arc<CallTarget>,
    services: Arc<HostServices>,
    limits: CallLimits,
) -> anyhow::Result<Store<CallState>> {
    let store_limits = StoreLimitsBuilder::new()
        .memory_size(limits.memory_bytes as usize)
        .trap_on_grow_failure(true)
        .instances(64)
        .build();
    let deadline = Instant::now() + Duration::from_millis(limits.deadline_ms);
    let mut store = Store::new(engine, CallState::new(grant, target, services, store_limits, deadline));
    store.limiter(|state| &mut state.limits);
    store.set_fuel(limits.fuel)?;
    // Every epoch tick the guest yields to the executor, so a busy guest
    // never starves other work on its thread (lease renewals, HTTP), and
    // past the wall-clock deadline the call is interrupted.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if Instant::now() >= deadline { Ok(UpdateDeadline::Interrupt) } else { Ok(UpdateDeadline::Yield(1)) }
    });
    Ok(store)
}

/// Calls `describe` on a component being loaded.
pub(crate) async fn describe(
    engine: &Engine,
    pre: &InstancePre<CallState>,
    exports: &capability::GuestIndices,
    grant: Grant,
    target: Arc<CallTarget>,
    services: Arc<HostServices>,
    limits: CallLimits,
) -> Result<wit::Descriptor, super::loader::LoadError> {
    use super::loader::LoadError;
    let mut store = new_store(engine, grant, target, services, limits).map_err(|e| e.to_string())?;
    let run = async {
        let instance = pre.instantiate_async(&mut store).await?;
        let guest = exports.load(&mut store, &instance)?;
        guest.call_describe(&mut store).await
    };
    match tokio::time::timeout(Duration::from_millis(limits.deadline_ms + 1000), run).await {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(e)) => match classify(&e, &store) {
            (TrapKind::Deadline | TrapKind::InstructionBound, reason) => Err(LoadError::OutOfTime(reason)),
            (_, reason) => Err(LoadError::Refused(reason)),
        },
        Err(_) => Err(LoadError::OutOfTime("describe did not return within its deadline".into())),
    }
}

fn stdio_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| text::clip(&text::escape_controls(l), 4096).into_owned())
        .collect()
}

/// Sends the guest's captured stdout/stderr to the log, tagged, within the
/// call's log allowance, and says how many lines were dropped.
fn log_stdio(store: &mut Store<CallState>) {
    let out = stdio_lines(&store.data().stdout.contents());
    let err = stdio_lines(&store.data().stderr.contents());
    let state = store.data_mut();
    for (stream, lines) in [("stdout", out), ("stderr", err)] {
        for line in lines {
            if !state.log_view().may_log(line.len()) {
                continue;
            }
            let id = state.core.target.id.as_str();
            match stream {
                "stdout" => tracing::info!(target: "capstan::guest::stdout", capability = id, "{line}"),
                _ => tracing::warn!(target: "capstan::guest::stderr", capability = id, "{line}"),
            }
        }
    }
    if state.log.dropped > 0 {
        tracing::warn!(
            target: "capstan::guest",
            capability = %state.core.target.id,
            dropped = state.log.dropped,
            "log lines dropped: a call keeps {} lines and {} bytes, the host 1 MiB a second",
            super::host::log_caps().0,
            super::host::log_caps().1
        );
    }
}

/// Names what stopped a call.
fn classify(e: &wasmtime::Error, store: &Store<CallState>) -> (TrapKind, String) {
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => return (TrapKind::Deadline, "the call ran past its deadline".into()),
        Some(Trap::OutOfFuel) => return (TrapKind::InstructionBound, "the call ran past its instruction bound".into()),
        _ => {}
    }
    let text = format!("{e:#}");
    if store.data().limits.refused_memory {
        return (TrapKind::MemoryCap, "the call went over its memory cap".into());
    }
    let stderr = String::from_utf8_lossy(&store.data().stderr.contents()).into_owned();
    if let Some(line) = stderr.lines().find(|l| l.contains("panicked at")) {
        let detail = stderr.lines().skip_while(|l| !l.contains("panicked at")).nth(1).unwrap_or(line);
        let detail = text::clip(&text::escape_controls(detail.trim()), text::MAX_FAILURE).into_owned();
        return (TrapKind::Panic, format!("the capability panicked: {detail}"));
    }
    if stderr.contains("memory allocation of") {
        return (TrapKind::MemoryCap, "the call went over its memory cap".into());
    }
    (TrapKind::Trap, format!("the capability trapped: {}", text.lines().next().unwrap_or("")))
}

fn failure(f: wit::Failure) -> Failure {
    let (kind, message) = match f {
        wit::Failure::InvalidInput(m) => ("invalid-input", m),
        wit::Failure::NotFound(m) => ("not-found", m),
        wit::Failure::Conflict(m) => ("conflict", m),
        wit::Failure::Denied(m) => ("denied", m),
        wit::Failure::Unavailable(m) => ("unavailable", m),
        wit::Failure::Internal(m) => ("internal", m),
    };
    // Messages are stored and shown: as bounded as outputs, one line each.
    Failure { kind: kind.into(), message: text::clip(&text::escape_controls(&message), text::MAX_FAILURE).into_owned() }
}

fn outcome(result: Result<wit::Outcome, wit::Failure>, output_cap: u64) -> CallOutcome {
    let out = match result {
        Ok(out) => out,
        Err(f) => return CallOutcome::Failed { failure: failure(f) },
    };
    if out.output.len() as u64 > output_cap {
        return CallOutcome::Trapped {
            trap: TrapKind::OutputTooLarge,
            message: format!("output of {} bytes is over the cap of {output_cap} bytes", out.output.len()),
        };
    }
    let output = match serde_json::from_str(&out.output) {
        Ok(v) => v,
        Err(e) => {
            let failure = Failure { kind: "internal".into(), message: format!("output is not JSON: {e}") };
            return CallOutcome::Failed { failure };
        }
    };
    match out.status {
        wit::OutcomeStatus::Succeeded => CallOutcome::Succeeded { output },
        wit::OutcomeStatus::Pending => CallOutcome::Pending { output },
    }
}

/// Calls `invoke` on `loaded` with `input` under `grant` and `limits`.
pub(crate) async fn call(
    engine: &Engine,
    loaded: &Loaded,
    code: &ComponentCode,
    services: Arc<HostServices>,
    grant: Grant,
    limits: CallLimits,
    input: &str,
) -> CallReport {
    let started = Instant::now();
    let mut report = CallReport {
        capability: loaded.descriptor.id.clone(),
        version: loaded.descriptor.version,
        digest: loaded.digest.clone(),
        outcome: CallOutcome::Trapped { trap: TrapKind::Trap, message: String::new() },
        effect_started: false,
        denials: Vec::new(),
        elapsed_us: 0,
        command: None,
        host_calls: Vec::new(),
        host_calls_dropped: 0,
    };
    let stop = grant.stop.clone();
    let mut store = match new_store(engine, grant, code.target.clone(), services, limits) {
        Ok(store) => store,
        Err(e) => {
            report.outcome =
                CallOutcome::Trapped { trap: TrapKind::Trap, message: format!("cannot set up the call: {e}") };
            return report;
        }
    };
    let run = async {
        let instance = code.pre.instantiate_async(&mut store).await?;
        let guest = code.exports.load(&mut store, &instance)?;
        guest.call_invoke(&mut store, input).await
    };
    // The epoch deadline stops guest code; this timeout also stops a call
    // that is waiting inside a host import. A stopped caller ends the call
    // the same way: what ran before stays counted in the store.
    let backstop = Duration::from_millis(limits.deadline_ms) + Duration::from_millis(500);
    let result = tokio::select! {
        result = tokio::time::timeout(backstop, run) => Some(result),
        () = stop.stopped() => None,
    };
    let Some(result) = result else {
        report.outcome = CallOutcome::Trapped {
            trap: TrapKind::Stopped,
            message: "the caller stopped the call before it ended".into(),
        };
        return finish_report(report, &mut store, started).await;
    };
    report.outcome = match result {
        Ok(Ok(result)) => outcome(result, limits.output_bytes),
        // Every slot of the instance pool is in use: the host is busy, the
        // capability did nothing wrong.
        Ok(Err(e)) if pool_is_full(&e) => CallOutcome::Failed {
            failure: Failure {
                kind: "unavailable".into(),
                message: "the host is running as many calls as it can at once; try again shortly".into(),
            },
        },
        Ok(Err(e)) => {
            let (trap, message) = classify(&e, &store);
            CallOutcome::Trapped { trap, message }
        }
        Err(_) => CallOutcome::Trapped { trap: TrapKind::Deadline, message: "the call ran past its deadline".into() },
    };
    finish_report(report, &mut store, started).await
}

/// What the store learned during a call that has ended, however it ended:
/// its output to the log, its holds released, whether an effect import
/// ran and which imports were denied.
async fn finish_report(mut report: CallReport, store: &mut Store<CallState>, started: Instant) -> CallReport {
    log_stdio(store);
    for hold in std::mem::take(&mut store.data_mut().holds) {
        hold.release().await;
    }
    if let Some(recording) = store.data_mut().core.recording.take() {
        report.host_calls = recording.calls;
        report.host_calls_dropped = recording.dropped;
    }
    let state = store.data();
    report.effect_started = state.core.effect_started();
    report.command = state.command_end;
    report.denials = state.core.denials.clone();
    if state.core.denials_dropped > 0 {
        let last = state.core.denials.last().cloned();
        report.denials.push(Denial {
            import: last.as_ref().map_or_else(String::new, |d| d.import.clone()),
            needed: last.as_ref().map_or(super::effects::EffectClass::Read, |d| d.needed),
            granted: state.core.grant.max_class,
            reason: format!("{} more denials in this call were not kept", state.core.denials_dropped),
        });
        tracing::warn!(target: "capstan::denial", capability = %state.core.target.id, dropped = state.core.denials_dropped, "denials not kept");
    }
    report.elapsed_us = started.elapsed().as_micros() as u64;
    report
}

/// What `verify` reported, or why it could not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum VerifyOutcome {
    Done { output: serde_json::Value },
    NotDone,
    CannotTell { reason: String },
}

/// Calls `verify` under a read grant (verification must not change
/// anything). A component without the export, a failure or a trap all
/// answer `cannot-tell`.
pub(crate) async fn verify(
    engine: &Engine,
    loaded: &Loaded,
    code: &ComponentCode,
    services: Arc<HostServices>,
    grant: Grant,
    limits: CallLimits,
    input: &str,
) -> VerifyOutcome {
    let Some(indices) = &code.verifier else {
        return VerifyOutcome::CannotTell { reason: format!("{} does not export verify", loaded.descriptor.id) };
    };
    let grant = Grant { max_class: super::effects::EffectClass::Read, ..grant };
    let mut store = match new_store(engine, grant, code.target.clone(), services, limits) {
        Ok(store) => store,
        Err(e) => return VerifyOutcome::CannotTell { reason: format!("cannot set up the call: {e}") },
    };
    let run = async {
        let instance = code.pre.instantiate_async(&mut store).await?;
        let guest = indices.load(&mut store, &instance)?;
        guest.call_verify(&mut store, input).await
    };
    let backstop = Duration::from_millis(limits.deadline_ms) + Duration::from_millis(500);
    let result = tokio::time::timeout(backstop, run).await;
    log_stdio(&mut store);
    match result {
        Ok(Ok(Ok(wit::Verification::Done(text)))) => match serde_json::from_str(&text) {
            Ok(output) => VerifyOutcome::Done { output },
            Err(e) => VerifyOutcome::CannotTell { reason: format!("verify output is not JSON: {e}") },
        },
        Ok(Ok(Ok(wit::Verification::NotDone))) => VerifyOutcome::NotDone,
        Ok(Ok(Ok(wit::Verification::CannotTell(reason)))) => VerifyOutcome::CannotTell {
            reason: text::clip(&text::escape_controls(&reason), text::MAX_FAILURE).into_owned(),
        },
        Ok(Ok(Err(f))) => VerifyOutcome::CannotTell { reason: format!("verify failed: {}", failure(f).message) },
        Ok(Err(e)) => VerifyOutcome::CannotTell { reason: classify(&e, &store).1 },
        Err(_) => VerifyOutcome::CannotTell { reason: "verify ran past its deadline".into() },
    }
}

/// Whether instantiating failed because every slot of the instance pool is
/// in use (wasmtime's typed error, not its message).
fn pool_is_full(e: &wasmtime::Error) -> bool {
    e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>().is_some()
}

#[cfg(test)]
mod tests {
    use wasmtime::component::{Component, Linker};
    use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

    /// The smallest component: its preamble alone.
    const EMPTY_COMPONENT: &[u8] = &[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

    #[test]
    fn a_full_instance_pool_is_told_from_other_failures() {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(1);
        let mut config = Config::new();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config).unwrap();
        let component = Component::new(&engine, EMPTY_COMPONENT).unwrap();
        let linker = Linker::<()>::new(&engine);
        let mut first = Store::new(&engine, ());
        linker.instantiate(&mut first, &component).unwrap();
        let mut second = Store::new(&engine, ());
        let full = linker.instantiate(&mut second, &component).unwrap_err();
        assert!(super::pool_is_full(&full), "{full:#}");
        drop(first);
        linker.instantiate(&mut second, &component).unwrap();
        assert!(!super::pool_is_full(&wasmtime::Error::msg("a trap")));
    }
}
