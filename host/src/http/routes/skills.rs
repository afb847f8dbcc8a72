//! `GET /api/v1/skills` and `GET /api/v1/skills/{name}`: the skills runs
//! may read, the folders refused and why, and one skill whole.

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
