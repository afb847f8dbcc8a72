//! `GET /api/v1/capabilities` and `POST /api/v1/capabilities/{id}/invoke`.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::http::AppState;
use crate::http::auth::{Caller, KeyAuth};
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;
use crate::pipeline::{Invocation, InvokeError};
use crate::runtime::{Compiling, Descriptor, EffectClass, Refusal, Source};

/// What the runtime holds: the capabilities that can be called, and the
/// components held back, refused or still compiling.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct CapabilityList {
    capabilities: Vec<ActiveCapability>,
    held: Vec<HeldCapability>,
    /// Files the loader refused: `{file, reason}` each.
    #[schema(value_type = Vec<Object>)]
    refused: Vec<Refusal>,
    /// Files being compiled in the background: `{file, bytes, startedMs}`
    /// each.
    #[schema(value_type = Vec<Object>)]
    compiling: Vec<Compiling>,
}

/// A capability that can be called.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ActiveCapability {
    /// What the component says of itself: `id`, `version`, `label` (its
    /// effect class), `summary`, `description`, `tags`, `aliases`,
    /// `input_schema`, `output_schema`, `replay` and `services`.
    #[schema(value_type = Object)]
    descriptor: Descriptor,
    /// SHA-256 of the component's bytes, hex.
    digest: String,
    /// The highest class among its imports.
    effect_class: EffectClass,
    /// Where it came from: `{kind, path}`, the kind `built-in`,
    /// `directory`, `retained` or `external`.
    #[schema(value_type = Object)]
    source: Source,
}

/// A replacement waiting for `capstan capabilities accept`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct HeldCapability {
    id: String,
    /// SHA-256 of the waiting component's bytes, hex.
    digest: String,
    reason: String,
}

/// The active, held, refused and compiling components.
#[utoipa::path(get, path = "/api/v1/capabilities", tag = "capabilities", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "Active, held, refused and compiling components", body = CapabilityList), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, _: KeyAuth) -> Json<CapabilityList> {
    let snapshot = state.caps().runtime().snapshot();
    let capabilities = snapshot
        .active
        .values()
        .map(|l| ActiveCapability {
            descriptor: l.descriptor.clone(),
            digest: l.digest.clone(),
            effect_class: l.imports.class,
            source: l.source.clone(),
        })
        .collect();
    let held = snapshot
        .held
        .iter()
        .map(|(id, h)| HeldCapability { id: id.clone(), digest: h.candidate.digest.clone(), reason: h.reason.clone() })
        .collect();
    Json(CapabilityList {
        capabilities,
        held,
        refused: snapshot.refused.clone(),
        compiling: snapshot.compiling.clone(),
    })
}

/// The invoke request body.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InvokeBody {
    /// The capability's input.
    #[schema(value_type = Object)]
    pub input: Value,
    /// Makes retries of the same request one operation: calls with the same
    /// key and input share one ledger identity.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    pub request_id: Option<String>,
}

/// Invokes a capability through the one invoke path.
#[utoipa::path(post, path = "/api/v1/capabilities/{id}/invoke", tag = "capabilities", security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Capability id, e.g. release.inspect")),
    request_body = InvokeBody,
    responses((status = 200, description = "The invocation: status, output or error", body = Invocation), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 403, description = "Not allowed for this caller", body = ErrorBody), (status = 404, description = "Not found", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn invoke(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    body: Result<ApiJson<InvokeBody>, ApiError>,
) -> Result<Json<Invocation>, ApiError> {
    let loaded =
        state.caps().runtime().snapshot().get(&id).ok_or_else(|| ApiError::not_found(format!("no capability {id}")))?;
    let label = loaded.descriptor.label;
    // Authority before the body: a key whose scopes do not reach the
    // label is told so whatever it sent.
    caller.origin(label, &id, String::new())?;
    let ApiJson(body) = body?;
    if body.request_id.as_ref().is_some_and(|r| r.is_empty() || r.chars().count() > 128) {
        return Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            "requestId must be 1 to 128 characters",
        ));
    }
    let request_id = match &body.request_id {
        Some(r) => format!("{}:{r}", caller.principal()),
        None => crate::store::new_id(),
    };
    // The key's scopes are re-checked against the descriptor on every call.
    let origin = caller.origin(label, &id, request_id)?;
    match state.caps().invoke(&origin, &id, &body.input).await {
        Ok(inv) => Ok(Json(inv)),
        Err(InvokeError::NotFound(id)) => Err(ApiError::not_found(format!("no capability {id}"))),
        Err(e) => Err(ApiError::internal(e)),
    }
}
