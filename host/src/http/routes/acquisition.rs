//! `POST /api/v1/acquisition-plans {sourceReleaseId, slotId? | entityId?,
//! note?}`: plan and submit a download in one request, through the one
//! invoke path — `download.plan` drafts, `download.submit` reserves the slot
//! and hands the torrent to the client, each authorised and audited like
//! any other call. Without a slot, the entity's wanted slots are tried in
//! creation order and the first that yields a plan wins; when none does,
//! the answer is `submitted: false` with the reason for each slot.
//! `GET /api/v1/acquisition-plans?status=&slotId=&limit=` lists plans,
//! newest first — drafts waiting for a human among them.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::library::domain_error;
use crate::domain::{Plan, PlanStatus, SlotStatus};
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::{ApiQuery, in_range, named};
use crate::http::openapi::ErrorBody;
use crate::http::schema::WrittenOut;
use crate::pipeline::{CallError, Invocation, Origin};
use crate::runtime::{EffectClass, Status};

pub const PLAN_CAPABILITY: &str = "download.plan";
pub(crate) const SUBMIT_CAPABILITY: &str = "download.submit";

/// A release for a wanted slot, or for the first of an entity's wanted
/// slots that takes it: `slotId` or `entityId`, exactly one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct AcquisitionRequest {
    source_release_id: String,
    slot_id: Option<String>,
    entity_id: Option<String>,
    note: Option<String>,
}

impl WrittenOut for AcquisitionRequest {
    const NAME: &'static str = "AcquisitionRequest";

    fn json() -> Value {
        let text = json!({ "type": "string", "pattern": crate::http::schema::not_blank_pattern() });
        let note = json!({ "type": ["string", "null"] });
        let shape = |target: &str, what: &str| {
            json!({
                "title": what,
                "type": "object",
                "additionalProperties": false,
                "required": ["sourceReleaseId", target],
                "properties": { "sourceReleaseId": text, target: text, "note": note },
            })
        };
        json!({
            "description": "A release for a wanted slot, or for the first of an entity's wanted slots that takes it.",
            "oneOf": [shape("slotId", "For one slot"), shape("entityId", "For an entity's wanted slots")],
        })
    }
}

impl utoipa::PartialSchema for AcquisitionRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::http::schema::placeholder()
    }
}

impl utoipa::ToSchema for AcquisitionRequest {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PlanQuery {
    status: Option<String>,
    slot_id: Option<String>,
    limit: Option<i64>,
}

/// Acquisition plans, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct PlanList {
    plans: Vec<Plan>,
}

/// Acquisition plans, newest first.
#[utoipa::path(get, path = "/api/v1/acquisition-plans", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("status" = Option<String>, Query, pattern = "^(draft|reserved|submitted|failed|cancelled)$",
                description = "draft, reserved, submitted, failed or cancelled"),
           ("slotId" = Option<String>, Query, description = "Plans for this slot"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "At most this many (default 100)")),
    responses((status = 200, description = "The plans", body = PlanList),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<PlanQuery>,
) -> Result<Json<PlanList>, ApiError> {
    let limit = in_range("limit", q.limit, 100, 1, 500)?;
    let status = named::<PlanStatus>("status", q.status.as_deref())?;
    let plans = state.services().domain.plans(status, q.slot_id.as_deref(), limit).await.map_err(domain_error)?;
    Ok(Json(PlanList { plans }))
}

/// What came of a request: the plan and its submit, or why no slot took
/// the release.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AcquisitionOutcome {
    /// True when the plan was handed to the download client.
    submitted: bool,
    /// The drafted plan's id, when one was drafted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    plan_id: Option<String>,
    /// `download.plan`'s answer: the plan's id, status, revision,
    /// payloadHash, slotId, sourceReleaseId, title and infohash.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    plan: Option<Value>,
    /// The `download.submit` call, when a plan was drafted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    submit: Option<Invocation>,
    /// Why it was not submitted, per slot tried; empty once it was.
    reasons: Vec<SlotRefusal>,
}

/// Why a slot did not take the release, or (without a slot) why none was tried.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SlotRefusal {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    slot_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    stage: Option<AcquisitionStage>,
    reason: CallError,
}

/// The call that refused: drafting the plan, or submitting it.
#[derive(Clone, Copy, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AcquisitionStage {
    Plan,
    Submit,
}

impl SlotRefusal {
    fn at(slot: &str, stage: AcquisitionStage, inv: &Invocation) -> SlotRefusal {
        let reason = inv.error.clone().unwrap_or_else(|| CallError {
            kind: "status".into(),
            message: format!("the call ended {:?}", inv.status),
        });
        SlotRefusal { slot_id: Some(slot.to_string()), stage: Some(stage), reason }
    }
}

async fn call(state: &AppState, origin: &Origin, id: &str, input: Value) -> Result<Invocation, ApiError> {
    state.caps().invoke(origin, id, &input).await.map_err(ApiError::internal)
}

/// Plans and submits a release for a slot, or for the first of an entity's
/// wanted slots that takes it.
#[utoipa::path(post, path = "/api/v1/acquisition-plans", tag = "library",
    security(("apiKey" = []), ("consoleSession" = [])),
    request_body = AcquisitionRequest,
    responses((status = 200, description = "Whether it was submitted: the plan and the submit call, or why not", body = AcquisitionOutcome),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "The key lacks the execute scope", body = ErrorBody),
              (status = 404, description = "No such slot or entity", body = ErrorBody),
              (status = 422, description = "Neither or both of slotId and entityId", body = ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<AcquisitionRequest>,
) -> Result<Json<AcquisitionOutcome>, ApiError> {
    let domain = &state.services().domain;
    let slots: Vec<String> = match (&body.slot_id, &body.entity_id) {
        (Some(slot), None) => vec![domain.slot(slot).await.map_err(domain_error)?.id],
        (None, Some(entity)) => {
            domain.entity(entity).await.map_err(domain_error)?;
            let slots = domain.slots_for_entity(entity).await.map_err(domain_error)?;
            slots.into_iter().filter(|s| s.status == SlotStatus::Wanted).map(|s| s.id).collect()
        }
        _ => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                "give exactly one of slotId and entityId",
            ));
        }
    };
    // One user request: both calls share its idempotency scope.
    let origin = caller.origin(EffectClass::Execute, "planning and submitting a download", crate::store::new_id())?;
    let mut reasons = Vec::new();
    for slot in slots {
        let mut input = json!({ "sourceReleaseId": body.source_release_id, "slotId": slot });
        if let Some(note) = &body.note {
            input["note"] = json!(note);
        }
        let planned = call(&state, &origin, PLAN_CAPABILITY, input).await?;
        if planned.status != Status::Succeeded {
            reasons.push(SlotRefusal::at(&slot, AcquisitionStage::Plan, &planned));
            continue;
        }
        let plan = planned.output.clone().unwrap_or(Value::Null);
        let Some(plan_id) = plan.get("id").and_then(Value::as_str).map(str::to_string) else {
            return Err(ApiError::internal(format!("{PLAN_CAPABILITY} answered without a plan id")));
        };
        let submitted = call(&state, &origin, SUBMIT_CAPABILITY, json!({ "planId": plan_id })).await?;
        let ok = submitted.status == Status::Succeeded;
        let reasons = if ok { vec![] } else { vec![SlotRefusal::at(&slot, AcquisitionStage::Submit, &submitted)] };
        return Ok(Json(AcquisitionOutcome {
            submitted: ok,
            plan_id: Some(plan_id),
            plan: Some(plan),
            submit: Some(submitted),
            reasons,
        }));
    }
    if reasons.is_empty() {
        let reason = CallError { kind: "no-slot".into(), message: "the entity has no wanted slot".into() };
        reasons.push(SlotRefusal { slot_id: None, stage: None, reason });
    }
    Ok(Json(AcquisitionOutcome { submitted: false, plan_id: None, plan: None, submit: None, reasons }))
}
