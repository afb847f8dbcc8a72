//! The external MCP servers on the Services page: `PUT` and `DELETE
//! /api/v1/setup/mcp/{name}` set one up in the console or forget it (one
//! `capstan.toml` names is the file's), and `POST .../test` connects with
//! the form's values or the saved ones and says what the host would offer.
//! Each change links the servers anew in this process; other processes
//! follow within seconds (`App::follow_setup`).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::openapi::path::{Parameter, ParameterIn};

use super::setup::{SetupView, ascii_url, console_only, setup_error, view};
use crate::config::ToolClass;
use crate::external_tools::ExternalServers;
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;
use crate::http::schema::WrittenOut;
use crate::setup::mcp::{McpServerEntry, ServerSource, server_config};
use crate::setup::probe::ProbeResult;
use crate::setup::{SetupError, kinds};

/// A server's name in a path: what `[mcp.<name>]` takes.
#[derive(Deserialize)]
pub(crate) struct ServerName {
    name: String,
}

impl utoipa::IntoParams for ServerName {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let schema = ObjectBuilder::new().schema_type(Type::String).pattern(Some("^[a-z][a-z0-9_-]{0,23}$")).build();
        let description = "The server's name: 1 to 24 lowercase letters, digits, - or _, starting with a letter";
        vec![crate::http::schema::parameter("name", ParameterIn::Path, description, schema)]
    }
}

/// An MCP server as the console sets it up.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct McpServerChange {
    url: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    classes: BTreeMap<String, ToolClass>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    token: Option<String>,
}

impl McpServerChange {
    /// The entry the change makes; a URL is ASCII without spaces (as a URI
    /// is), white space around it aside.
    fn entry(&self) -> Result<McpServerEntry, ApiError> {
        ascii_url(&self.url)?;
        Ok(McpServerEntry {
            url: self.url.trim().to_string(),
            tools: self.tools.clone(),
            classes: self.classes.clone(),
            timeout_ms: self.timeout_ms,
        })
    }
}

impl WrittenOut for McpServerChange {
    const NAME: &'static str = "McpServerChange";

    fn json() -> Value {
        json!({
            "description": "An external MCP server as the console sets it up.",
            "type": "object",
            "additionalProperties": false,
            "required": ["url"],
            "properties": {
                "url": {"type": "string", "format": "uri", "pattern": crate::text::service_url_pattern(),
                    "description": "Its streamable HTTP endpoint, http or https, without credentials."},
                "tools": {"type": ["array", "null"], "maxItems": 128,
                    "items": {"type": "string", "minLength": 1, "maxLength": 128},
                    "description": "The only tools offered, by the server's names; every tool when absent."},
                "classes": {"type": "object", "maxProperties": 128,
                    "additionalProperties": {"enum": ["read", "preview", "propose", "execute"]},
                    "description": "Tool name → class; a tool not named is execute."},
                "timeoutMs": {"type": ["integer", "null"], "minimum": 1000, "maximum": 3_600_000,
                    "description": "One call's deadline; 60000 when absent."},
                "token": {"type": ["string", "null"], "not": {"pattern": kinds::reference_pattern()},
                    "description": "A bearer token the host sends, as typed; absent keeps the stored one, \
                        empty removes it."},
            },
        })
    }
}

impl utoipa::PartialSchema for McpServerChange {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::http::schema::placeholder()
    }
}

impl utoipa::ToSchema for McpServerChange {}

/// Links the servers anew here, audits the change and answers the setup.
async fn changed(state: &AppState, caller: &Caller, action: &str, name: &str) -> Result<Json<SetupView>, ApiError> {
    state.app.relink_mcp_servers().await;
    super::audit_change(state, caller, action, name, "succeeded", None).await?;
    view(state).await
}

/// Sets up an external MCP server whose tools become `mcp.<name>.<tool>`.
#[utoipa::path(put, path = "/api/v1/setup/mcp/{name}", tag = "setup", security(("consoleSession" = [])),
    params(ServerName),
    request_body = McpServerChange,
    responses((status = 200, description = "The setup after the change", body = SetupView),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 409, description = "Set in capstan.toml", body = ErrorBody),
              (status = 422, description = "Invalid", body = ErrorBody)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(ServerName { name }): ApiPath<ServerName>,
    ApiJson(body): ApiJson<McpServerChange>,
) -> Result<Json<SetupView>, ApiError> {
    console_only(&caller)?;
    let config = state.caps().runtime().config().clone();
    let setup = state.app.setup();
    setup
        .put_mcp_server(&config, &name, &body.entry()?, body.token.as_deref(), &caller.principal())
        .await
        .map_err(setup_error)?;
    changed(&state, &caller, "setup.mcp", &name).await
}

/// Forgets an MCP server the console set up; its tools are offered no more.
#[utoipa::path(delete, path = "/api/v1/setup/mcp/{name}", tag = "setup", security(("consoleSession" = [])),
    params(ServerName),
    responses((status = 200, description = "The setup after the change", body = SetupView),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 404, description = "Not set up in the console", body = ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(ServerName { name }): ApiPath<ServerName>,
) -> Result<Json<SetupView>, ApiError> {
    console_only(&caller)?;
    state.app.setup().remove("mcp", &name).await.map_err(setup_error)?;
    changed(&state, &caller, "setup.mcp.removed", &name).await
}

/// Connects to MCP server `name` — with the form's values when a body is
/// given (a token left out being the stored one), else as it is set up —
/// lists its tools and says what the host would offer of each, as what.
#[utoipa::path(post, path = "/api/v1/setup/mcp/{name}/test", tag = "setup", security(("consoleSession" = [])),
    params(ServerName),
    request_body(content = Option<McpServerChange>, description = "The form's values; none tests the saved setup"),
    responses((status = 200, description = "What the connection found, and with what", body = ProbeResult),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 404, description = "No such server is set up", body = ErrorBody),
              (status = 422, description = "Invalid", body = ErrorBody)))]
pub async fn test(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(ServerName { name }): ApiPath<ServerName>,
    body: Option<ApiJson<McpServerChange>>,
) -> Result<Json<ProbeResult>, ApiError> {
    console_only(&caller)?;
    let config = state.caps().runtime().config().clone();
    let servers = state.app.setup().mcp_servers(&config).await.map_err(setup_error)?;
    let (server, used) = match (body, servers.get(&name)) {
        (None, Some((server, ServerSource::File))) => (server.clone(), "as capstan.toml sets it"),
        // A form is checked as saving it would be, and the file's setup tried.
        (Some(ApiJson(form)), Some((server, ServerSource::File))) => {
            server_config(&form.entry()?, None).validate(&name).map_err(|m| setup_error(SetupError::Invalid(m)))?;
            (server.clone(), "as capstan.toml sets it; the form's values are not used")
        }
        (Some(ApiJson(form)), saved) => {
            let token = match form.token.as_deref() {
                Some(t) if !t.trim().is_empty() => {
                    kinds::literal_secret(t).map_err(|m| setup_error(SetupError::Invalid(m)))?;
                    Some(t.trim().to_string())
                }
                Some(_) => None,
                None => saved.and_then(|(s, _)| bearer(s)),
            };
            let server = server_config(&form.entry()?, token);
            server.validate(&name).map_err(|m| setup_error(SetupError::Invalid(m)))?;
            (server, "with the form's values, not saved")
        }
        (None, Some((server, _))) => (server.clone(), "as saved"),
        (None, None) => return Err(ApiError::not_found(format!("no MCP server {name} is set up"))),
    };
    let url = server.url.clone();
    let (ok, found) = match ExternalServers::try_server(&name, server).await {
        Ok(found) => (true, found),
        Err(reason) => (false, reason),
    };
    Ok(Json(ProbeResult { ok, found, used: format!("{url}, {used}") }))
}

/// The bearer token a saved server sends, if any.
fn bearer(server: &crate::config::McpServerConfig) -> Option<String> {
    match &server.auth {
        crate::config::Auth::Header { value, .. } => value.resolve().ok(),
        _ => None,
    }
}
