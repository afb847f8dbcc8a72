//! The one invoke path, `Capabilities::invoke(origin, id, input)`, used by
//! the CLI, HTTP, agent runs and tasks: look up the descriptor,
//! validate the input against its schema within the call's deadline
//! (`input_check`), apply the mode gate, authorise,
//! derive the idempotency key, claim the ledger for propose/execute, run the
//! call in the sandbox, finish the ledger row with its token, and audit.
//! Results carry `succeeded | failed | pending | unknown`.

mod audit;
mod authorize;
mod finish;
mod gate;
mod input_check;
mod plan_outcome;
mod replay;
mod stores;
mod task_handler;
mod uncertain;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

pub use crate::canonical::{canonical, digest as input_digest};
pub use gate::Origin;
pub use input_check::{InputCheck, check_input, input_problems};
pub use stores::{Services, Stores};
pub use task_handler::{INVOKE_CAPABILITY, InvokeCapability, failed_attempt};
pub use uncertain::ReplayCheck;

use crate::audit::{NewAuditEntry, RowQueue, summarize_input};
use crate::authz::Authz;
use crate::domain::Domain;
use crate::events::Events;
use crate::ledger::{Claim, ClaimRequest, Ledger, LedgerError, idempotency_key};
use crate::metrics::Metrics;
use crate::runtime::{CallOutcome, CallReport, Denial, EffectClass, Grant, Loaded, Runtime, Status, StopSignal};
use crate::store::Db;
use finish::{invocation_from, recorded};

/// An error a caller should see as a failed call, with its kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CallError {
    /// `invalid-input`, `not-found`, `conflict`, `denied`, `unavailable`, `internal`, or a trap kind.
    pub kind: String,
    pub message: String,
}

/// What one invoke produced.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    /// The ledger row, for propose/execute calls.
    pub invocation_id: Option<String>,
    #[schema(schema_with = status_schema)]
    pub status: Status,
    /// What the capability answered, in the shape its descriptor's output
    /// schema gives.
    pub output: Option<Value>,
    pub error: Option<CallError>,
    /// True when the result was recorded earlier and nothing ran now.
    pub replayed: bool,
    pub idempotency_key: String,
    /// The host imports that refused the call: `{import, needed, granted,
    /// reason}` each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub denials: Vec<Denial>,
    /// How a call that ran now ended, written to its ledger row together
    /// with its audit rows when it is answered.
    #[serde(skip)]
    pub(crate) finish: Option<crate::ledger::Finish>,
    /// A read's audit rows, not yet written, when the caller commits them
    /// with its own writes ([`Capabilities::invoke_in_run`]).
    #[serde(skip)]
    pub(crate) audit_rows: Vec<NewAuditEntry>,
}

/// [`Status`] in the document: the runtime's type, named here.
fn status_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["succeeded", "failed", "pending", "unknown"]))
        .description(Some(
            "How the call ended: `pending` when its effect is under way, `unknown` when an effect started \
             and its outcome is not known",
        ))
        .build()
}

impl Invocation {
    /// A success no capability call made (a session tool's answer):
    /// nothing claimed, nothing to audit.
    pub fn succeeded_outside(output: Value) -> Invocation {
        Invocation {
            invocation_id: None,
            status: Status::Succeeded,
            output: Some(output),
            error: None,
            replayed: false,
            idempotency_key: String::new(),
            denials: Vec::new(),
            finish: None,
            audit_rows: Vec::new(),
        }
    }

    /// A read's audit rows, for the caller of [`Capabilities::invoke_in_run`]
    /// to write with its own writes (none are left behind).
    pub fn take_audit_rows(&mut self) -> Vec<NewAuditEntry> {
        std::mem::take(&mut self.audit_rows)
    }
}

/// Why an invoke could not be answered with a status at all.
#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    #[error("no capability with id {0} is loaded")]
    NotFound(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
}

impl crate::store::batch::WriteError for InvokeError {
    fn is_conflict(&self) -> bool {
        match self {
            InvokeError::Ledger(e) => e.is_conflict(),
            InvokeError::Sql(e) => e.is_conflict(),
            InvokeError::NotFound(_) => false,
        }
    }
}

/// The invoke path over one runtime and one store.
pub struct Capabilities {
    runtime: Arc<Runtime>,
    db: Db,
    ledger: Ledger,
    authz: Authz,
    domain: Domain,
    events: Events,
    metrics: Metrics,
    /// Where a read call's audit row goes, started at the first.
    audit_rows: std::sync::OnceLock<RowQueue>,
}

fn failed(key: &str, kind: &str, message: String) -> Invocation {
    Invocation {
        invocation_id: None,
        status: Status::Failed,
        output: None,
        error: Some(CallError { kind: kind.into(), message }),
        replayed: false,
        idempotency_key: key.to_string(),
        denials: Vec::new(),
        finish: None,
        audit_rows: Vec::new(),
    }
}

/// Who writes the audit row of a call that wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadAudit {
    /// The invoke path, before it answers.
    Now,
    /// The caller, with its own writes: the rows come back in
    /// [`Invocation::audit_rows`].
    ByCaller,
}

impl Capabilities {
    /// The invoke path over `runtime`, keeping its own handles on the
    /// `stores` it claims, authorises and audits in.
    pub fn new(runtime: Arc<Runtime>, stores: Stores) -> Capabilities {
        let Stores { db, ledger, authz, domain, events } = stores;
        Capabilities {
            runtime,
            db,
            ledger,
            authz,
            domain,
            events,
            metrics: Metrics::default(),
            audit_rows: std::sync::OnceLock::new(),
        }
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// This process's counters, for `/metrics`.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Whether a call of `id` with `input` from `origin` would be let
    /// through the mode gate and authorisation now. Records nothing; the
    /// pipeline uses it to leave work for a human instead of being refused.
    pub async fn is_authorized(&self, origin: &Origin, id: &str, input: &Value) -> Result<bool, InvokeError> {
        let loaded = self.runtime.snapshot().get(id).ok_or_else(|| InvokeError::NotFound(id.to_string()))?;
        if origin.gate(loaded.descriptor.label).is_err() {
            return Ok(false);
        }
        Ok(self.authorize(origin, &loaded.descriptor, input).await?.is_ok())
    }

    /// The idempotency key a call of `id` with `input` from `origin` gets,
    /// when `id` is loaded.
    pub fn idempotency_key_for(&self, origin: &Origin, id: &str, input: &Value) -> Option<String> {
        let loaded = self.runtime.snapshot().get(id)?;
        let d = &loaded.descriptor;
        Some(idempotency_key(&d.id, d.version, &origin.scope_for(&loaded), &input_digest(input)))
    }

    /// The single invoke path; each answered invoke is counted.
    pub async fn invoke(&self, origin: &Origin, id: &str, input: &Value) -> Result<Invocation, InvokeError> {
        self.invoke_metered(origin, id, input, StopSignal::default(), ReadAudit::Now).await
    }

    /// [`Capabilities::invoke`] for a caller that may stop waiting (an MCP
    /// client that cancels or goes away): when `stop` fires, the call ends
    /// where it stands and is recorded like any call that ended early —
    /// `unknown` if an effect import had run, else `failed`.
    pub async fn invoke_stoppable(
        &self,
        origin: &Origin,
        id: &str,
        input: &Value,
        stop: StopSignal,
    ) -> Result<Invocation, InvokeError> {
        self.invoke_metered(origin, id, input, stop, ReadAudit::Now).await
    }

    /// [`Capabilities::invoke`] for an agent run's tool call. When `stop`
    /// fires (the run is aborted), the sandboxed call is ended where it
    /// stands and recorded like any call that ended early — `unknown` if an
    /// effect import had run, else `failed`. A read (or preview) call that
    /// ran, or was refused for its input, leaves its audit rows in
    /// [`Invocation::audit_rows`]: the run commits them with the step's own
    /// writes (`agent::runs::StepWrites`), one commit a step instead of
    /// two, before the model sees the result. Crate-private: a caller that
    /// does not commit them would leave reads unaudited.
    pub async fn invoke_in_run(
        &self,
        origin: &Origin,
        id: &str,
        input: &Value,
        stop: StopSignal,
    ) -> Result<Invocation, InvokeError> {
        self.invoke_metered(origin, id, input, stop, ReadAudit::ByCaller).await
    }

    async fn invoke_metered(
        &self,
        origin: &Origin,
        id: &str,
        input: &Value,
        stop: StopSignal,
        read_audit: ReadAudit,
    ) -> Result<Invocation, InvokeError> {
        let result = self.invoke_unmetered(origin, id, input, stop, read_audit).await;
        if let Ok(inv) = &result {
            // Only loaded ids reach an answer, so the label stays a known id.
            let status = serde_json::to_value(inv.status).ok().and_then(|v| v.as_str().map(str::to_string));
            // The kept denials; past them a call carries one line with a count.
            let kept = crate::runtime::MAX_DENIALS_KEPT;
            let denied = inv.denials.iter().take(kept).map(|d| d.import.as_str());
            self.metrics.invoked(id, status.as_deref().unwrap_or("unknown"), denied);
        }
        result
    }

    /// The invoke path itself; [`Capabilities::invoke`] counts what it answers.
    async fn invoke_unmetered(
        &self,
        origin: &Origin,
        id: &str,
        input: &Value,
        stop: StopSignal,
        read_audit: ReadAudit,
    ) -> Result<Invocation, InvokeError> {
        let loaded = self.runtime.snapshot().get(id).ok_or_else(|| InvokeError::NotFound(id.to_string()))?;
        let d = &loaded.descriptor;
        let digest = input_digest(input);
        let key = idempotency_key(&d.id, d.version, &origin.scope_for(&loaded), &digest);
        let summary = summarize_input(input);

        // Within the call's deadline: a costly schema keeps only its own
        // callers waiting (input_check).
        let within = std::time::Duration::from_millis(self.runtime.config().limits_for(id).deadline_ms);
        if let Some((kind, message)) = check_input(&loaded.input_validator, id, input, within, &stop).await.refusal() {
            let inv = failed(&key, kind, message);
            return self.audit_read(origin, &loaded, inv, &summary, read_audit).await;
        }

        let authorized = match origin.gate(d.label) {
            Ok(()) => self.authorize(origin, d, input).await?,
            Err(reason) => Err(reason),
        };
        let authorization = match authorized {
            Ok(authorization) => authorization,
            Err(reason) => {
                let inv = failed(&key, "denied", reason);
                self.audit_denied(origin, id, &key, &summary, &inv).await?;
                return Ok(inv);
            }
        };
        // A command the host would refuse is refused before anything is
        // claimed: nothing ran, so nothing is recorded but the refusal.
        if let Some((kind, message)) = self.runtime.command_refusal(&loaded, input) {
            let inv = failed(&key, kind, message);
            return self.audit_read(origin, &loaded, inv, &summary, read_audit).await;
        }
        let authorization_id = authorization.id();
        let grant = Grant { stop, ..origin.grant(d.label, Some(key.clone())) };

        if d.label <= EffectClass::Preview {
            let report = self.call(&loaded, input, grant).await;
            let inv = invocation_from(&key, None, &report);
            return self.audit_read(origin, &loaded, inv, &summary, read_audit).await;
        }

        // An earlier identical write of this caller whose outcome is open
        // is checked before a fresh key may write the same thing again.
        if let Some(inv) = self.earlier_open_write(origin, &loaded, input, &digest, &grant, &authorization).await? {
            let inv = self.answered(origin, &loaded, inv, &summary, &authorization).await?;
            self.plan_outcome(d, input, &inv).await;
            return Ok(inv);
        }
        let req = ClaimRequest {
            key: key.clone(),
            capability_id: d.id.clone(),
            capability_version: d.version,
            actor_kind: origin.actor_kind().into(),
            principal: origin.principal.clone(),
            run_id: origin.run_id.clone(),
            task_id: origin.task_id.clone(),
            tool_call_id: origin.tool_call_id.clone(),
            input_digest: digest,
        };
        let bytes = canonical(input).len() as i64;
        let claim = match self.ledger.claim_charging(&req, authorization.grant(), bytes).await? {
            Some(claim) => claim,
            None => {
                let inv = failed(
                    &key,
                    "denied",
                    format!(
                        "the daily budget of automation grant {} is spent",
                        authorization_id.clone().unwrap_or_default()
                    ),
                );
                self.audit_denied(origin, id, &key, &summary, &inv).await?;
                return Ok(inv);
            }
        };
        let inv = match claim {
            Claim::Claimed { id: row, token } => {
                self.run_claimed(&loaded, input, grant, &key, &row, &token, &authorization).await?
            }
            Claim::Recorded(record) => recorded(&key, &record),
            Claim::InFlight(record) => {
                let settled =
                    self.ledger.wait_settled(&record.idempotency_key, std::time::Duration::from_secs(120)).await?;
                recorded(&key, &settled)
            }
            Claim::Unknown(record) => self.replay(&loaded, input, grant, &key, record, &authorization).await?,
            Claim::Conflict(message) => failed(&key, "conflict", message),
        };
        let inv = self.answered(origin, &loaded, inv, &summary, &authorization).await?;
        self.plan_outcome(d, input, &inv).await;
        Ok(inv)
    }

    async fn call(&self, loaded: &Loaded, input: &Value, grant: Grant) -> CallReport {
        match self.runtime.call(&loaded.descriptor.id, &input.to_string(), grant).await {
            Ok(report) => report,
            Err(e) => CallReport {
                capability: loaded.descriptor.id.clone(),
                version: loaded.descriptor.version,
                digest: loaded.digest.clone(),
                outcome: CallOutcome::Trapped { trap: crate::runtime::TrapKind::Trap, message: e.to_string() },
                effect_started: false,
                denials: Vec::new(),
                elapsed_us: 0,
                command: None,
                host_calls: Vec::new(),
                host_calls_dropped: 0,
            },
        }
    }
}
