//! What the operator has seen and accepted, kept in
//! `<data-dir>/capabilities-state.json`: the label, services and digest of
//! each active capability, and the digests accepted with
//! `capstan capabilities accept`. A replacement that raises the label or
//! asks for new services is compared against this record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::effects::EffectClass;

/// The recorded shape of one capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Known {
    pub label: EffectClass,
    pub services: Vec<String>,
    pub digest: String,
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

    /// Why a candidate must wait for the operator, if it must.
    pub fn hold_reason(
        &self,
        id: &str,
        label: EffectClass,
        services: &[String],
        digest: &str,
        baseline: Option<&Known>,
    ) -> Option<String> {
        let known = self.known.get(id).or(baseline)?;
        if self.accepted.get(id).is_some_and(|d| d == digest) {
            return None;
        }
        let mut reasons = Vec::new();
        if label > known.label {
            reasons.push(format!("raises its label from {} to {label}", known.label));
        }
        let new: Vec<&String> = services.iter().filter(|s| !known.services.contains(s)).collect();
        if !new.is_empty() {
            let names: Vec<&str> = new.iter().map(|s| s.as_str()).collect();
            reasons.push(format!("asks for new services {}", names.join(", ")));
        }
        if reasons.is_empty() {
            None
        } else {
            Some(format!("{}; run `capstan capabilities accept {id}` to allow it", reasons.join(" and ")))
        }
    }
}
