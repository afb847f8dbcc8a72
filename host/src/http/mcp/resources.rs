//! Read-only resources for a key with the read scope, each the same read
//! the HTTP API answers the same key (nothing here changes anything or
//! reaches past what the key could read there):
//!
//! - `capstan://decisions/awaiting` — decisions waiting on a person
//!   (`open` and `awaiting_user`), newest first;
//! - `capstan://library` — what the library holds and wants (`GET
//!   /library`);
//! - `capstan://audit/verdict` — whether the audit log's hash chain is
//!   intact (`GET /audit/verify`).

use rmcp::ErrorData;
use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};
use serde_json::{Value, json};

use crate::app::App;
use crate::domain::{DecisionFilter, DecisionStatus};
use crate::runtime::EffectClass;

const DECISIONS: &str = "capstan://decisions/awaiting";
const LIBRARY: &str = "capstan://library";
const AUDIT: &str = "capstan://audit/verdict";

/// Most decisions and library entries one read returns.
const MOST: i64 = 200;

/// The resources a key reaching `ceiling` may read: all three with the
/// read scope, none without.
pub fn listed(ceiling: Option<EffectClass>) -> ListResourcesResult {
    if !super::tools::reaches(ceiling, EffectClass::Read) {
        return ListResourcesResult::with_all_items(Vec::new());
    }
    let json = "application/json";
    ListResourcesResult::with_all_items(vec![
        Resource::new(DECISIONS, "decisions-awaiting")
            .with_title("Decisions waiting on a person")
            .with_description("Open decisions and those awaiting a person's answer, newest first, with their options.")
            .with_mime_type(json),
        Resource::new(LIBRARY, "library")
            .with_title("The library")
            .with_description("Every title the library holds or wants, with its slots, plans and downloads.")
            .with_mime_type(json),
        Resource::new(AUDIT, "audit-verdict")
            .with_title("The audit log's verdict")
            .with_description("Whether the audit log's hash chain is intact, and where it broke if not.")
            .with_mime_type(json),
    ])
}

/// Reads resource `uri` for a key reaching `ceiling`.
pub async fn read(app: &App, ceiling: Option<EffectClass>, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let unknown = || ErrorData::resource_not_found(format!("no resource {uri}"), Some(json!({"uri": uri})));
    if !super::tools::reaches(ceiling, EffectClass::Read) {
        return Err(unknown());
    }
    let failed = |e: &dyn std::fmt::Display| ErrorData::internal_error(format!("{uri} could not be read: {e}"), None);
    let body: Value = match uri {
        DECISIONS => {
            let domain = &app.services().domain;
            let mut awaiting = Vec::new();
            for status in [DecisionStatus::AwaitingUser, DecisionStatus::Open] {
                let filter = DecisionFilter { status: Some(status), kind: None, subject: None, after: None };
                awaiting.extend(domain.decisions_where(&filter, MOST).await.map_err(|e| failed(&e))?);
            }
            awaiting.sort_by_key(|d| std::cmp::Reverse(d.created_at));
            awaiting.truncate(MOST as usize);
            json!({ "decisions": awaiting })
        }
        LIBRARY => json!(app.services().domain.inventory(None, MOST).await.map_err(|e| failed(&e))?),
        AUDIT => json!(app.audit().verify_new().await.map_err(|e| failed(&e))?),
        _ => return Err(unknown()),
    };
    let contents = ResourceContents::text(body.to_string(), uri).with_mime_type("application/json");
    Ok(ReadResourceResult::new(vec![contents]))
}
