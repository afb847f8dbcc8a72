//! `GET /api/v1/capabilities` and `POST /api/v1/capabilities/{id}/invoke`.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::AppState;
use crate::http::auth::{Caller, KeyAuth};
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;
use crate::pipeline::{Invocation, InvokeError};

/// The active, held, refused and compiling components.
#[utoipa::path(get, path = "/api/v1/capabilities", tag = "capabilities", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "Active, held, refused and compiling components", body = serde_json::Value), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, KeyAuth(_): KeyAuth) -> Json<Value> {
    let snapshot = state.caps().runtime().snapshot();
    let active: Vec<Value> = snapshot
        .active
        .values()
        .map(|l| json!({ "descriptor": l.descriptor, "digest": l.digest, "effectClass": l.imports.class, "source": l.source }))
        .collect();
    let held: Vec<Value> = snapshot
        .held
        .iter()
        .map(|(id, h)| json!({ "id": id, "digest": h.candidate.digest, "reason": h.reason }))
        .collect();
    Json(json!({ "capabilities": active, "held": held, "refused": snapshot.refused, "compiling": snapshot.compiling }))
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
    responses((status = 200, description = "The invocation: status, output or error", body = serde_json::Value), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 403, description = "Not allowed for this caller", body = ErrorBody), (status = 404, description = "Not found", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
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
