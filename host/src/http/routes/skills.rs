//! `GET /api/v1/skills` and `GET /api/v1/skills/{name}`: the skills runs
//! may read, the folders refused and why, and one skill whole; `PUT
//! /api/v1/skills/{name}` (a console session) writes one into the skills
//! folder, checked first, audited (`skill.create`, `skill.replace`).

use axum::Json;
use axum::extract::State;

use crate::http::AppState;
use crate::http::auth::KeyAuth;
use crate::http::error::ApiError;
use crate::http::extract::ApiPath;
use crate::http::openapi::ErrorBody;
use crate::skills::{Skill, SkillSet};

/// The skills as they stand now, read off the disk on a blocking thread
/// (a skills folder may be on a slow disk).
async fn current(state: &AppState) -> Result<SkillSet, ApiError> {
    let skills = state.app.skills().clone();
    let snapshot = state.caps().runtime().snapshot();
    tokio::task::spawn_blocking(move || skills.current(&snapshot)).await.map_err(ApiError::internal)
}

/// Every skill a run may read, and every skill folder refused with its
/// reason.
#[utoipa::path(get, path = "/api/v1/skills", tag = "skills", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "The skills, and the folders refused", body = SkillSet),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, _: KeyAuth) -> Result<Json<SkillSet>, ApiError> {
    Ok(Json(current(&state).await?))
}

/// One skill, with its instructions.
#[utoipa::path(get, path = "/api/v1/skills/{name}", tag = "skills", security(("apiKey" = []), ("consoleSession" = [])),
    params(("name" = String, Path, description = "The skill's name")),
    responses((status = 200, description = "The skill", body = Skill),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 404, description = "No skill of that name can be read; a refused one says why", body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    _: KeyAuth,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Skill>, ApiError> {
    let set = current(&state).await?;
    if let Some(skill) = set.get(&name) {
        return Ok(Json(skill.as_ref().clone()));
    }
    Err(match set.refused.iter().find(|r| r.folder == name) {
        Some(refused) => ApiError::not_found(format!("skill {name} is refused: {}", refused.reason)),
        None => ApiError::not_found(format!("no skill is named {name}")),
    })
}

/// A skill written in the console.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct WriteSkill {
    /// The whole `SKILL.md`: front matter, then the instructions.
    text: String,
    /// Whether it may take the place of the skill folder of that name.
    #[serde(default)]
    replace: bool,
}

/// Writes a skill into the skills folder, checked as a listing checks it
/// first: a refused text changes nothing.
#[utoipa::path(put, path = "/api/v1/skills/{name}", tag = "skills", security(("consoleSession" = [])),
    params(("name" = String, Path, description = "The skill's name, which is its folder's")),
    request_body = WriteSkill,
    responses((status = 201, description = "A new skill, as runs will read it", body = Skill),
              (status = 200, description = "The skill replaced, as runs will read it", body = Skill),
              (status = 401, description = "No console session", body = ErrorBody),
              (status = 403, description = "Skills are written from a console session", body = ErrorBody),
              (status = 409, description = "A skill folder of that name exists (replace not asked) or a built-in has the name", body = ErrorBody),
              (status = 422, description = "The text is not a skill that could be read: the reason", body = ErrorBody)))]
pub async fn put(
    State(state): State<AppState>,
    caller: crate::http::auth::Caller,
    ApiPath(name): ApiPath<String>,
    crate::http::error::ApiJson(body): crate::http::error::ApiJson<WriteSkill>,
) -> Result<(axum::http::StatusCode, Json<Skill>), ApiError> {
    use crate::skills::WriteError;
    use axum::http::StatusCode;
    let skills = state.app.skills().clone();
    let snapshot = state.caps().runtime().snapshot();
    let name_written = name.clone();
    let written = tokio::task::spawn_blocking(move || skills.write(&name_written, &body.text, body.replace, &snapshot))
        .await
        .map_err(ApiError::internal)?;
    let (skill, created) = written.map_err(|e| match e {
        WriteError::Refused(why) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", why).about("text"),
        WriteError::Taken(why) => ApiError::new(StatusCode::CONFLICT, "conflict", why),
        WriteError::Io(e) => ApiError::internal(e),
    })?;
    let action = if created { "skill.create" } else { "skill.replace" };
    let detail = serde_json::json!({"tools": skill.tools, "triggers": skill.triggers}).to_string();
    super::audit_change(&state, &caller, action, &name, "succeeded", Some(detail)).await?;
    Ok((if created { StatusCode::CREATED } else { StatusCode::OK }, Json(skill)))
}
