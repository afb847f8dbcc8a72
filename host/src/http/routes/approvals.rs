//! `POST /api/v1/approvals {planType, planId}` asks for a human's approval
//! of a plan as it stands (any authenticated caller); `PATCH
//! /api/v1/approvals/{id}` changes it, only from a console administrator's
//! session (API keys get 403): `{status: approved | rejected, payloadHash}`
//! decides it, never by the plan's creator, and only while the plan still
//! has the payload hash the administrator saw; `{status: revoked}` revokes
//! one nobody has used yet. Agent runs waiting on an approval are told
//! when it is given. `GET /api/v1/approvals[/{id}]` lists them, with
//! `stale` set where the plan has moved on and, while one can still be
//! decided or used, `plan`: what a person judges it by (the title, the
//! release, its size, quality and indexer; an import's files).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::grants::authz_error;
use crate::authz::{Approval, ApprovalStatus};
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::{ApiPath, ApiQuery, named};
use crate::http::openapi::ErrorBody;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ApprovalRequest {
    #[schema(pattern = "^(acquisition|organization)$")]
    plan_type: String,
    #[schema(schema_with = crate::http::schema::not_blank)]
    plan_id: String,
    /// The capability the approval lets act on the plan; by default the
    /// built-in that carries out this plan type. It must be loaded and
    /// tagged `plan:<planType>`.
    #[serde(default)]
    capability_id: Option<String>,
}

/// Asks for an approval of a plan as it stands.
#[utoipa::path(post, path = "/api/v1/approvals", tag = "authorization", security(("apiKey" = []), ("consoleSession" = [])),
    request_body = ApprovalRequest,
    responses((status = 201, description = "The pending approval", body = ApprovalView), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 404, description = "Not found", body = ErrorBody), (status = 409, description = "The record changed", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn request(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ApprovalRequest>,
) -> Result<(StatusCode, Json<ApprovalView>), ApiError> {
    if let Some(id) = &body.capability_id {
        let tag = format!("plan:{}", body.plan_type);
        let snapshot = state.caps().runtime().snapshot();
        let Some(loaded) = snapshot.get(id) else {
            return Err(ApiError::not_found(format!("no capability {id} is loaded")).about("capabilityId"));
        };
        if !loaded.descriptor.tags.contains(&tag) {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                format!("capabilityId {id} is not a loaded capability acting on {} plans (tag {tag})", body.plan_type),
            ));
        }
    }
    let approval = state
        .services()
        .authz
        .request_approval(
            &state.services().domain,
            &body.plan_type,
            &body.plan_id,
            body.capability_id.as_deref(),
            &caller.principal(),
        )
        .await
        .map_err(authz_error)?;
    Ok((StatusCode::CREATED, Json(with_summary(&state, approval).await?)))
}

/// A change to an approval: a decision on a pending one, or a revoke.
#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum ApprovalChange {
    Approved {
        #[serde(rename = "payloadHash")]
        payload_hash: String,
    },
    Rejected {
        #[serde(rename = "payloadHash")]
        payload_hash: String,
    },
    Revoked {},
}

impl crate::http::schema::WrittenOut for ApprovalChange {
    const NAME: &'static str = "ApprovalChange";

    fn json() -> Value {
        json!({
            "description": "A decision on a pending approval against the plan's payload hash the administrator saw, \
                            or the revoke of one nobody has used yet.",
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["status", "payloadHash"],
                    "properties": {
                        "status": {"type": "string", "enum": ["approved", "rejected"]},
                        "payloadHash": {
                            "type": "string",
                            "pattern": "^[0-9a-f]{64}$",
                            "description": "The plan's payload hash the decision is about (SHA-256, hex)."
                        },
                    },
                },
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["status"],
                    "properties": {"status": {"type": "string", "enum": ["revoked"]}},
                },
            ],
        })
    }
}

impl utoipa::PartialSchema for ApprovalChange {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::http::schema::placeholder()
    }
}

impl utoipa::ToSchema for ApprovalChange {}

/// Approves, rejects or revokes, from a console session.
#[utoipa::path(patch, path = "/api/v1/approvals/{id}", tag = "authorization", security(("consoleSession" = [])),
    params(("id" = String, Path, description = "Approval id")),
    request_body = ApprovalChange,
    responses((status = 200, description = "The decided or revoked approval", body = ApprovalView), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 403, description = "Not allowed for this caller", body = ErrorBody), (status = 404, description = "Not found", body = ErrorBody), (status = 409, description = "Already decided or used, expired, or the plan changed", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn change(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ApprovalChange>,
) -> Result<Json<ApprovalView>, ApiError> {
    let admin = match &caller {
        Caller::Console(_) => caller.principal(),
        Caller::Key(_) => {
            return Err(ApiError::forbidden(
                "approvals are decided and revoked from a console session, not with an API key",
            ));
        }
    };
    let (status, payload_hash) = match &body {
        ApprovalChange::Approved { payload_hash } => (ApprovalStatus::Approved, payload_hash),
        ApprovalChange::Rejected { payload_hash } => (ApprovalStatus::Rejected, payload_hash),
        ApprovalChange::Revoked {} => return revoke(&state, &caller, &id).await,
    };
    let approval = state
        .services()
        .authz
        .decide_approval(&state.services().domain, &id, status, payload_hash, &admin)
        .await
        .map_err(authz_error)?;
    let detail = format!("{} plan {} at {}", approval.plan_type, approval.plan_id, approval.payload_hash);
    super::audit_change(&state, &caller, "approval.decide", &approval.id, approval.status.as_str(), Some(detail))
        .await?;
    // The decision stands either way; a run that is not told can be sent a
    // message, and an approved import is queued again.
    if let Err(e) = state.agent().approval_decided(&approval).await {
        tracing::warn!(approval = %approval.id, error = %e, "could not tell the runs waiting on an approval");
    }
    if let Err(e) = crate::acquisition::approval_decided(state.services(), &approval).await {
        tracing::warn!(approval = %approval.id, error = %e, "could not queue the approved import");
    }
    Ok(Json(with_summary(&state, approval).await?))
}

/// Revokes an approval nobody has used. Like a rejection it is sent to no
/// run: a run waiting on it finds the plan refused when it next looks at
/// what it touched, and ends as on a rejection.
async fn revoke(state: &AppState, caller: &Caller, id: &str) -> Result<Json<ApprovalView>, ApiError> {
    let approval = state.services().authz.revoke_approval(&state.services().domain, id).await.map_err(authz_error)?;
    let detail = format!(
        "{} plan {} for {} (it was {})",
        approval.plan_type,
        approval.plan_id,
        approval.capability_id,
        if approval.decided_by.is_some() { "approved" } else { "pending" }
    );
    super::audit_change(state, caller, "approval.revoke", &approval.id, "revoked", Some(detail)).await?;
    Ok(Json(with_summary(state, approval).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalsQuery {
    status: Option<String>,
}

/// Approvals, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ApprovalList {
    approvals: Vec<ApprovalView>,
}

/// Approvals, newest first.
#[utoipa::path(get, path = "/api/v1/approvals", tag = "authorization", security(("apiKey" = []), ("consoleSession" = [])),
    params(("status" = Option<String>, Query, pattern = "^(pending|approved|rejected|consumed|expired|revoked)$",
                description = "pending, approved, rejected, consumed, expired or revoked")),
    responses((status = 200, description = "The approvals", body = ApprovalList), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<ApprovalsQuery>,
) -> Result<Json<ApprovalList>, ApiError> {
    let status = named::<ApprovalStatus>("status", q.status.as_deref())?;
    let approvals = state.services().authz.approvals(status).await?;
    let mut shown = Vec::with_capacity(approvals.len());
    for approval in approvals {
        shown.push(with_summary(&state, approval).await?);
    }
    Ok(Json(ApprovalList { approvals: shown }))
}

/// An approval with what a person judges its plan by.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ApprovalView {
    #[serde(flatten)]
    approval: Approval,
    /// The plan as a person judges it (its title, release and status; an
    /// acquisition's size, quality and indexer, an organization's files)
    /// while the approval can still be decided or used; null otherwise.
    #[schema(value_type = Option<Object>)]
    plan: Option<Value>,
}

/// An approval with `plan`, what a person judges it by, while it can still
/// be decided or used (the others keep only what they were).
async fn with_summary(state: &AppState, approval: Approval) -> Result<ApprovalView, ApiError> {
    let open = approval.status.is_open() && !approval.stale;
    let summary = match open {
        true => state
            .services()
            .domain
            .plan_summary(&approval.plan_type, &approval.plan_id)
            .await
            .map_err(ApiError::internal)?,
        false => None,
    };
    Ok(ApprovalView { approval, plan: summary })
}

/// One approval, marked stale when its plan has changed.
#[utoipa::path(get, path = "/api/v1/approvals/{id}", tag = "authorization", security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Approval id")),
    responses((status = 200, description = "The approval", body = ApprovalView), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 404, description = "Not found", body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ApprovalView>, ApiError> {
    let approval = state.services().authz.approval(&state.services().domain, &id).await.map_err(authz_error)?;
    Ok(Json(with_summary(&state, approval).await?))
}
