//! The console's Services page over HTTP: `GET /api/v1/setup` (TMDB, the
//! Torznab indexers, qBittorrent, the notification targets, the roots and the library's naming, each
//! with where its value comes from; secrets only say whether they are
//! set), `PUT`/`DELETE /api/v1/setup/services/{name}`, `PUT`/`DELETE
//! /api/v1/setup/roots/{name}`, `PUT /api/v1/setup/library`, and the Test
//! buttons `POST /api/v1/setup/services/{name}/test` and `POST
//! /api/v1/setup/roots/test`. Changes are a console administrator's only,
//! audited, and take effect at once; what `capstan.toml` sets is the
//! file's (409).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::openapi::path::{Parameter, ParameterIn};

use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;
use crate::http::schema::WrittenOut;
use crate::setup::probe::{self, ProbeResult};
use crate::setup::{LibraryEntry, ServiceEntry, SetupError, kinds};

pub(super) fn setup_error(e: SetupError) -> ApiError {
    match e {
        SetupError::Invalid(m) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_setup", m),
        SetupError::NotFound(m) => ApiError::not_found(m),
        SetupError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "set_in_file", m),
        other => ApiError::internal(other),
    }
}

pub(super) fn console_only(caller: &Caller) -> Result<(), ApiError> {
    match caller {
        Caller::Console(_) => Ok(()),
        Caller::Key(_) => Err(ApiError::forbidden("services are set up from a console session, not with an API key")),
    }
}

/// What the Services page shows: every service, root and MCP server the
/// console can set up, where each one's value comes from, and the
/// library's naming. Secrets only say whether they are set.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetupView {
    /// TMDB, the Torznab indexers and qBittorrent: `{name, kind, source,
    /// baseUrl, secretSet}` each, with what the console stored for it
    /// (`username`, `tokenKind`); TMDB, unless capstan.toml sets it, with
    /// `fromEnvironment`, the environment variables it takes.
    #[schema(value_type = Vec<Object>)]
    services: Value,
    /// `downloads` and `library`: `{name, path, source}` each, the path
    /// null while unset.
    #[schema(value_type = Vec<Object>)]
    roots: Value,
    /// The naming templates and how files reach the library, as the
    /// console stored them (`{}` when it stored none).
    #[schema(value_type = Object)]
    library: Value,
    /// The fields of `library` that capstan.toml sets instead.
    #[schema(value_type = Vec<String>)]
    library_from_file: Value,
    /// Every external MCP server in effect: its `name`, `source`, link
    /// `status`, the tools `offered`, `held` and `refused`, and what the
    /// console `stored` for it (never its token).
    #[schema(value_type = Vec<Object>)]
    mcp_servers: Vec<Value>,
    /// The grant saving a notification target made, so the sweeps may
    /// send to it (none when one already covered it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) made_grant: Option<String>,
    /// The grants forgetting a notification target or media server
    /// revoked: those saving it made, once nothing else sends through them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) revoked_grants: Vec<String>,
}

/// Stores a change, puts the setup in effect, and audits it.
async fn changed(state: &AppState, caller: &Caller, action: &str, subject: &str) -> Result<Json<SetupView>, ApiError> {
    crate::setup::apply(state.caps().runtime(), state.app.setup())
        .await
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_setup", e.to_string()))?;
    super::audit_change(state, caller, action, subject, "succeeded", None).await?;
    crate::acquisition::cause_may_have_cleared(state.services(), action).await;
    view(state).await
}

pub(super) async fn view(state: &AppState) -> Result<Json<SetupView>, ApiError> {
    let config = state.caps().runtime().config().clone();
    // The setup store's view, its parts moved into the page as they are.
    let mut stored = state.app.setup().view(&config).await.map_err(setup_error)?;
    Ok(Json(SetupView {
        services: stored["services"].take(),
        roots: stored["roots"].take(),
        library: stored["library"].take(),
        library_from_file: stored["libraryFromFile"].take(),
        mcp_servers: mcp_servers(state, &config).await?,
        made_grant: None,
        revoked_grants: Vec::new(),
    }))
}

/// Every external MCP server in effect: where it is set, what the console
/// stored for it (never its token), and how its link stands.
async fn mcp_servers(state: &AppState, config: &crate::config::Config) -> Result<Vec<Value>, ApiError> {
    let setup = state.app.setup();
    let servers = setup.mcp_servers(config).await.map_err(setup_error)?;
    let entries = setup.mcp_entries().await.map_err(setup_error)?;
    let mut links: std::collections::BTreeMap<String, Value> = state
        .app
        .external_tools()
        .views(&state.caps().runtime().snapshot())
        .into_iter()
        .filter_map(|v| Some((v["status"]["name"].as_str()?.to_string(), v)))
        .collect();
    Ok(servers
        .iter()
        .map(|(name, (server, source))| {
            let mut view = links.remove(name).unwrap_or_else(|| {
                json!({"status": {"name": name, "url": server.url,
                "state": "connecting", "detail": "", "tools": 0}, "offered": [], "held": [], "refused": []})
            });
            view["name"] = json!(name);
            view["source"] = json!(source);
            if let Some(stored) = entries.get(name) {
                view["stored"] = stored.clone();
            }
            view
        })
        .collect())
}

/// Every service and root the console sets up, and the library's naming.
#[utoipa::path(get, path = "/api/v1/setup", tag = "setup", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "The services, roots, library naming and MCP servers", body = SetupView),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn get(State(state): State<AppState>, _caller: Caller) -> Result<Json<SetupView>, ApiError> {
    view(&state).await
}

/// A service as the console sets it up.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ServiceChange {
    base_url: String,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    token_kind: Option<String>,
    #[serde(default)]
    topic: Option<String>,
    #[serde(default)]
    chat_id: Option<String>,
    #[serde(default)]
    library_path: Option<String>,
    #[serde(default)]
    feed_path: Option<String>,
    #[serde(default)]
    secret: Option<String>,
}

impl ServiceChange {
    /// The entry the change makes; a URL is ASCII without spaces (as a URI
    /// is), white space around it aside.
    fn entry(&self) -> Result<ServiceEntry, ApiError> {
        ascii_url(&self.base_url)?;
        Ok(ServiceEntry {
            base_url: self.base_url.clone(),
            username: self.username.clone(),
            token_kind: self.token_kind.clone(),
            topic: self.topic.clone(),
            chat_id: self.chat_id.clone(),
            library_path: self.library_path.clone(),
            feed_path: self.feed_path.clone(),
        })
    }
}

/// Refuses a URL that is not ASCII without spaces or control characters
/// once the white space around it is trimmed: such a string is not a URI,
/// whatever a lenient parser would make of it.
pub(super) fn ascii_url(url: &str) -> Result<(), ApiError> {
    if url.trim().chars().all(|c| c.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(setup_error(SetupError::Invalid(
            "the URL must be ASCII without spaces or control characters (percent-encode the rest)".into(),
        )))
    }
}

impl WrittenOut for ServiceChange {
    const NAME: &'static str = "ServiceChange";

    fn json() -> Value {
        json!({
            "description": "A service as the console sets it up.",
            "type": "object",
            "additionalProperties": false,
            "required": ["baseUrl"],
            "properties": {
                "baseUrl": {"type": "string", "format": "uri", "pattern": crate::text::service_url_pattern(),
                    "description": "http or https, without a query, a fragment or credentials; white space around it \
                        and a trailing / are dropped."},
                "username": {"type": ["string", "null"], "description": "qBittorrent's WebUI user (needed there)."},
                "tokenKind": {"type": ["string", "null"], "enum": ["apiKey", "readToken", null],
                    "description": "For TMDB: `apiKey` (default) or `readToken`."},
                "topic": {"type": ["string", "null"], "maxLength": 64,
                    "description": "For ntfy (needed there): the topic, 1 to 64 letters, digits, - or _."},
                "chatId": {"type": ["string", "null"], "maxLength": 40,
                    "description": "For Telegram (needed there): the chat's number or a channel's @username."},
                "libraryPath": {"type": ["string", "null"], "maxLength": 1000,
                    "description": "For Jellyfin, Emby or Plex: the library folder as the server sees it, when not \
                        the path Capstan sees (an absolute path)."},
                "feedPath": {"type": ["string", "null"], "maxLength": 2000,
                    "description": "For a tracker's RSS feed: its path and query after the address, without the \
                        key (as the setup shows it); a feed URL typed as the secret replaces it."},
                "secret": {"type": ["string", "null"], "not": {"pattern": kinds::reference_pattern()},
                    "description": "The API key, read token, password, bot token (Telegram), webhook URL (Discord), \
                        feed URL with its passkey (a tracker's RSS feed) or token (a webhook's or ntfy's, optional), \
                        sent as typed (so not starting with env: or file:); absent or blank keeps the stored one."},
            },
        })
    }
}

impl utoipa::PartialSchema for ServiceChange {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::http::schema::placeholder()
    }
}

impl utoipa::ToSchema for ServiceChange {}

/// The name of a service the console sets up, in a path: any other is 404.
#[derive(Deserialize)]
pub(crate) struct ServiceName {
    name: String,
}

impl utoipa::IntoParams for ServiceName {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let names = kinds::SERVICE_NAMES.iter().map(|(name, _)| *name);
        let described = "tmdb, torznab, torznab-2, torznab-3, rss, qbittorrent, transmission, a notification \
                         target (webhook, ntfy, telegram, discord) or a media server (jellyfin, emby, plex)";
        vec![name_parameter(described, names)]
    }
}

/// The name of a root the console sets, in a path: any other is 404.
#[derive(Deserialize)]
pub(crate) struct RootName {
    name: String,
}

impl utoipa::IntoParams for RootName {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![name_parameter("downloads or library", kinds::ROOT_NAMES.iter().copied())]
    }
}

fn name_parameter<'a>(description: &str, names: impl Iterator<Item = &'a str>) -> Parameter {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let schema = ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names)).build();
    crate::http::schema::parameter("name", ParameterIn::Path, description, schema)
}

/// Sets up TMDB, a Torznab indexer (`torznab`, `torznab-2`, `torznab-3`),
/// a tracker's RSS feed (`rss`), qBittorrent or Transmission, a notification target (`webhook`, `ntfy`, `telegram`,
/// `discord`) or a media server (`jellyfin`, `emby`, `plex`); a target or
/// server no grant covers yet is given one, so the sweeps may tell it
/// what happened (`madeGrant` names it).
#[utoipa::path(put, path = "/api/v1/setup/services/{name}", tag = "setup", security(("consoleSession" = [])),
    params(ServiceName),
    request_body = ServiceChange,
    responses((status = 200, description = "The setup after the change", body = SetupView),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 404, description = "No such service can be set up here", body = ErrorBody),
              (status = 409, description = "Set in capstan.toml", body = ErrorBody),
              (status = 422, description = "Invalid", body = ErrorBody)))]
pub async fn put_service(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(ServiceName { name }): ApiPath<ServiceName>,
    ApiJson(body): ApiJson<ServiceChange>,
) -> Result<Json<SetupView>, ApiError> {
    console_only(&caller)?;
    let config = state.caps().runtime().config().clone();
    let entry = body.entry()?;
    state
        .app
        .setup()
        .put_service(&config, &name, &entry, body.secret.as_deref(), &caller.principal())
        .await
        .map_err(setup_error)?;
    let mut view = changed(&state, &caller, "setup.service", &name).await?;
    if let Some(capability) = kinds::kind_of(&name).and_then(kinds::told_by) {
        view.0.made_grant = super::notifications::grant_target(&state, &caller, capability, &name).await?;
    }
    Ok(view)
}

/// Forgets a service the console set up.
#[utoipa::path(delete, path = "/api/v1/setup/services/{name}", tag = "setup", security(("consoleSession" = [])),
    params(ServiceName),
    responses((status = 200, description = "The setup after the change", body = SetupView),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 404, description = "Not set up in the console", body = ErrorBody)))]
pub(crate) async fn remove_service(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(ServiceName { name }): ApiPath<ServiceName>,
) -> Result<Json<SetupView>, ApiError> {
    console_only(&caller)?;
    state.app.setup().remove("service", &name).await.map_err(setup_error)?;
    let mut view = changed(&state, &caller, "setup.service.remove", &name).await?;
    if let Some(capability) = kinds::kind_of(&name).and_then(kinds::told_by) {
        view.0.revoked_grants = super::notifications::release_target(&state, &caller, capability).await?;
    }
    Ok(view)
}

/// Makes a real request to the service: with a body, as the form has it
/// (saved or not; a secret left out is the stored one), else as it is set
/// up now. The answer says which values it used.
#[utoipa::path(post, path = "/api/v1/setup/services/{name}/test", tag = "setup", security(("consoleSession" = [])),
    params(ServiceName),
    request_body(content = Option<ServiceChange>, description = "The form's values; none tests the saved setup"),
    responses((status = 200, description = "What the request found, and with what", body = ProbeResult),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 404, description = "No such service can be set up here", body = ErrorBody),
              (status = 422, description = "The form's values are not valid", body = ErrorBody)))]
pub(crate) async fn test_service(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(ServiceName { name }): ApiPath<ServiceName>,
    body: Option<ApiJson<ServiceChange>>,
) -> Result<Json<ProbeResult>, ApiError> {
    console_only(&caller)?;
    // The names PUT and DELETE take; any other is not a service here.
    if crate::setup::kinds::kind_of(&name).is_none() {
        return Err(ApiError::not_found(format!("no service {name} can be set up here")));
    }
    // A form is checked as saving it would be, even where the file's
    // setup is what is tried.
    let form = match body {
        Some(ApiJson(b)) => Some(probe::Form { entry: b.entry()?, secret: b.secret }),
        None => None,
    };
    let found = probe::service(state.caps().runtime(), state.app.setup(), &name, form).await;
    if found.ok {
        crate::acquisition::cause_may_have_cleared(state.services(), "a service passed its test").await;
    }
    Ok(Json(found))
}

/// The roots as the console's form has them, for a Test.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RootsTrial {
    /// The downloads folder in the form; absent or empty, the saved one.
    #[serde(default)]
    downloads: Option<String>,
    /// The library folder in the form; absent or empty, the saved one.
    #[serde(default)]
    library: Option<String>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RootChange {
    #[schema(schema_with = absolute_path)]
    path: String,
}

/// An absolute path, as `put_root` checks it.
fn absolute_path() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(crate::text::absolute_path_pattern()))
        .description(Some("An absolute folder this host can see, apart from the data and capabilities folders."))
        .build()
}

/// Sets the `downloads` or `library` root.
#[utoipa::path(put, path = "/api/v1/setup/roots/{name}", tag = "setup", security(("consoleSession" = [])),
    params(RootName),
    request_body = RootChange,
    responses((status = 200, description = "The setup after the change", body = SetupView),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 404, description = "No such root can be set up here", body = ErrorBody),
              (status = 409, description = "Set in capstan.toml", body = ErrorBody),
              (status = 422, description = "Not an absolute folder, or overlapping the host's own", body = ErrorBody)))]
pub async fn put_root(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(RootName { name }): ApiPath<RootName>,
    ApiJson(body): ApiJson<RootChange>,
) -> Result<Json<SetupView>, ApiError> {
    console_only(&caller)?;
    let config = state.caps().runtime().config().clone();
    state.app.setup().put_root(&config, &name, &body.path, &caller.principal()).await.map_err(setup_error)?;
    changed(&state, &caller, "setup.root", &name).await
}

/// Forgets a root the console set.
#[utoipa::path(delete, path = "/api/v1/setup/roots/{name}", tag = "setup", security(("consoleSession" = [])),
    params(RootName),
    responses((status = 200, description = "The setup after the change", body = SetupView),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 404, description = "Not set up in the console", body = ErrorBody)))]
pub(crate) async fn remove_root(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(RootName { name }): ApiPath<RootName>,
) -> Result<Json<SetupView>, ApiError> {
    console_only(&caller)?;
    state.app.setup().remove("root", &name).await.map_err(setup_error)?;
    changed(&state, &caller, "setup.root.remove", &name).await
}

/// Looks at the roots: folders, writable, and whether downloads hard-link
/// into the library. A body gives the form's folders (saved or not).
#[utoipa::path(post, path = "/api/v1/setup/roots/test", tag = "setup", security(("consoleSession" = [])),
    request_body(content = Option<RootsTrial>, description = "The form's folders; none tests the saved ones"),
    responses((status = 200, description = "What the look found, and at which folders", body = ProbeResult),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody)))]
pub(crate) async fn test_roots(
    State(state): State<AppState>,
    caller: Caller,
    body: Option<ApiJson<RootsTrial>>,
) -> Result<Json<ProbeResult>, ApiError> {
    console_only(&caller)?;
    let mut form = std::collections::BTreeMap::new();
    if let Some(ApiJson(RootsTrial { downloads, library })) = body {
        form.extend(downloads.map(|p| ("downloads".to_string(), p)));
        form.extend(library.map(|p| ("library".to_string(), p)));
    }
    Ok(Json(probe::roots(state.caps().runtime(), form).await))
}

/// Sets the library's naming templates, how files reach it, and where downloads go.
#[utoipa::path(put, path = "/api/v1/setup/library", tag = "setup", security(("consoleSession" = [])),
    request_body = LibraryEntry,
    responses((status = 200, description = "The setup after the change", body = SetupView),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "Not from a console session", body = ErrorBody),
              (status = 422, description = "Invalid", body = ErrorBody)))]
pub async fn put_library(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<LibraryEntry>,
) -> Result<Json<SetupView>, ApiError> {
    console_only(&caller)?;
    state.app.setup().put_library(&body, &caller.principal()).await.map_err(setup_error)?;
    changed(&state, &caller, "setup.library", "library").await
}
