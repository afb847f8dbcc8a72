//! `GET/POST /api/v1/automation-grants` and `PATCH
//! /api/v1/automation-grants/{id}`: standing grants for automated callers,
//! managed only from a console administrator's session (an API key, which
//! may itself be automated, gets 403). A grant for `*`, a `prefix.*`
//! wildcard or a policy names, in its scope, the capabilities it covers
//! when it is made; one for `policy.<kind>` is bound to the published
//! policy of that kind, if there is one. Budgets and expiry default to 100
//! calls and 10 GB a day for 30 days. A PATCH may revoke
//! or shorten; anything that would widen a grant is 422 and changes nothing.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::authz::{
    AuthzError, AutomationGrant, MAX_DAILY_BYTES, MAX_DAILY_INVOCATIONS, MAX_GRANT_DAYS, NewGrant, wildcard_prefix,
};
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;
use crate::runtime::EffectClass;

fn admin_only(caller: &Caller) -> Result<String, ApiError> {
    match caller {
        Caller::Console(s) => Ok(crate::principal::admin(&s.admin)),
        Caller::Key(_) => {
            Err(ApiError::forbidden("automation grants are managed from a console session, not with an API key"))
        }
    }
}

/// A new grant's fields, as a refusal may name them.
const GRANT_FIELDS: &[&str] =
    &["action", "dailyInvocations", "dailyBytes", "expiresAt", "reason", "policyRevisionId", "policyName"];

pub(crate) fn authz_error(e: AuthzError) -> ApiError {
    match e {
        AuthzError::Invalid(m) => {
            // The checks name the field at fault first, as the body spells it.
            let field = m.split_whitespace().next().filter(|w| GRANT_FIELDS.contains(w)).map(str::to_string);
            let error = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_grant", m);
            match field {
                Some(field) => error.about(field),
                None => error,
            }
        }
        AuthzError::NotFound(what, id) => ApiError::not_found(format!("no {what} {id}")),
        AuthzError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
        AuthzError::Forbidden(m) => ApiError::forbidden(m),
        AuthzError::Sql(e) => ApiError::internal(e),
    }
}

/// Every automation grant, and the bounds a new one must keep.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct GrantList {
    grants: Vec<AutomationGrant>,
    limits: GrantLimits,
}

/// The bounds a new grant must keep, so a form can hold to them.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GrantLimits {
    daily_invocations: Bounds,
    daily_bytes: Bounds,
    expires_in_days: Bounds,
}

/// The least and the most a number may be, both allowed.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Bounds {
    minimum: i64,
    maximum: i64,
}

/// Every automation grant.
#[utoipa::path(get, path = "/api/v1/automation-grants", tag = "authorization", security(("consoleSession" = [])),
    responses((status = 200, description = "The grants", body = GrantList), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 403, description = "Not allowed for this caller", body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Json<GrantList>, ApiError> {
    admin_only(&caller)?;
    let grants = state.services().authz.grants().await?;
    let up_to = |maximum| Bounds { minimum: 1, maximum };
    let limits = GrantLimits {
        daily_invocations: up_to(MAX_DAILY_INVOCATIONS),
        daily_bytes: up_to(MAX_DAILY_BYTES),
        expires_in_days: up_to(MAX_GRANT_DAYS),
    };
    Ok(Json(GrantList { grants, limits }))
}

/// Creates an automation grant.
#[utoipa::path(post, path = "/api/v1/automation-grants", tag = "authorization", security(("consoleSession" = [])),
    request_body = NewGrant,
    responses((status = 201, description = "The grant", body = AutomationGrant), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 403, description = "Not allowed for this caller", body = ErrorBody), (status = 404, description = "The policy revision the grant names does not exist", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(mut body): ApiJson<NewGrant>,
) -> Result<(StatusCode, Json<AutomationGrant>), ApiError> {
    let by = admin_only(&caller)?;
    // A grant names every capability (`*`), a `prefix.*` wildcard, a policy
    // tag, or a capability that is loaded now; a mistyped id would be a
    // grant nothing uses.
    let action = body.action.trim().to_string();
    let snapshot = state.caps().runtime().snapshot();
    let loaded = snapshot.get(&action).map(|l| l.descriptor.label);
    if let Some(label) = loaded.filter(|l| *l != EffectClass::Execute) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_grant",
            format!("{action} is a {label} capability; grants are for execute capabilities; read, preview and propose calls need none"),
        )
        .about("action"));
    }
    let prefix = wildcard_prefix(&action);
    let wide = action == "*" || prefix.is_some() || action.starts_with("policy.");
    if !action.is_empty() && !wide && loaded.is_none() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_grant",
            format!("no capability {action} is loaded; a grant names a capability id, a prefix.* wildcard, a policy.* tag, or *"),
        )
        .about("action"));
    }
    // A wide grant names the capabilities it covers now: a plugin that is
    // loaded or given the tag later is not covered by a grant the operator
    // gave before it existed.
    if body.scope.capabilities.is_empty() && wide {
        let covers = |d: &crate::runtime::Descriptor| match prefix {
            _ if action == "*" => true,
            Some(p) => d.id.strip_prefix(p).is_some_and(|rest| rest.starts_with('.')),
            None => d.tags.contains(&action),
        };
        body.scope.capabilities = snapshot
            .active
            .values()
            .map(|l| &l.descriptor)
            .filter(|d| d.label == EffectClass::Execute && covers(d))
            .map(|d| d.id.clone())
            .collect();
        if body.scope.capabilities.is_empty() {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_grant",
                format!("no loaded execute capability is covered by {action}; the grant would authorise nothing"),
            )
            .about("action"));
        }
    }
    // A grant for a policy's action lasts as long as the policy of that
    // kind stays published, unless the body binds it otherwise.
    let unbound = body.policy_name.is_none() && body.policy_revision.is_none() && body.policy_revision_id.is_none();
    if let Some(kind) = action.strip_prefix("policy.").filter(|_| unbound)
        && let Some(policy) = state.services().authz.published_of_kind(kind).await?
    {
        body.policy_name = Some(policy.name.clone());
        body.policy_revision = Some(policy.revision);
    }
    let grant = state.services().authz.create_grant(&body, &by).await.map_err(authz_error)?;
    let detail = format!("{} for {} calls a day until {}", grant.action, grant.daily_invocations, grant.expires_at);
    super::audit_change(&state, &caller, "grant.create", &grant.id, "succeeded", Some(detail)).await?;
    Ok((StatusCode::CREATED, Json(grant)))
}

/// A change to a grant: revoke it, or shorten its expiry or budgets.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GrantChange {
    #[serde(default)]
    revoke: bool,
    /// Milliseconds since the epoch; no later than the grant's.
    expires_at: Option<i64>,
    #[schema(schema_with = smaller_invocations)]
    daily_invocations: Option<i64>,
    #[schema(schema_with = smaller_bytes)]
    daily_bytes: Option<i64>,
}

/// A smaller budget (or null, to keep it): from 0 to what the grant
/// allows now, which is never more than `max`.
fn smaller_budget(max: i64, description: &str) -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(0))
        .maximum(Some(max))
        .description(Some(description))
        .build()
}

fn smaller_invocations() -> utoipa::openapi::Object {
    smaller_budget(MAX_DAILY_INVOCATIONS, "Calls a day, no more than the grant allows now.")
}

fn smaller_bytes() -> utoipa::openapi::Object {
    smaller_budget(MAX_DAILY_BYTES, "Bytes a day, no more than the grant allows now.")
}

/// What the derive cannot say of a new grant's policy binding, as
/// `create_grant` checks it: `policyRevisionId` names the revision by
/// itself, and `policyName` and `policyRevision` go together. Each rule
/// names the field at fault (`null` counts as left out).
pub(crate) fn binding_rules() -> Value {
    let given = |field: &str, kind: &str| json!({"required": [field], "properties": {field: {"type": kind}}});
    let absent = |fields: &[&str]| {
        let properties: serde_json::Map<String, Value> =
            fields.iter().map(|f| (f.to_string(), json!({"type": "null"}))).collect();
        json!({ "properties": properties })
    };
    json!({"allOf": [
        {"if": given("policyRevisionId", "string"), "then": absent(&["policyName", "policyRevision"])},
        {"if": given("policyName", "string"), "then": given("policyRevision", "integer")},
        {"if": given("policyRevision", "integer"), "then": given("policyName", "string")},
    ]})
}

/// Revokes or shortens a grant; widening is refused.
#[utoipa::path(patch, path = "/api/v1/automation-grants/{id}", tag = "authorization", security(("consoleSession" = [])),
    params(("id" = String, Path, description = "Grant id")),
    request_body = GrantChange,
    responses((status = 200, description = "The grant", body = AutomationGrant), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 403, description = "Not allowed for this caller", body = ErrorBody), (status = 404, description = "Not found", body = ErrorBody), (status = 409, description = "Revoked, or changed meanwhile", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(change): ApiJson<GrantChange>,
) -> Result<Json<AutomationGrant>, ApiError> {
    admin_only(&caller)?;
    let authz = &state.services().authz;
    let (grant, action) = if change.revoke {
        (authz.revoke_grant(&id).await.map_err(authz_error)?, "grant.revoke")
    } else {
        let grant = authz
            .shorten_grant(&id, change.expires_at, change.daily_invocations, change.daily_bytes)
            .await
            .map_err(authz_error)?;
        (grant, "grant.shorten")
    };
    let detail = format!("{} calls a day until {}", grant.daily_invocations, grant.expires_at);
    super::audit_change(&state, &caller, action, &grant.id, "succeeded", Some(detail)).await?;
    Ok(Json(grant))
}
