//! Records a call holds for as long as it runs. A transition that starts
//! long work on a record (`organization.start`: an organization placing
//! files) takes that record for the rest of the call, and another call
//! that tries to start the same record meanwhile is refused with a
//! conflict before anything changes. Starting a `running` organization is
//! how an interrupted one is finished, so without the hold two calls could
//! place the same files at once and record contradicting outcomes.
//!
//! The hold ends when the call's store is dropped, however the call ended
//! (returned, failed, trapped, ran past its deadline). Holds are kept in
//! this process: two processes sharing one database are not kept apart.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// The records held by running calls of one runtime.
#[derive(Default)]
pub struct Holds {
    held: Arc<Mutex<HashSet<String>>>,
}

/// One call's hold on one record; released when dropped.
pub struct Hold {
    key: String,
    held: Arc<Mutex<HashSet<String>>>,
}

impl Hold {
    pub fn key(&self) -> &str {
        &self.key
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.key);
    }
}

impl Holds {
    /// Takes `key`, or answers `None` when another call holds it.
    pub fn take(&self, key: &str) -> Option<Hold> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.insert(key.to_string()).then(|| Hold { key: key.to_string(), held: self.held.clone() })
    }
}

/// The record transition `name` holds for the rest of the call, if any,
/// with how to name it in a refusal.
pub fn held_by(name: &str, args: &str) -> Option<(String, String)> {
    match name {
        "organization.start" => {
            let args: Value = serde_json::from_str(args).ok()?;
            let id = args.get("id")?.as_str()?;
            Some((format!("organization:{id}"), format!("organization {id}")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_record_is_refused_until_its_hold_is_dropped() {
        let holds = Holds::default();
        let first = holds.take("organization:o1").expect("free at first");
        assert!(holds.take("organization:o1").is_none(), "held by the first call");
        let other = holds.take("organization:o2");
        assert!(other.is_some(), "another record is free");
        drop(first);
        assert!(holds.take("organization:o1").is_some(), "free once the first call ended");
    }

    #[test]
    fn only_starting_an_organization_holds_anything() {
        let (key, what) = held_by("organization.start", r#"{"id":"o1","fingerprint":"f"}"#).unwrap();
        assert_eq!((key.as_str(), what.as_str()), ("organization:o1", "organization o1"));
        assert!(held_by("organization.finish", r#"{"id":"o1"}"#).is_none());
        assert!(held_by("organization.start", "not json").is_none(), "bad arguments are the domain's to refuse");
    }
}
