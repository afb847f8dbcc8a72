//! Who is told what happened, over HTTP: `GET /api/v1/notifications` says
//! which kinds of events are told (the setting `notifications.events`)
//! and, for each notification target (`notify.webhook`, `notify.ntfy`,
//! `notify.telegram`, `notify.discord`) and each media server asked to
//! rescan imports (`mediaserver.refresh` for `jellyfin`, `emby`, `plex`),
//! whether its service is set up, whether a grant lets the sweeps call
//! it, and where it stands: its place in the event log, the calls that
//! failed in a row and why, when it was last told. Saving one on the
//! Services page gives it a grant when none covers it ([`grant_target`]).

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use crate::authz::{Callee, MAX_GRANT_DAYS, NewGrant};
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::http::openapi::ErrorBody;
use crate::notify::rescan::{self, SERVERS};
use crate::notify::{NotifyTarget, TARGETS};

/// How the reason of a grant [`grant_target`] made ends, after the
/// service's name: [`release_target`] knows such grants by it.
const CONNECTED: &str = " was connected on the Services page";

/// Messages a day a grant made for a target allows: far more than the
/// sweeps send (one message per sweep with something to tell).
const TARGET_DAILY_MESSAGES: i64 = 500;

/// One notification target.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TargetView {
    /// The capability that tells it (`mediaserver.refresh` for a media
    /// server).
    capability_id: String,
    /// The outbound service it sends through (set up on the Services page).
    service: String,
    /// Whether that service is set up.
    set_up: bool,
    /// Whether a grant lets the sweeps send to it now.
    granted: bool,
    /// Where it stands; none until it was first told something.
    state: Option<NotifyTarget>,
}

/// What is told, and to whom.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct Notifications {
    /// The kinds of events told (`notifications.events`).
    events: Vec<String>,
    targets: Vec<TargetView>,
}

/// Whether an active grant covers each of `capabilities` for the sweeps,
/// in their order; the grants are read once.
async fn granted(state: &AppState, capabilities: &[&str]) -> Result<Vec<bool>, ApiError> {
    let snapshot = state.caps().runtime().snapshot();
    let tags: Vec<Vec<String>> =
        capabilities.iter().map(|c| snapshot.get(c).map(|l| l.descriptor.tags.clone()).unwrap_or_default()).collect();
    let calls: Vec<Callee> = capabilities.iter().zip(&tags).map(|(id, tags)| Callee { id, tags }).collect();
    let found = state.services().authz.covering_grants(&calls, &serde_json::json!({})).await?;
    Ok(found.iter().map(Option::is_some).collect())
}

/// The targets and what is told to them.
#[utoipa::path(get, path = "/api/v1/notifications", tag = "settings", security(("apiKey" = []), ("consoleSession" = [])),
    responses((status = 200, description = "The events told and each target's state", body = Notifications),
              (status = 401, description = "No valid API key or session", body = ErrorBody)))]
pub async fn get(State(state): State<AppState>, _caller: Caller) -> Result<Json<Notifications>, ApiError> {
    let runtime = state.caps().runtime().clone();
    let mut stood = crate::notify::targets_of(&state.services().db).await?;
    let mut targets = Vec::new();
    let servers = SERVERS.iter().map(|s| (rescan::CAPABILITY, *s, rescan::place_of(s)));
    let told: Vec<_> = TARGETS.iter().map(|(c, s)| (*c, *s, c.to_string())).chain(servers).collect();
    let capabilities: Vec<&str> = told.iter().map(|(c, _, _)| *c).collect();
    let granted = granted(&state, &capabilities).await?;
    for ((capability, service, place), granted) in told.into_iter().zip(granted) {
        let at = stood.iter().position(|t| t.capability_id == place);
        targets.push(TargetView {
            capability_id: capability.to_string(),
            service: service.to_string(),
            set_up: runtime.has_service(service),
            granted,
            state: at.map(|i| stood.swap_remove(i)),
        });
    }
    let events = crate::notify::chosen(state.app.settings()).await;
    Ok(Json(Notifications { events, targets }))
}

/// Gives the sweeps a grant to send with `capability` when none covers it
/// (a target just connected): a year long, [`TARGET_DAILY_MESSAGES`] a
/// day, audited as any grant. Returns the grant made, if one was.
pub(super) async fn grant_target(
    state: &AppState,
    caller: &Caller,
    capability: &str,
    service: &str,
) -> Result<Option<String>, ApiError> {
    if granted(state, &[capability]).await?[0] || state.caps().runtime().snapshot().get(capability).is_none() {
        return Ok(None);
    }
    let mut new: NewGrant = serde_json::from_value(serde_json::json!({"action": capability}))
        .map_err(|e| ApiError::internal(format!("a target's grant: {e}")))?;
    new.scope.capabilities = vec![capability.to_string()];
    new.daily_invocations = TARGET_DAILY_MESSAGES;
    // A day short of the longest, so the bound holds when it is checked.
    new.expires_at = crate::store::now_ms() + (MAX_GRANT_DAYS - 1) * 24 * 3600 * 1000;
    new.reason = Some(format!("made when {service}{CONNECTED}"));
    let grant =
        state.services().authz.create_grant(&new, &caller.principal()).await.map_err(super::grants::authz_error)?;
    let detail = format!("{} for {} messages a day until {}", grant.action, grant.daily_invocations, grant.expires_at);
    super::audit_change(state, caller, "grant.create", &grant.id, "succeeded", Some(detail)).await?;
    Ok(Some(grant.id))
}

/// Revokes the grants [`grant_target`] made for `capability` once the
/// last service it sends through is forgotten (a media server's grant
/// serves the other servers while one is set up), so forgetting a target
/// leaves no standing authority behind. Grants a person made are kept.
/// Returns the grants revoked, each audited as `grant.revoke`.
pub(super) async fn release_target(
    state: &AppState,
    caller: &Caller,
    capability: &str,
) -> Result<Vec<String>, ApiError> {
    let runtime = state.caps().runtime().clone();
    let senders = TARGETS.iter().filter(|(c, _)| *c == capability).map(|(_, s)| *s);
    let servers = SERVERS.iter().copied().filter(|_| capability == rescan::CAPABILITY);
    if senders.chain(servers).any(|service| runtime.has_service(service)) {
        return Ok(Vec::new());
    }
    let authz = &state.services().authz;
    let made_here = |g: &crate::authz::AutomationGrant| {
        g.action == capability
            && g.revoked_at.is_none()
            && g.reason.as_deref().is_some_and(|r| r.starts_with("made when ") && r.ends_with(CONNECTED))
    };
    let mut revoked = Vec::new();
    for grant in authz.grants().await?.into_iter().filter(made_here) {
        authz.revoke_grant(&grant.id).await.map_err(super::grants::authz_error)?;
        let detail = format!("{capability}: its last target was forgotten on the Services page");
        super::audit_change(state, caller, "grant.revoke", &grant.id, "succeeded", Some(detail)).await?;
        revoked.push(grant.id);
    }
    Ok(revoked)
}
