//! What the operator has seen and accepted, kept in
//! `<data-dir>/capabilities-state.json`: the label, services and digest of
//! each active capability, and the digests accepted with
//! `capstan capabilities accept`. A replacement is compared against this
//! record and held for the operator when it would widen what authorization
//! lets it do: a higher label, a new service, a new tag (tags name the
//! policies whose grants cover it and the plans whose approvals it
//! consumes), another replay policy or a `verify` export it did not have.
//! A capability seen for the first time is held when it carries such tags.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::descriptor::Replay;
use super::effects::EffectClass;

/// The recorded shape of one capability: everything authorization reads
/// from a descriptor. Records written before tags, replay and verify were
/// kept have `None` there, and are completed at the next activation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Known {
    pub label: EffectClass,
    pub services: Vec<String>,
    pub digest: String,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub replay: Option<Replay>,
    #[serde(default)]
    pub verify: Option<bool>,
}

/// Tags that make a capability act under authority someone gave: a policy
/// whose standing grants cover it, or plans whose approvals it consumes.
fn authority_tags(tags: &[String]) -> Vec<&str> {
    tags.iter().map(String::as_str).filter(|t| t.starts_with("policy.") || t.starts_with("plan:")).collect()
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    #[serde(default)]
    pub known: BTreeMap<String, Known>,
    /// id → digest the operator accepted.
    #[serde(default)]
    pub accepted: BTreeMap<String, String>,
    /// id → digest of the replacement last reported as held.
    #[serde(default)]
    pub held: BTreeMap<String, String>,
    /// file → reason last reported as refused.
    #[serde(default)]
    pub refused: BTreeMap<String, String>,
}

impl State {
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("capabilities-state.json")
    }

    /// Reads the state; a missing file is an empty state, a corrupt one an error.
    pub fn load(path: &Path) -> anyhow::Result<State> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{} is corrupt: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
            Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        }
    }

    /// Writes atomically (temp file, then rename) so a crash leaves the old
    /// state or the new one, never half of each.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }

    /// Why a candidate must wait for the operator, if it must: compared
    /// with what this data directory recorded, or for an id it never had,
    /// with the built-in it overrides.
    pub(crate) fn hold_reason(&self, id: &str, candidate: &Known, baseline: Option<&Known>) -> Option<String> {
        if self.accepted.get(id).is_some_and(|d| *d == candidate.digest) {
            return None;
        }
        let mut reasons = Vec::new();
        match self.known.get(id).or(baseline) {
            Some(known) => {
                if candidate.label > known.label {
                    reasons.push(format!("raises its label from {} to {}", known.label, candidate.label));
                }
                let new: Vec<&str> =
                    candidate.services.iter().filter(|s| !known.services.contains(s)).map(String::as_str).collect();
                if !new.is_empty() {
                    reasons.push(format!("asks for new services {}", new.join(", ")));
                }
                match (&known.tags, &candidate.tags) {
                    (Some(old), Some(tags)) => {
                        let new: Vec<&str> = tags.iter().filter(|t| !old.contains(t)).map(String::as_str).collect();
                        if !new.is_empty() {
                            reasons.push(format!("adds the tags {}", new.join(", ")));
                        }
                    }
                    // Recorded before tags were: what it acts under now
                    // was never seen by the operator.
                    (None, Some(tags)) => {
                        let acting = authority_tags(tags);
                        if !acting.is_empty() {
                            reasons.push(format!(
                                "carries the tags {}, which standing grants or approvals act on, and its earlier record has no tags to compare",
                                acting.join(", ")
                            ));
                        }
                    }
                    _ => {}
                }
                if let (Some(old), Some(replay)) = (known.replay, candidate.replay)
                    && old != replay
                {
                    let name = |r: Replay| format!("{r:?}").to_lowercase();
                    reasons.push(format!("changes its replay policy from {} to {}", name(old), name(replay)));
                }
                if let (Some(false), Some(true)) = (known.verify, candidate.verify) {
                    reasons.push("adds a verify export".into());
                }
            }
            None => {
                let tags = authority_tags(candidate.tags.as_deref().unwrap_or_default());
                if !tags.is_empty() {
                    reasons.push(format!(
                        "is new and carries the tags {}, which standing grants or approvals act on",
                        tags.join(", ")
                    ));
                }
            }
        }
        if reasons.is_empty() {
            None
        } else {
            Some(format!("{}; run `capstan capabilities accept {id}` to allow it", reasons.join(" and ")))
        }
    }
}

impl State {
    /// Why an external server's tool must wait for the operator, if it
    /// must: the server changed what it says about a tool since it was
    /// accepted, or added a tool after its first list was. A server's first
    /// list is accepted as its operator configured it; a change of class
    /// is the operator's own, so it is not held.
    pub(crate) fn external_hold_reason(&self, server: &str, id: &str, digest: &str) -> Option<String> {
        if self.accepted.get(id).is_some_and(|d| d == digest) {
            return None;
        }
        let accept = format!("; run `capstan capabilities accept {id}` to offer it");
        match self.known.get(id) {
            Some(known) if known.digest == digest => None,
            Some(_) => Some(format!(
                "MCP server {server} changed this tool's description, schemas or annotations since they were accepted{accept}"
            )),
            None => {
                let prefix = format!("mcp.{server}.");
                self.known
                    .keys()
                    .any(|k| k.starts_with(&prefix))
                    .then(|| format!("MCP server {server} added this tool after its tools were accepted{accept}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Known, State};
    use crate::descriptor::Replay;
    use crate::effects::EffectClass;

    fn shape(label: EffectClass, tags: &[&str], replay: Replay, verify: bool) -> Known {
        Known {
            label,
            services: vec!["tmdb".into()],
            digest: format!("{label}{tags:?}{replay:?}{verify}"),
            tags: Some(tags.iter().map(|t| t.to_string()).collect()),
            replay: Some(replay),
            verify: Some(verify),
        }
    }

    #[test]
    fn anything_authorization_reads_that_widens_is_held() {
        let mut state = State::default();
        let old = shape(EffectClass::Execute, &["download"], Replay::Never, false);
        state.known.insert("x.y".into(), old.clone());
        let held = |c: &Known| state.hold_reason("x.y", c, None);
        assert_eq!(held(&old), None);
        let fewer_tags = Known { tags: Some(vec![]), digest: "d2".into(), ..old.clone() };
        assert_eq!(held(&fewer_tags), None, "dropping a tag widens nothing");
        let cases = [
            (
                shape(EffectClass::Execute, &["download", "policy.acquisition"], Replay::Never, false),
                "adds the tags policy.acquisition",
            ),
            (
                shape(EffectClass::Execute, &["download", "plan:organization"], Replay::Never, false),
                "adds the tags plan:organization",
            ),
            (shape(EffectClass::Execute, &["download"], Replay::Safe, false), "replay policy from never to safe"),
            (shape(EffectClass::Execute, &["download"], Replay::Never, true), "adds a verify export"),
            (Known { services: vec!["tmdb".into(), "qbittorrent".into()], ..old.clone() }, "new services qbittorrent"),
        ];
        for (candidate, why) in cases {
            let reason = held(&candidate).unwrap_or_else(|| panic!("not held: {why}"));
            assert!(reason.contains(why), "{reason}");
        }
        // Accepted, the same digest goes through.
        let tagged = &shape(EffectClass::Execute, &["download", "policy.acquisition"], Replay::Never, false);
        state.accepted.insert("x.y".into(), tagged.digest.clone());
        assert_eq!(state.hold_reason("x.y", tagged, None), None);
    }

    #[test]
    fn an_external_tool_that_changes_or_appears_is_held() {
        let mut state = State::default();
        assert_eq!(state.external_hold_reason("notes", "mcp.notes.add", "d1"), None, "a server's first list");
        let known = |digest: &str| Known {
            label: EffectClass::Execute,
            services: vec![],
            digest: digest.into(),
            tags: Some(vec![]),
            replay: Some(Replay::Never),
            verify: Some(false),
        };
        state.known.insert("mcp.notes.add".into(), known("d1"));
        assert_eq!(state.external_hold_reason("notes", "mcp.notes.add", "d1"), None);
        assert!(state.external_hold_reason("notes", "mcp.notes.add", "d2").unwrap().contains("changed this tool"));
        assert!(state.external_hold_reason("notes", "mcp.notes.wipe", "d3").unwrap().contains("added this tool"));
        assert_eq!(state.external_hold_reason("other", "mcp.other.wipe", "d3"), None, "another server's first list");
        state.accepted.insert("mcp.notes.add".into(), "d2".into());
        assert_eq!(state.external_hold_reason("notes", "mcp.notes.add", "d2"), None, "accepted");
    }

    #[test]
    fn a_new_capability_acting_under_authority_is_held() {
        let state = State::default();
        let plain = shape(EffectClass::Execute, &["library"], Replay::Never, false);
        assert_eq!(state.hold_reason("new.one", &plain, None), None);
        let acting = shape(EffectClass::Execute, &["plan:acquisition"], Replay::Never, false);
        assert!(
            state
                .hold_reason("new.one", &acting, None)
                .unwrap()
                .contains("is new and carries the tags plan:acquisition")
        );
        let policy = shape(EffectClass::Read, &["policy.library"], Replay::Safe, false);
        assert!(state.hold_reason("new.two", &policy, None).is_some());
    }

    #[test]
    fn records_from_before_tags_were_kept_hold_only_authority_tags() {
        let mut state = State::default();
        let old = Known {
            label: EffectClass::Read,
            services: vec![],
            digest: "a".into(),
            tags: None,
            replay: None,
            verify: None,
        };
        state.known.insert("x.y".into(), old);
        let plain = Known { services: vec![], ..shape(EffectClass::Read, &["library"], Replay::Safe, true) };
        assert_eq!(state.hold_reason("x.y", &plain, None), None, "nothing to compare, nothing widening");
        let acting =
            Known { services: vec![], ..shape(EffectClass::Read, &["policy.acquisition"], Replay::Safe, true) };
        assert!(state.hold_reason("x.y", &acting, None).unwrap().contains("policy.acquisition"));
    }
}
