//! The host's view of a capability descriptor, converted from the WIT record
//! and validated before a component may enter the registry.

use serde::{Deserialize, Serialize};

use super::bindings::capstan::capability::types as wit;
use super::effects::EffectClass;

/// What the host may do with an uncertain call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replay {
    Safe,
    Verify,
    Never,
}

/// A validated descriptor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Descriptor {
    pub id: String,
    pub version: u32,
    pub label: EffectClass,
    pub summary: String,
    pub description: String,
    pub tags: Vec<String>,
    pub aliases: Vec<String>,
    pub input_schema: serde_json::Value,
    pub output_schema: serde_json::Value,
    pub replay: Replay,
    pub services: Vec<String>,
}

/// Size caps of a descriptor's parts. A descriptor is read into memory,
/// stored, listed and sent to models on every run: nothing in it may be
/// unbounded.
const MAX_SUMMARY: usize = 300;
const MAX_DESCRIPTION: usize = 16 << 10;
const MAX_LIST: usize = 32;
const MAX_WORD: usize = 100;
const MAX_SERVICES: usize = 16;

fn check_sizes(d: &wit::Descriptor) -> Result<(), String> {
    let too_big =
        |what: &str, len: usize, cap: usize| Err(format!("{}: {what} is {len} bytes, over the cap of {cap}", d.id));
    if d.summary.len() > MAX_SUMMARY {
        return too_big("the summary", d.summary.len(), MAX_SUMMARY);
    }
    if d.description.len() > MAX_DESCRIPTION {
        return too_big("the description", d.description.len(), MAX_DESCRIPTION);
    }
    for (what, list, cap) in
        [("tags", &d.tags, MAX_LIST), ("aliases", &d.aliases, MAX_LIST), ("services", &d.services, MAX_SERVICES)]
    {
        if list.len() > cap {
            return Err(format!("{}: {} {what}, over the cap of {cap}", d.id, list.len()));
        }
        if let Some(word) = list.iter().find(|w| w.len() > MAX_WORD || w.trim().is_empty()) {
            return Err(format!(
                "{}: {what} must be 1 to {MAX_WORD} bytes each, not {:?}",
                d.id,
                word.chars().take(40).collect::<String>()
            ));
        }
    }
    Ok(())
}

/// Ids look like `catalog.lookup`: lowercase segments joined by dots.
fn valid_id(id: &str) -> bool {
    let segment_ok = |s: &str| {
        !s.is_empty()
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    };
    id.len() <= 64 && id.contains('.') && id.split('.').all(segment_ok)
}

/// Parses a schema within the size and nesting caps (`schema_caps`);
/// the rest of its caps are checked where the loader compiles it.
fn schema(which: &str, text: &str) -> Result<serde_json::Value, String> {
    super::schema_caps::parse(text).map_err(|e| format!("the {which} schema {e}"))
}

impl Descriptor {
    /// Converts and validates the WIT descriptor.
    pub(crate) fn from_wit(d: wit::Descriptor) -> Result<Descriptor, String> {
        if !valid_id(&d.id) {
            let shown: String = d.id.chars().take(80).collect();
            return Err(format!("descriptor id {shown:?} is not a dotted lowercase id like catalog.lookup"));
        }
        check_sizes(&d)?;
        if d.version == 0 {
            return Err(format!("{}: descriptor version must be at least 1", d.id));
        }
        if d.summary.trim().is_empty() {
            return Err(format!("{}: descriptor summary is empty", d.id));
        }
        for service in &d.services {
            if service.is_empty() || !service.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(format!("{}: service name {service:?} is not a plain name", d.id));
            }
        }
        Ok(Descriptor {
            input_schema: schema("input", &d.input_schema).map_err(|e| format!("{}: {e}", d.id))?,
            output_schema: schema("output", &d.output_schema).map_err(|e| format!("{}: {e}", d.id))?,
            label: match d.label {
                wit::Label::Read => EffectClass::Read,
                wit::Label::Preview => EffectClass::Preview,
                wit::Label::Propose => EffectClass::Propose,
                wit::Label::Execute => EffectClass::Execute,
            },
            replay: match d.replay {
                wit::ReplayPolicy::Safe => Replay::Safe,
                wit::ReplayPolicy::Verify => Replay::Verify,
                wit::ReplayPolicy::Never => Replay::Never,
            },
            id: d.id,
            version: d.version,
            summary: d.summary,
            description: d.description,
            tags: d.tags,
            aliases: d.aliases,
            services: d.services,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::valid_id;

    #[test]
    fn ids_are_dotted_lowercase() {
        assert!(valid_id("catalog.lookup"));
        assert!(valid_id("example.word-count"));
        assert!(!valid_id("Catalog.Lookup"));
        assert!(!valid_id("nodot"));
        assert!(!valid_id("a..b"));
    }
}
