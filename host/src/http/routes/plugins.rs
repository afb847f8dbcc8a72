//! Plugins managed over HTTP from a console session:
//! `PUT /api/v1/plugins/{file}` installs a component's bytes as a plugin
//! (checked first; on PostgreSQL it reaches every node through the
//! cluster's catalog), `DELETE /api/v1/plugins/{file}` removes one, and
//! `POST /api/v1/capabilities/{id}/accept` lets in a held replacement, as
//! `capstan capabilities accept` does. Each change is audited.

use axum::Json;
use axum::body::{Body, to_bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use serde::{Deserialize, Serialize};

use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;
use crate::runtime::plugins::{Installed, PluginError, PluginInstall};

/// Whether an upload may replace a plugin of the same name.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    /// Replace the plugin of this name if there is one (without it, an
    /// existing plugin's name is a 409).
    #[serde(default)]
    replace: bool,
}

/// A component's bytes, as the body of an upload.
/// (Only described: the handler reads the body itself, so a `Vec<u8>`,
/// which the document would call an array of integers, is not used.)
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
pub(crate) struct ComponentBytes(#[allow(dead_code)] Vec<u8>);

/// What became of an installed plugin.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PluginInstalled {
    /// Its file name.
    file: String,
    /// SHA-256 of its bytes, hex.
    digest: String,
    /// Whether it replaced a plugin of the same name.
    replaced: bool,
    /// `loaded` (its capability serves now) or `held` (it replaces a
    /// capability and asks more than the version before, which goes on
    /// serving until an administrator accepts it).
    status: String,
    /// The capability it provides.
    capability: String,
    /// Why it is held.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// What to do next, when something is left to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

impl From<PluginInstall> for PluginInstalled {
    fn from(p: PluginInstall) -> PluginInstalled {
        let (status, capability, reason, next) = match p.outcome {
            Installed::Loaded { id } => ("loaded", id, None, None),
            Installed::Held { id, reason } => {
                let next =
                    format!("accept it: POST /api/v1/capabilities/{id}/accept, or capstan capabilities accept {id}");
                ("held", id, Some(reason), Some(next))
            }
        };
        PluginInstalled {
            file: p.file,
            digest: p.digest,
            replaced: p.replaced,
            status: status.into(),
            capability,
            reason,
            next,
        }
    }
}

/// A held replacement let in.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Accepted {
    capability: String,
    /// SHA-256 of the accepted component's bytes, hex.
    digest: String,
    /// Whether it serves on this node now (on other nodes, at their next
    /// rescan, within seconds).
    serving: bool,
}

fn plugin_error(e: PluginError) -> ApiError {
    match e {
        PluginError::BadName(why) => ApiError::new(StatusCode::BAD_REQUEST, "invalid", why).about("file"),
        PluginError::Refused(why) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "refused", why),
        e @ PluginError::Exists(_) => ApiError::new(StatusCode::CONFLICT, "conflict", e.to_string()),
        e @ PluginError::NotFound(_) => ApiError::not_found(e.to_string()),
        PluginError::Failed(e) => ApiError::internal(format!("{e:#}")),
    }
}

/// Installs a component as a plugin. The bytes are checked as the loader
/// checks a file before anything is written; a refused component changes
/// nothing.
#[utoipa::path(put, path = "/api/v1/plugins/{file}", tag = "capabilities", security(("consoleSession" = [])),
    params(("file" = String, Path, pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,122}\\.wasm$", description = "The plugin's file name, e.g. my-tool.wasm"), UploadQuery),
    request_body(content = ComponentBytes, content_type = "application/octet-stream", description = "The component's bytes (application/wasm is taken too)"),
    responses((status = 201, description = "Installed", body = PluginInstalled),
              (status = 200, description = "Installed over the plugin of that name", body = PluginInstalled),
              (status = 400, description = "Not a plugin file name", body = ErrorBody),
              (status = 401, description = "No console session", body = ErrorBody),
              (status = 403, description = "Plugins are installed from a console session", body = ErrorBody),
              (status = 409, description = "A plugin of that name is installed and replace was not asked", body = ErrorBody),
              (status = 413, description = "Over the component size limit", body = ErrorBody),
              (status = 415, description = "Not sent as application/wasm or application/octet-stream", body = ErrorBody),
              (status = 422, description = "Not a component this host runs: the reason", body = ErrorBody)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(file): ApiPath<String>,
    query: Result<Query<UploadQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<PluginInstalled>), ApiError> {
    let Query(query) =
        query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.body_text()).about("replace"))?;
    let kind = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = kind.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if essence != "application/wasm" && essence != "application/octet-stream" {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "content_type",
            format!("this endpoint takes the component's bytes as application/wasm, not {kind:?}"),
        ));
    }
    crate::runtime::plugins::check_name(&file).map_err(plugin_error)?;
    let runtime = state.caps().runtime().clone();
    let limit = runtime.config().max_component_bytes();
    let bytes = to_bytes(body, usize::try_from(limit).unwrap_or(usize::MAX)).await.map_err(|_| {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", format!("the component is over {limit} bytes"))
    })?;
    let installed = runtime.install_plugin(&file, &bytes, query.replace).await;
    let outcome = match &installed {
        Ok(p) => ("succeeded", serde_json::json!({ "digest": p.digest, "replaced": p.replaced }).to_string()),
        Err(e) => ("refused", e.to_string()),
    };
    // Only an attempt that got as far as the component is recorded.
    if !matches!(&installed, Err(PluginError::BadName(_) | PluginError::Exists(_))) {
        super::audit_change(&state, &caller, "plugin.install", &file, outcome.0, Some(outcome.1)).await?;
    }
    let installed = installed.map_err(plugin_error)?;
    let status = if installed.replaced { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(installed.into())))
}

/// Removes a plugin: from this node's folder and, on a cluster, from every
/// node (a copy left in another node's own folder is published again by
/// it).
#[utoipa::path(delete, path = "/api/v1/plugins/{file}", tag = "capabilities", security(("consoleSession" = [])),
    params(("file" = String, Path, pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,122}\\.wasm$", description = "The plugin's file name")),
    responses((status = 204, description = "Removed"),
              (status = 400, description = "Not a plugin file name", body = ErrorBody),
              (status = 401, description = "No console session", body = ErrorBody),
              (status = 403, description = "Plugins are removed from a console session", body = ErrorBody),
              (status = 404, description = "No plugin of that name", body = ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(file): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state.caps().runtime().remove_plugin(&file).await.map_err(plugin_error)?;
    super::audit_change(&state, &caller, "plugin.remove", &file, "succeeded", None).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Lets in the replacement held for a capability, on every node.
#[utoipa::path(post, path = "/api/v1/capabilities/{id}/accept", tag = "capabilities", security(("consoleSession" = [])),
    params(("id" = String, Path, description = "The capability whose replacement waits")),
    responses((status = 200, description = "Accepted", body = Accepted),
              (status = 401, description = "No console session", body = ErrorBody),
              (status = 403, description = "Replacements are accepted from a console session", body = ErrorBody),
              (status = 404, description = "No replacement of that capability waits", body = ErrorBody)))]
pub async fn accept(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Accepted>, ApiError> {
    let runtime = state.caps().runtime().clone();
    let waiting = runtime.snapshot().held.contains_key(&id);
    if !waiting {
        return Err(ApiError::not_found(format!("no replacement for {id} is waiting to be accepted")));
    }
    let digest = runtime.accept(&id).await.map_err(ApiError::internal)?;
    super::audit_change(&state, &caller, "component.accept", &id, "succeeded", Some(digest.clone())).await?;
    if let Err(e) = runtime.rescan(false).await {
        tracing::warn!(error = %e, "rescan after an accept failed; the watcher will try again");
    }
    let serving = runtime.snapshot().get(&id).is_some_and(|l| l.digest == digest);
    Ok(Json(Accepted { capability: id, digest, serving }))
}
