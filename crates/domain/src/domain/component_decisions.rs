//! Decisions a component opens through the `drafts` import (`decision`).
//! A component is not trusted the way the host is: what it opens is shown
//! to a human as a question, and a human's answer carries their authority,
//! so a component's decision is held to narrower rules than the host's.
//!
//! - Its kind is its own: not one the host opens ([`HOST_KINDS`]), and
//!   its dedupe key starts with `<kind>:`, so it can neither answer for a
//!   host decision nor stand in the way of one.
//! - A dedupe key another opener used is refused (`conflict`), and what a
//!   component gets back is only the decision's id, kind, subject, status
//!   and key: never evidence, options or answers it did not write.
//! - It may hold at most [`MAX_UNDECIDED`] undecided decisions, and its
//!   evidence and options are bounded in size.
//! - It may not offer the host's own actions (`retry` a task, give a plan
//!   up for `another` release, `unwant` a title): those are the host's to
//!   offer.
//! - A capability it offers runs, when a human chooses it, with no outside
//!   effect (`recovery::resolve` refuses one labelled above propose and
//!   caps the call's grant at propose).

use serde_json::Value;

use capstan_contract::ops::drafts::DecisionOpened;
use capstan_contract::ops::queries::{DecisionOutline, SeenDecision};

use super::{Decision, Domain, DomainError};

/// The kinds only the host opens.
pub const HOST_KINDS: &[&str] =
    &["download_failed", "download_stalled", "download_submit_failed", "import_failed", "agent_budget"];

/// The most undecided decisions one capability may have open at a time.
pub const MAX_UNDECIDED: i64 = 100;

/// Longest kind, subject and dedupe key accepted.
const MAX_KIND: usize = 64;
const MAX_SUBJECT: usize = 200;
const MAX_KEY: usize = 256;
/// Largest evidence and options, as JSON text.
const MAX_JSON: usize = 64 * 1024;

fn invalid(message: String) -> DomainError {
    DomainError::Invalid(message)
}

/// What a component is told of a decision.
fn view(decision: &Decision) -> SeenDecision {
    SeenDecision::Outline(DecisionOutline {
        id: decision.id.clone(),
        kind: decision.kind.clone(),
        subject: decision.subject.clone(),
        status: decision.status,
        dedupe_key: Some(decision.dedupe_key.clone()),
    })
}

fn check_shape(
    kind: &str,
    subject: Option<&str>,
    evidence: &Value,
    options: &Value,
    key: &str,
) -> Result<(), DomainError> {
    let kind_chars = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    if kind.is_empty() || kind.len() > MAX_KIND || !kind.chars().all(kind_chars) {
        return Err(invalid(format!(
            "a decision's kind is 1 to {MAX_KIND} of a-z, 0-9 and _, not {:?}",
            crate::runtime::text::clip(kind, 80)
        )));
    }
    if HOST_KINDS.contains(&kind) {
        return Err(invalid(format!(
            "a component may not open a {kind} decision: the host opens those ({})",
            HOST_KINDS.join(", ")
        )));
    }
    let rest = key.strip_prefix(kind).and_then(|r| r.strip_prefix(':')).unwrap_or_default();
    if rest.trim().is_empty() || key.len() > MAX_KEY || key.contains('#') {
        return Err(invalid(format!(
            "a {kind} decision's dedupe key is \"{kind}:<what it is about>\" (at most {MAX_KEY} bytes, no #), not {:?}",
            crate::runtime::text::clip(key, 80)
        )));
    }
    if subject.is_some_and(|s| s.chars().count() > MAX_SUBJECT) {
        return Err(invalid(format!("a decision's subject is at most {MAX_SUBJECT} characters")));
    }
    // Queuing one of the host's tasks again, or giving up a plan or a
    // wanted title, is the host's to offer: a button a component labels
    // could otherwise re-run any task that died or drop what a person wants.
    let host_action = options.as_array().into_iter().flatten().find_map(|o| {
        let action = o.get("action").and_then(Value::as_str)?;
        super::decision_options::HOST_ACTIONS.contains(&action).then_some(action)
    });
    if let Some(action) = host_action {
        return Err(invalid(format!(
            "a component's decision may not offer the action {action:?}; only the host offers it"
        )));
    }
    for (what, value) in [("evidence", evidence), ("options", options)] {
        let size = value.to_string().len();
        if size > MAX_JSON {
            return Err(invalid(format!("a decision's {what} is {size} bytes of JSON; at most {MAX_JSON} are kept")));
        }
    }
    Ok(())
}

impl Domain {
    /// Opens a decision for the component of `capability` (or finds the one
    /// it opened under `dedupe_key`), by the rules above. The component is
    /// told the decision's outline and its dedupe key.
    pub async fn open_component_decision(
        &self,
        capability: &str,
        kind: &str,
        subject: Option<&str>,
        options: &Value,
        evidence: &Value,
        dedupe_key: &str,
    ) -> Result<DecisionOpened, DomainError> {
        check_shape(kind, subject, evidence, options, dedupe_key)?;
        let taken = || {
            DomainError::Conflict(format!("the dedupe key {dedupe_key:?} is taken by a decision another opener made"))
        };
        if let Some(found) = self.decision_by_key(dedupe_key).await? {
            if found.opened_by.as_deref() != Some(capability) {
                return Err(taken());
            }
            return Ok(DecisionOpened { decision: view(&found), created: false });
        }
        let undecided: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM decision WHERE opened_by = $1 AND status NOT IN ('resolved', 'dismissed')",
        )
        .bind(capability)
        .fetch_one(&self.db.pool)
        .await?;
        if undecided >= MAX_UNDECIDED {
            return Err(DomainError::Conflict(format!(
                "{capability} already has {undecided} undecided decisions, the most one capability may have open; \
                 more are opened once a human answers some"
            )));
        }
        let (decision, created) =
            self.open_decision_by(Some(capability), kind, subject, options, evidence, dedupe_key).await?;
        // Two calls raced to the key, and the other opener won.
        if decision.opened_by.as_deref() != Some(capability) {
            return Err(taken());
        }
        Ok(DecisionOpened { decision: view(&decision), created })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_component_decision_of_its_own_kind_and_key_is_accepted() {
        let ok = check_shape("quality_check", Some("r1"), &json!({"a": 1}), &json!([]), "quality_check:r1");
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn host_kinds_foreign_keys_and_oversized_parts_are_refused_with_the_reason() {
        let big = json!({"blob": "x".repeat(MAX_JSON)});
        let cases = [
            ("download_failed", None, json!({}), "download_failed:d1", "the host opens those"),
            ("agent_budget", None, json!({}), "agent_budget:run1", "the host opens those"),
            ("Quality", None, json!({}), "Quality:1", "a-z, 0-9 and _"),
            ("", None, json!({}), ":1", "a-z, 0-9 and _"),
            ("quality_check", None, json!({}), "download_failed:d1", "dedupe key is"),
            ("quality_check", None, json!({}), "quality_check:", "dedupe key is"),
            ("quality_check", None, json!({}), "quality_check:r1#2", "no #"),
            ("quality_check", Some("s".repeat(201)), json!({}), "quality_check:r1", "subject is at most"),
            ("quality_check", None, big, "quality_check:r1", "evidence is"),
        ];
        for (action, extra) in [("retry", json!({"taskId": "t1"})), ("another", json!({})), ("unwant", json!({}))] {
            let mut option = json!({"id": "again", "label": "Leave it", "action": action});
            option.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            let err = check_shape("quality_check", None, &json!({}), &json!([option]), "quality_check:r1").unwrap_err();
            assert!(err.to_string().contains(&format!("may not offer the action \"{action}\"")), "{err}");
        }
        for (kind, subject, evidence, key, expected) in cases {
            let err = check_shape(kind, subject.as_deref(), &evidence, &json!([]), key).unwrap_err().to_string();
            assert!(err.contains(expected), "{kind} {key}: {err}");
        }
    }
}
