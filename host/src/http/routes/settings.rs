//! `GET /api/v1/settings`: every setting's value (secrets only say whether
//! they are set) and what each one is. `PATCH /api/v1/settings` changes
//! several at once, only from a console administrator's session (API keys
//! get 403): flat `{key: value}`, the nested document (`{"pi": {...},
//! "agent": {...}, "budget": {...}, "metadata": {...}}`) or both; an
//! unknown name or a wrong value is 422 naming it and changes nothing;
//! `null` resets a setting or clears a secret; TMDB's connection set in
//! `capstan.toml` is 409.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::openapi::ErrorBody;
use crate::settings::{Settings, SettingsError};
use crate::setup::document::ChangeError;

fn settings_error(e: SettingsError) -> ApiError {
    match e {
        SettingsError::Invalid(m) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_setting", m),
        SettingsError::Field { key, message } => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_setting", message).about(key)
        }
        other => ApiError::internal(other),
    }
}

fn change_error(e: ChangeError) -> ApiError {
    match e {
        ChangeError::Settings(e) => settings_error(e),
        ChangeError::Field { field, message } => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_setting", message).about(field)
        }
        ChangeError::SetInFile { field, message } => {
            ApiError::new(StatusCode::CONFLICT, "set_in_file", message).about(field)
        }
        other => ApiError::internal(other),
    }
}

/// Every setting's value, and what each one is.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SettingsDescribed {
    /// Setting key → its value (the default when unset); a secret's is
    /// `{"set": true | false}` and nothing else.
    #[schema(value_type = Object)]
    settings: Value,
    /// Setting key → what it is: `{schema, default, help, label, group}`,
    /// `schema` being the JSON Schema its values keep.
    #[schema(value_type = Object)]
    schema: Value,
    /// The groups' names, in the order the console shows them.
    groups: Vec<&'static str>,
}

/// Every setting's value after a change.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SettingsValues {
    /// Setting key → its value (the default when unset); a secret's is
    /// `{"set": true | false}` and nothing else.
    #[schema(value_type = Object)]
    settings: Value,
}

/// Every setting's value and what it is; secrets show only whether they are set.
#[utoipa::path(get, path = "/api/v1/settings", tag = "settings", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "Values and their schema", body = SettingsDescribed), (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn get(State(state): State<AppState>, _caller: Caller) -> Result<Json<SettingsDescribed>, ApiError> {
    let settings = state.app.settings().all().await.map_err(settings_error)?;
    let groups = crate::settings::registry::GROUPS.iter().map(|(_, name)| *name).collect();
    Ok(Json(SettingsDescribed { settings, schema: Settings::describe(), groups }))
}

/// Setting keys and their new values (`null` resets one or clears a
/// secret), flat or as the nested document, described from the registry
/// the server checks them with.
pub(crate) struct SettingsChange;

/// A setting's schema in a change: its own, with `null` beside its type (a
/// reset) — so a refusal names what is wrong rather than "none matched" —
/// and the other spellings its values take.
fn change_schema(spec: &crate::settings::SettingSpec) -> Value {
    let mut value = spec.describe()["schema"].clone();
    if let Some(kind) = value.get("type").cloned() {
        value["type"] = json!([kind, "null"]);
        if crate::settings::document::WRITTEN_AS_JSON.contains(&spec.key) {
            value["type"] = json!([kind, "object", "array", "null"]);
        }
    }
    if let Some(choices) = value.get_mut("enum").and_then(Value::as_array_mut) {
        choices.extend(crate::settings::document::aliases(spec.key).map(Value::from));
        choices.push(Value::Null);
    }
    value["description"] = json!(spec.help);
    value
}

impl crate::http::schema::WrittenOut for SettingsChange {
    const NAME: &'static str = "SettingsChange";

    fn json() -> Value {
        let mut properties: Map<String, Value> =
            crate::settings::SETTINGS.iter().map(|spec| (spec.key.to_string(), change_schema(spec))).collect();
        properties.extend(crate::settings::document::sections_schema(change_schema));
        properties.insert(crate::setup::document::METADATA.into(), crate::setup::document::metadata_schema());
        json!({
            "description": "Settings and their new values, by registry key (`model.provider`) or as the nested \
                document (`{\"pi\": {\"provider\"}}`), or both; null resets one or clears a secret.",
            "type": "object",
            "additionalProperties": false,
            "minProperties": 1,
            "properties": properties,
        })
    }
}

impl utoipa::PartialSchema for SettingsChange {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::http::schema::placeholder()
    }
}

impl utoipa::ToSchema for SettingsChange {}

/// Changes settings, all or none; `null` resets one.
#[utoipa::path(patch, path = "/api/v1/settings", tag = "settings", security(("consoleSession" = [])),
    request_body = SettingsChange,
    responses((status = 200, description = "The settings after the change", body = SettingsValues), (status = 401, description = "No valid API key or session", body = ErrorBody), (status = 403, description = "Not allowed for this caller", body = ErrorBody), (status = 409, description = "TMDB's connection is set in capstan.toml", body = ErrorBody), (status = 422, description = "Invalid body", body = ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(changes): ApiJson<Map<String, Value>>,
) -> Result<Json<SettingsValues>, ApiError> {
    if let Caller::Key(_) = caller {
        return Err(ApiError::forbidden("settings are changed from a console session, not with an API key"));
    }
    let config = state.caps().runtime().config().clone();
    let changed =
        state.app.setup().change_settings(&config, &changes, &caller.principal()).await.map_err(change_error)?;
    // A run blocked by the model's configuration or the day's budget may go
    // on now: the waker looks at each at once.
    state.agent().runs().look_again(None).await.map_err(ApiError::internal)?;
    if changed.tmdb {
        crate::setup::apply(state.caps().runtime(), state.app.setup())
            .await
            .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_setup", e.to_string()))?;
        super::audit_change(&state, &caller, "setup.service", "tmdb", "succeeded", None).await?;
    }
    if !changed.settings.is_empty() {
        // The keys, never the values: some are secrets.
        let keys = changed.settings.join(", ");
        super::audit_change(&state, &caller, "settings.update", &keys, "succeeded", None).await?;
    }
    if changed.tmdb || !changed.settings.is_empty() {
        crate::acquisition::cause_may_have_cleared(state.services(), "settings changed").await;
    }
    let settings = state.app.settings().all().await.map_err(settings_error)?;
    Ok(Json(SettingsValues { settings }))
}
