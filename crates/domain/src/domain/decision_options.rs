//! What a decision offers: each option has an `id` (unique within the
//! decision, what a human's answer names), a `label` to show, and exactly
//! one thing it does — `capabilityId` with an `input` object (that call,
//! made through the invoke path for whoever chose it), or an `action`:
//! `retry` (the task named by `taskId` is queued again), `reevaluate` and
//! `accept` (the subject is looked at again), `another` (the subject's plan
//! fails and another release is picked), `unwant` (the subject's title is
//! no longer wanted), `dismiss` and `ignore` (nothing is done). `detail` may carry what the console shows beside it
//! (a candidate's title and score). Options are checked when a decision is
//! opened, so an answer can always be carried out as written.

use serde_json::{Map, Value};

use super::DomainError;

/// The actions an option may name instead of a capability.
pub const OPTION_ACTIONS: &[&str] = &["retry", "reevaluate", "accept", "another", "unwant", "dismiss", "ignore"];

/// The actions only the host may offer: each changes what the host does
/// next (runs a task again, gives up a plan or a wanted title), which a
/// button a component labels must never do.
pub(crate) const HOST_ACTIONS: &[&str] = &["retry", "another", "unwant"];

/// The fields an option may have.
const FIELDS: &[&str] = &["id", "label", "action", "capabilityId", "input", "taskId", "detail"];

/// Longest option id and label accepted.
const MAX_ID: usize = 128;
const MAX_LABEL: usize = 200;
/// Most options one decision may offer.
const MAX_OPTIONS: usize = 20;

fn invalid(message: String) -> DomainError {
    DomainError::Invalid(message)
}

fn text<'a>(option: &'a Map<String, Value>, field: &str, n: usize, max: usize) -> Result<&'a str, DomainError> {
    let value = option.get(field).and_then(Value::as_str).map(str::trim).unwrap_or_default();
    if value.is_empty() {
        return Err(invalid(format!("option {n} needs a non-empty {field}")));
    }
    if value.chars().count() > max {
        return Err(invalid(format!("option {n}'s {field} is longer than {max} characters")));
    }
    Ok(value)
}

/// Checks `options` (an array; null counts as none) and answers them as
/// they will be stored.
pub fn checked(options: &Value) -> Result<Value, DomainError> {
    let list = match options {
        Value::Null => return Ok(Value::Array(Vec::new())),
        Value::Array(list) => list,
        _ => return Err(invalid("a decision's options must be a list".into())),
    };
    if list.len() > MAX_OPTIONS {
        return Err(invalid(format!("a decision offers at most {MAX_OPTIONS} options, not {}", list.len())));
    }
    let mut ids = Vec::new();
    for (n, option) in list.iter().enumerate() {
        let Some(option) = option.as_object() else {
            return Err(invalid(format!("option {n} must be an object with an id, a label and what it does")));
        };
        if let Some(unknown) = option.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "option {n} has an unknown field {unknown:?}; allowed: {}",
                FIELDS.join(", ")
            )));
        }
        let id = text(option, "id", n, MAX_ID)?;
        if ids.contains(&id) {
            return Err(invalid(format!("option id {id:?} is used twice")));
        }
        ids.push(id);
        text(option, "label", n, MAX_LABEL)?;
        match (option.get("capabilityId"), option.get("action")) {
            (Some(_), None) => {
                text(option, "capabilityId", n, MAX_ID)?;
                if option.get("input").is_some_and(|i| !i.is_object()) {
                    return Err(invalid(format!("option {id:?}'s input must be an object")));
                }
            }
            (None, Some(action)) => {
                let action = action.as_str().unwrap_or_default();
                if !OPTION_ACTIONS.contains(&action) {
                    let allowed = OPTION_ACTIONS.join(", ");
                    return Err(invalid(format!("option {id:?}'s action {action:?} is not one of {allowed}")));
                }
                if option.contains_key("input") {
                    return Err(invalid(format!("option {id:?} has an input but no capabilityId to give it to")));
                }
                if action == "retry" {
                    text(option, "taskId", n, MAX_ID)
                        .map_err(|_| invalid(format!("option {id:?} retries a task, so it needs a taskId")))?;
                }
            }
            _ => {
                return Err(invalid(format!("option {id:?} needs exactly one of capabilityId or action")));
            }
        }
        if option.contains_key("taskId") && option.get("action").and_then(Value::as_str) != Some("retry") {
            return Err(invalid(format!("option {id:?} has a taskId but does not retry a task")));
        }
    }
    Ok(options.clone())
}

/// The option of `options` whose id is `id`.
pub fn find<'a>(options: &'a Value, id: &str) -> Option<&'a Value> {
    options.as_array()?.iter().find(|o| o.get("id").and_then(Value::as_str) == Some(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_that_can_be_carried_out_are_kept() {
        let good = json!([
            {"id": "recheck", "label": "Force recheck", "capabilityId": "download.recheck", "input": {"downloadTaskId": "d1"}},
            {"id": "again", "label": "Try again", "action": "retry", "taskId": "t1"},
            {"id": "pick", "label": "The Lion King (1994)", "capabilityId": "identity.resolve", "detail": {"score": 0.9}},
            {"id": "leave", "label": "Leave it", "action": "dismiss"}
        ]);
        assert_eq!(checked(&good).unwrap(), good);
        assert_eq!(checked(&Value::Null).unwrap(), json!([]));
        assert_eq!(find(&good, "again").unwrap()["taskId"], "t1");
        assert!(find(&good, "nope").is_none());
    }

    #[test]
    fn options_that_could_not_be_carried_out_are_refused_with_the_reason() {
        let cases = [
            (json!({"id": "x"}), "a list"),
            (json!(["raise the budget"]), "must be an object"),
            (json!([{"label": "L", "action": "dismiss"}]), "non-empty id"),
            (json!([{"id": " ", "label": "L", "action": "dismiss"}]), "non-empty id"),
            (json!([{"id": "a", "action": "dismiss"}]), "non-empty label"),
            (json!([{"id": "a", "label": "L"}]), "exactly one of"),
            (json!([{"id": "a", "label": "L", "action": "dismiss", "capabilityId": "c"}]), "exactly one of"),
            (json!([{"id": "a", "label": "L", "action": "delete"}]), "is not one of"),
            (json!([{"id": "a", "label": "L", "action": 3}]), "is not one of"),
            (json!([{"id": "a", "label": "L", "action": "retry"}]), "needs a taskId"),
            (json!([{"id": "a", "label": "L", "action": "accept", "taskId": "t"}]), "does not retry"),
            (json!([{"id": "a", "label": "L", "action": "accept", "input": {}}]), "no capabilityId"),
            (json!([{"id": "a", "label": "L", "capabilityId": "c", "input": [1]}]), "must be an object"),
            (json!([{"id": "a", "label": "L", "action": "dismiss", "run": "rm -rf"}]), "unknown field"),
            (
                json!([{"id": "a", "label": "L", "action": "dismiss"}, {"id": "a", "label": "M", "action": "ignore"}]),
                "used twice",
            ),
            (json!([{"id": "a".repeat(129), "label": "L", "action": "dismiss"}]), "longer than"),
        ];
        for (options, expected) in cases {
            let err = checked(&options).unwrap_err().to_string();
            assert!(err.contains(expected), "{options}: {err}");
        }
        let many: Vec<Value> =
            (0..21).map(|i| json!({"id": format!("o{i}"), "label": "L", "action": "ignore"})).collect();
        assert!(checked(&Value::Array(many)).unwrap_err().to_string().contains("at most 20"));
    }
}
