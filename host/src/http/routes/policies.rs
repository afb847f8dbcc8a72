//! Policies over HTTP: `GET /api/v1/policies` lists every revision (the
//! quality profiles to choose among), and `PUT /api/v1/policies/{name}`
//! writes a quality profile from a console session: the body is checked as
//! the sweep reads it (a refused one changes nothing: 422 with every
//! problem), drafted as the policy's next revision, and published through
//! `policy.apply` on the one invoke path, so it is audited like any other
//! execute call. Publishing settles the slots that name the profile: a
//! raised cutoff makes a title wanted again for an upgrade.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use capstan_quality::QualityProfile;
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::openapi::path::{Parameter, ParameterIn};

use crate::authz::Policy;
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;

/// Longest policy name.
const MAX_NAME: usize = 64;
/// What a quality profile's name looks like.
const NAME_PATTERN: &str = r"^quality\.[a-z0-9.-]+$";

/// The `{name}` of a quality profile.
#[derive(serde::Deserialize)]
pub(crate) struct ProfileName {
    name: String,
}

impl utoipa::IntoParams for ProfileName {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let mut schema = crate::http::schema::not_blank();
        schema.pattern = Some(NAME_PATTERN.into());
        schema.max_length = Some(MAX_NAME);
        let description = "The profile's name: `quality.` and then lowercase letters, digits, . or -";
        vec![crate::http::schema::parameter("name", ParameterIn::Path, description, schema)]
    }
}

/// Every revision of every policy, by name, the newest revision first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct PolicyList {
    policies: Vec<Policy>,
}

/// Every revision of every policy (quality profiles among them), newest
/// first.
#[utoipa::path(get, path = "/api/v1/policies", tag = "library", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "The policies' revisions", body = PolicyList),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, _caller: Caller) -> Result<Json<PolicyList>, ApiError> {
    Ok(Json(PolicyList { policies: state.services().authz.policies().await? }))
}

fn invalid(message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", message)
}

/// `name` when it names a quality profile: `quality.` and then lowercase
/// letters, digits, `.` or `-`.
fn profile_name(name: &str) -> Result<&str, ApiError> {
    let rest = name.strip_prefix("quality.").unwrap_or_default();
    let fits = !rest.is_empty()
        && name.len() <= MAX_NAME
        && rest.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-');
    if fits {
        Ok(name)
    } else {
        Err(invalid(format!(
            "a quality profile is named quality.<name>, in lowercase letters, digits, . or -, at most {MAX_NAME} \
             characters, like quality.movies"
        )))
    }
}

/// Writes quality profile `name` and publishes it.
#[utoipa::path(put, path = "/api/v1/policies/{name}", tag = "library", security(("consoleSession" = [])),
    params(ProfileName),
    request_body(content = Object, description = "A quality profile: `preferredResolutions` (best first), and optionally `cutoff` (a listed resolution at which a file is good enough; below it a better release replaces the file), `allowedSources`, `preferredCodecs`, `rejectTerms`, `minSizeMb`, `maxSizeMb`"),
    responses((status = 200, description = "The profile as now published", body = Policy),
              (status = 401, description = "No console session", body = ErrorBody),
              (status = 403, description = "Profiles are written from a console session", body = ErrorBody),
              (status = 422, description = "Not a usable quality profile, or not a profile name: every problem", body = ErrorBody)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(path): ApiPath<ProfileName>,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<Policy>), ApiError> {
    let name = profile_name(&path.name)?;
    let profile: QualityProfile =
        serde_json::from_value(body.clone()).map_err(|e| invalid(format!("the body is not a quality profile: {e}")))?;
    let problems = profile.problems();
    if !problems.is_empty() {
        return Err(invalid(format!("the profile cannot be used: {}", problems.join("; "))));
    }
    // What the sweep reads is what was checked, in its own spelling.
    let body = serde_json::to_value(&profile).map_err(ApiError::internal)?;
    let draft = state
        .services()
        .authz
        .draft_policy(name, &body, &caller.principal())
        .await
        .map_err(super::grants::authz_error)?;
    let input = json!({ "name": name, "revision": draft.revision });
    let _: (StatusCode, Json<Value>) =
        super::titles::call_as_resource(&state, &caller, "policy.apply", "publishing a quality profile", input, false)
            .await?;
    let published = state.services().authz.published_policy(name).await.map_err(super::grants::authz_error)?;
    Ok((StatusCode::OK, Json(published)))
}
