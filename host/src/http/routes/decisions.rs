//! Decisions over HTTP: `GET /api/v1/decisions` (by status, kind and
//! subject, newest first, a page at a time: `next` is the cursor
//! `<createdAt>.<id>` of the last one), `GET /api/v1/decisions/{id}`,
//! and `PATCH /api/v1/decisions/{id}` to answer one — `{status:
//! "resolved", optionId}` or `{status: "dismissed"}`. Answering is open to
//! a console administrator's session and to a key with the execute scope;
//! the chosen option is then carried out by the `resolveDecision` task for
//! whoever chose it, so a key's choice is authorised like any automated
//! call. Every answer is audited.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::library::domain_error;
use crate::domain::{Answer, Decision, DecisionFilter, DecisionStatus, DomainError};
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson};
use crate::http::extract::{ApiPath, ApiQuery, in_range, named};
use crate::http::openapi::ErrorBody;
use crate::runtime::EffectClass;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct DecisionsQuery {
    status: Option<String>,
    kind: Option<String>,
    subject: Option<String>,
    after: Option<String>,
    limit: Option<i64>,
}

/// A page's cursor, `<createdAt>.<id>` of the last decision on it, read as
/// the `after` parameter's pattern in the document says.
fn cursor(after: &str) -> Result<(i64, &str), ApiError> {
    let parsed = after.split_once('.').and_then(|(at, id)| {
        let id_ok =
            (1..=64).contains(&id.len()) && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let at_ok = (1..=18).contains(&at.len()) && at.chars().all(|c| c.is_ascii_digit());
        (id_ok && at_ok).then(|| at.parse().ok().map(|at| (at, id))).flatten()
    });
    parsed.ok_or_else(|| {
        let message = format!("after must be the `next` of a page (<createdAt>.<id>), not {after:?}");
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message).about("after")
    })
}

/// A page of decisions.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct DecisionPage {
    /// Newest first.
    decisions: Vec<Decision>,
    /// The `after` of the following page; null on the last.
    next: Option<String>,
}

/// Decisions, newest first; `next` is the `after` of the following page.
#[utoipa::path(get, path = "/api/v1/decisions", tag = "decisions",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("status" = Option<String>, Query, pattern = "^(open|investigating|awaiting_user|resolved|dismissed)$",
                description = "open, investigating, awaiting_user, resolved or dismissed"),
           ("kind" = Option<String>, Query, description = "download_failed, download_stalled, identity_ambiguous, import_failed, agent_budget, ..."),
           ("subject" = Option<String>, Query, description = "The record the decision is about"),
           ("after" = Option<String>, Query, pattern = "^[0-9]{1,18}\\.[0-9A-Za-z_-]{1,64}$", description = "The previous page's `next`"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "At most this many (default 50)")),
    responses((status = 200, description = "A page of decisions", body = DecisionPage),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<DecisionsQuery>,
) -> Result<Json<DecisionPage>, ApiError> {
    let status = named::<DecisionStatus>("status", q.status.as_deref())?;
    let limit = in_range("limit", q.limit, 50, 1, 500)?;
    let after = q.after.as_deref().map(cursor).transpose()?;
    let filter = DecisionFilter { status, kind: q.kind.as_deref(), subject: q.subject.as_deref(), after };
    let decisions = state.services().domain.decisions_where(&filter, limit).await.map_err(domain_error)?;
    let next = match decisions.last() {
        Some(last) if decisions.len() as i64 == limit => Some(format!("{}.{}", last.created_at, last.id)),
        _ => None,
    };
    Ok(Json(DecisionPage { decisions, next }))
}

/// One decision.
#[utoipa::path(get, path = "/api/v1/decisions/{id}", tag = "decisions",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Decision id")),
    responses((status = 200, description = "The decision", body = Decision),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 404, description = "Not found", body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Decision>, ApiError> {
    Ok(Json(state.services().domain.decision(&id).await.map_err(domain_error)?))
}

/// How a decision is answered.
#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum DecisionAnswer {
    Resolved {
        #[serde(rename = "optionId")]
        option_id: String,
    },
    Dismissed {},
}

impl crate::http::schema::WrittenOut for DecisionAnswer {
    const NAME: &'static str = "DecisionAnswer";

    fn json() -> Value {
        let not_blank = serde_json::to_value(crate::http::schema::not_blank()).unwrap_or(Value::Null);
        json!({
            "description": "One of the decision's options chosen, or the decision dismissed.",
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["status", "optionId"],
                    "properties": {"status": {"type": "string", "enum": ["resolved"]}, "optionId": not_blank},
                },
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["status"],
                    "properties": {"status": {"type": "string", "enum": ["dismissed"]}},
                },
            ],
        })
    }
}

impl utoipa::PartialSchema for DecisionAnswer {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::http::schema::placeholder()
    }
}

impl utoipa::ToSchema for DecisionAnswer {}

/// Answers an undecided decision: resolves it with one of its options (which
/// is then carried out) or dismisses it.
#[utoipa::path(patch, path = "/api/v1/decisions/{id}", tag = "decisions",
    security(("apiKey" = []), ("consoleSession" = [])),
    params(("id" = String, Path, description = "Decision id")),
    request_body = DecisionAnswer,
    responses((status = 200, description = "The answered decision", body = Decision),
              (status = 401, description = "No valid API key or session", body = ErrorBody),
              (status = 403, description = "The key lacks the execute scope", body = ErrorBody),
              (status = 404, description = "Not found", body = ErrorBody),
              (status = 409, description = "Already resolved or dismissed", body = ErrorBody),
              (status = 422, description = "No such option, or an invalid body", body = ErrorBody)))]
pub async fn answer(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<DecisionAnswer>,
) -> Result<Json<Decision>, ApiError> {
    caller.origin(EffectClass::Execute, "answering a decision", crate::store::new_id())?;
    let (answer, action) = match &body {
        DecisionAnswer::Resolved { option_id } => (Answer::Resolve { option_id: option_id.trim() }, "decision.resolve"),
        DecisionAnswer::Dismissed {} => (Answer::Dismiss, "decision.dismiss"),
    };
    let domain = &state.services().domain;
    let result = match refused_option(&state, &id, &answer).await {
        Some(reason) => Err(DomainError::Invalid(reason)),
        None => domain.answer_decision(&id, &answer, &caller.principal()).await,
    };
    if matches!(result, Err(DomainError::NotFound(_))) {
        return Err(domain_error(result.unwrap_err()));
    }
    let outcome = if result.is_ok() { "succeeded" } else { "failed" };
    let detail = match (&result, &answer) {
        (Err(e), _) => Some(e.to_string()),
        (Ok(_), Answer::Resolve { option_id }) => Some(format!("option {option_id}")),
        (Ok(_), _) => None,
    };
    super::audit_change(&state, &caller, action, &id, outcome, detail).await?;
    let decision = result.map_err(|e| match e {
        crate::domain::DomainError::Invalid(m) => {
            ApiError::new(axum::http::StatusCode::UNPROCESSABLE_ENTITY, "invalid", m).about("optionId")
        }
        other => domain_error(other),
    })?;
    Ok(Json(decision))
}

/// Why the option `answer` chooses may not be carried out, if it may not
/// (see `recovery::refusal`): refused before anything is recorded.
async fn refused_option(state: &AppState, id: &str, answer: &Answer<'_>) -> Option<String> {
    let Answer::Resolve { option_id } = answer else { return None };
    let decision = state.services().domain.decision(id).await.ok()?;
    let option = crate::domain::decision_option(&decision.options, option_id)?;
    crate::recovery::refusal(state.services(), &decision, option)
}
