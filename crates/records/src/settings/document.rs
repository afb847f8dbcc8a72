//! The settings as one nested document, beside the flat `{key: value}`
//! change: `{"pi": {"provider", "baseUrl", "compaction": {"enabled"}},
//! "agent": {"maxToolCalls"}, "budget": {"agentMaxRunsPerDay"}, ...}`.
//! Every registry key has one name in the document, by one rule — each
//! dotted part in camelCase under its area's section, the model's area
//! called `pi` — and the few names in [`RENAMED`]; nothing else is a name,
//! so a typo is refused by its full nested name. Values may be spelled as
//! [`VALUE_ALIASES`] allow (`"fake"` is the scripted model). Sections the
//! settings do not own (TMDB's connection, `metadata`) are handed back to
//! the caller untouched. Owns the names; the values are checked by the
//! registry as for a flat change.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::SettingsError;
use super::registry::{SETTINGS, SettingSpec};

/// Areas whose section the document names otherwise: `(area, section)`.
pub(crate) const SECTIONS: &[(&str, &str)] = &[("model", "pi")];

/// Settings whose document name is not the rule's: `(key, name)`.
pub(crate) const RENAMED: &[(&str, &str)] = &[
    ("budget.max_runs_per_day", "budget.agentMaxRunsPerDay"),
    ("budget.max_cost_usd_per_day", "budget.agentMaxCostUsdPerDay"),
];

/// Other names a change may give a setting under, beside its document
/// name: `(key, name)`. The scripted model's script is also
/// `agent.fakeScript`.
pub(crate) const ALSO_NAMED: &[(&str, &str)] = &[("model.script", "agent.fakeScript")];

/// Values a change may spell otherwise, stored as the registry's own:
/// `(key, given, stored)`.
pub(crate) const VALUE_ALIASES: &[(&str, &str, &str)] = &[("model.provider", "fake", "scripted")];

fn camel(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    let mut upper = false;
    for c in part.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

fn snake(part: &str) -> String {
    let mut out = String::with_capacity(part.len() + 4);
    for c in part.chars() {
        if c.is_uppercase() {
            out.push('_');
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The section an area is written under.
fn section_of(area: &str) -> &str {
    SECTIONS.iter().find(|(a, _)| *a == area).map_or(area, |(_, s)| s)
}

/// The name of registry key `key` in the nested document.
pub(crate) fn nested_name(key: &str) -> String {
    if let Some((_, name)) = RENAMED.iter().find(|(k, _)| *k == key) {
        return name.to_string();
    }
    let mut parts = key.split('.');
    let area = parts.next().unwrap_or_default();
    std::iter::once(section_of(area).to_string()).chain(parts.map(camel)).collect::<Vec<_>>().join(".")
}

/// What the rule would make of a nested name: the key a reader may have
/// meant when the name is not the document's (a hint, never a mapping).
fn rule_key(name: &str) -> String {
    let mut parts = name.split('.');
    let section = parts.next().unwrap_or_default();
    let area = SECTIONS.iter().find(|(_, s)| *s == section).map_or(section, |(a, _)| a);
    std::iter::once(area.to_string()).chain(parts.map(snake)).collect::<Vec<_>>().join(".")
}

/// Settings holding JSON text that a change may also give as JSON itself
/// (an object or a list), stored as its text.
pub const WRITTEN_AS_JSON: &[&str] = &["model.script"];

/// The value to store for `key` when `value` is an alias, else `value`. A
/// script given as JSON (an object or a list) is stored as its text.
pub(crate) fn unalias(key: &str, value: &Value) -> Value {
    if WRITTEN_AS_JSON.contains(&key) && (value.is_object() || value.is_array()) {
        return Value::String(value.to_string());
    }
    match value.as_str().and_then(|v| VALUE_ALIASES.iter().find(|(k, given, _)| *k == key && *given == v)) {
        Some((_, _, stored)) => json!(stored),
        None => value.clone(),
    }
}

/// The other spellings `key` takes.
pub fn aliases(key: &str) -> impl Iterator<Item = &'static str> + '_ {
    VALUE_ALIASES.iter().filter(move |(k, _, _)| *k == key).map(|(_, given, _)| *given)
}

/// A change read from a body: flat keys, nested sections, or both.
#[derive(Debug, Default)]
pub struct Document {
    /// Registry key → value, as `Settings::prepare` takes them.
    pub settings: Map<String, Value>,
    /// Registry key → the name it was given under.
    names: BTreeMap<String, String>,
    /// Sections the settings do not own, as given.
    pub other: Map<String, Value>,
}

fn field(name: &str, message: impl Into<String>) -> SettingsError {
    SettingsError::Field { key: name.to_string(), message: message.into() }
}

impl Document {
    /// Reads `body`: a registry key is a flat change, a section an object
    /// of nested names; `other` names the sections that are not settings.
    /// A name nobody knows, a section that is not an object, or a setting
    /// given twice is refused by the name as given.
    pub fn read(body: &Map<String, Value>, other: &[&str]) -> Result<Document, SettingsError> {
        let mut by_name: BTreeMap<String, &'static SettingSpec> =
            SETTINGS.iter().map(|s| (nested_name(s.key), s)).collect();
        for (key, name) in ALSO_NAMED {
            if let Some(spec) = SETTINGS.iter().find(|s| s.key == *key) {
                by_name.insert(name.to_string(), spec);
            }
        }
        let mut doc = Document::default();
        for (name, value) in body {
            if let Some(spec) = super::registry::find(name) {
                doc.add(spec, name, value)?;
            } else if other.contains(&name.as_str()) {
                doc.other.insert(name.clone(), value.clone());
            } else if by_name.keys().any(|n| n.starts_with(&format!("{name}."))) {
                doc.section(&by_name, name, value)?;
            } else {
                return Err(doc.unknown(name));
            }
        }
        if doc.settings.is_empty() && doc.other.is_empty() {
            return Err(SettingsError::Invalid("no settings to change".into()));
        }
        Ok(doc)
    }

    fn section(
        &mut self,
        by_name: &BTreeMap<String, &'static SettingSpec>,
        path: &str,
        value: &Value,
    ) -> Result<(), SettingsError> {
        let Some(fields) = value.as_object().filter(|f| !f.is_empty()) else {
            return Err(field(path, format!("{path} must be an object of settings")));
        };
        for (part, value) in fields {
            let name = format!("{path}.{part}");
            if let Some(spec) = by_name.get(&name) {
                self.add(spec, &name, value)?;
            } else if by_name.keys().any(|n| n.starts_with(&format!("{name}."))) {
                self.section(by_name, &name, value)?;
            } else {
                return Err(self.unknown(&name));
            }
        }
        Ok(())
    }

    fn add(&mut self, spec: &SettingSpec, name: &str, value: &Value) -> Result<(), SettingsError> {
        if let Some(earlier) = self.names.get(spec.key) {
            return Err(field(name, format!("{name} and {earlier} both set {}; give it once", spec.key)));
        }
        self.names.insert(spec.key.to_string(), name.to_string());
        self.settings.insert(spec.key.to_string(), unalias(spec.key, value));
        Ok(())
    }

    fn unknown(&self, name: &str) -> SettingsError {
        let mut message = format!("unknown setting {name}; GET /settings lists the known ones");
        if let Some(spec) = super::registry::find(&rule_key(name)) {
            message = format!("unknown setting {name}; {} is {} in this document", spec.key, nested_name(spec.key));
        } else if let Some((area, section)) = SECTIONS.iter().find(|(a, _)| name == *a) {
            message = format!("unknown setting {name}; the {area} settings are the section {section}");
        }
        field(name, message)
    }

    /// The registry keys this change sets.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.settings.keys()
    }

    /// `e` about the name its key was given under: a nested name for a
    /// nested change.
    pub(crate) fn name_error(&self, e: SettingsError) -> SettingsError {
        match e {
            SettingsError::Field { key, message } => match self.names.get(&key) {
                Some(name) if *name != key => {
                    let message = match message.strip_prefix(key.as_str()) {
                        Some(rest) => format!("{name}{rest}"),
                        None => format!("{name}: {message}"),
                    };
                    SettingsError::Field { key: name.clone(), message }
                }
                _ => SettingsError::Field { key, message },
            },
            other => other,
        }
    }
}

/// The nested sections as JSON Schema objects (`section → schema`), each
/// setting's schema from `leaf`; every object must name something.
pub fn sections_schema(leaf: impl Fn(&SettingSpec) -> Value) -> Map<String, Value> {
    let mut root = Map::new();
    let also =
        ALSO_NAMED.iter().filter_map(|(key, name)| Some((SETTINGS.iter().find(|s| s.key == *key)?, name.to_string())));
    for (spec, name) in SETTINGS.iter().map(|s| (s, nested_name(s.key))).chain(also) {
        let parts: Vec<&str> = name.split('.').collect();
        let mut at = &mut root;
        for part in &parts[..parts.len() - 1] {
            let node = at.entry(part.to_string()).or_insert_with(
                || json!({"type": "object", "additionalProperties": false, "minProperties": 1, "properties": {}}),
            );
            at = node["properties"].as_object_mut().expect("a section's properties are an object");
        }
        at.insert(parts[parts.len() - 1].to_string(), leaf(spec));
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(body: Value) -> Result<Document, SettingsError> {
        Document::read(body.as_object().unwrap(), &["metadata"])
    }

    fn refused_field(body: Value) -> String {
        match read(body) {
            Err(SettingsError::Field { key, .. }) => key,
            other => panic!("not refused by a field: {other:?}"),
        }
    }

    #[test]
    fn every_setting_has_one_name_and_the_names_come_back() {
        let mut seen = std::collections::HashSet::new();
        for spec in SETTINGS {
            let name = nested_name(spec.key);
            assert!(seen.insert(name.clone()), "{name} names two settings");
            let body = name.rsplit('.').fold(json!(null), |inner, part| json!({ part: inner }));
            let doc = read(body).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(doc.keys().collect::<Vec<_>>(), [spec.key], "{name}");
        }
        for (key, _) in RENAMED {
            assert!(super::super::registry::find(key).is_some(), "RENAMED names {key}, which is no setting");
        }
        for (key, _, stored) in VALUE_ALIASES {
            let spec = super::super::registry::find(key).unwrap_or_else(|| panic!("{key} is no setting"));
            assert!(spec.check(&json!(stored), |_| Ok(())).is_ok(), "{key} cannot hold {stored}");
        }
    }

    #[test]
    fn the_script_is_also_agent_fake_script_and_may_be_written_as_json() {
        let script = json!([{"match": "dune", "steps": [], "finalText": "ok"}]);
        let doc = read(json!({"agent": {"fakeScript": script}})).unwrap();
        assert_eq!(doc.settings["model.script"], json!(script.to_string()), "stored as its text");
        let doc = read(json!({"pi": {"script": {"finalText": "one"}}})).unwrap();
        assert_eq!(doc.settings["model.script"], json!(r#"{"finalText":"one"}"#));
        let twice = read(json!({"agent": {"fakeScript": "[]"}, "pi": {"script": "[]"}}));
        assert!(matches!(twice, Err(SettingsError::Field { .. })), "one setting given twice is refused");
    }

    #[test]
    fn nested_names_follow_the_rule_and_its_exceptions() {
        for (key, name) in [
            ("model.provider", "pi.provider"),
            ("model.base_url", "pi.baseUrl"),
            ("model.compaction.threshold_ratio", "pi.compaction.thresholdRatio"),
            ("model.api_key", "pi.apiKey"),
            ("agent.max_tool_calls", "agent.maxToolCalls"),
            ("agent.max_duration_sec", "agent.maxDurationSec"),
            ("budget.max_runs_per_day", "budget.agentMaxRunsPerDay"),
            ("budget.max_cost_usd_per_day", "budget.agentMaxCostUsdPerDay"),
            ("automation.read_only_reconcile", "automation.readOnlyReconcile"),
        ] {
            assert_eq!(nested_name(key), name);
        }
    }

    #[test]
    fn a_document_maps_onto_the_registry() {
        let doc = read(json!({
            "pi": {"provider": "fake", "baseUrl": "http://127.0.0.1:9/v1", "compaction": {"enabled": false, "thresholdRatio": 0.5}},
            "agent": {"maxToolCalls": 12},
            "budget": {"agentMaxRunsPerDay": 3},
            "automation.enabled": false,
            "metadata": {"tmdbApiKey": "k"},
        }))
        .unwrap();
        assert_eq!(
            Value::Object(doc.settings.clone()),
            json!({"model.provider": "scripted", "model.base_url": "http://127.0.0.1:9/v1", "model.compaction.enabled": false,
                   "model.compaction.threshold_ratio": 0.5, "agent.max_tool_calls": 12, "budget.max_runs_per_day": 3,
                   "automation.enabled": false})
        );
        assert_eq!(Value::Object(doc.other), json!({"metadata": {"tmdbApiKey": "k"}}));
    }

    #[test]
    fn unknown_names_are_refused_by_their_full_nested_name() {
        assert_eq!(refused_field(json!({"agent": {"maxToolCals": 5}})), "agent.maxToolCals");
        assert_eq!(refused_field(json!({"pi": {"compaction": {"ratio": 0.5}}})), "pi.compaction.ratio");
        assert_eq!(refused_field(json!({"pi": {"compaction": 1}})), "pi.compaction");
        assert_eq!(refused_field(json!({"agent": {}})), "agent");
        assert_eq!(refused_field(json!({"model": {"provider": "fake"}})), "model");
        assert_eq!(refused_field(json!({"model.temperature": 1})), "model.temperature");
        assert_eq!(refused_field(json!({"budget": {"maxRunsPerDay": 1}})), "budget.maxRunsPerDay");
        match read(json!({"budget": {"maxRunsPerDay": 1}})) {
            Err(e) => assert!(e.to_string().contains("budget.agentMaxRunsPerDay"), "{e}"),
            Ok(_) => unreachable!(),
        }
        // One setting given twice, flat and nested.
        assert_eq!(refused_field(json!({"model.provider": "anthropic", "pi": {"provider": "fake"}})), "pi.provider");
    }

    #[test]
    fn a_bad_value_is_named_as_it_was_given() {
        let doc = read(json!({"agent": {"maxToolCalls": 0}})).unwrap();
        let spec = super::super::registry::find("agent.max_tool_calls").unwrap();
        let message = spec.check(&json!(0), |_| Ok(())).unwrap_err();
        let named = doc.name_error(SettingsError::Field { key: spec.key.into(), message });
        match named {
            SettingsError::Field { key, message } => {
                assert_eq!(key, "agent.maxToolCalls");
                assert!(message.starts_with("agent.maxToolCalls must be between 1 and"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_schema_nests_as_the_names_do() {
        let schema = sections_schema(|spec| json!(spec.key));
        assert_eq!(
            schema["pi"]["properties"]["compaction"]["properties"]["thresholdRatio"],
            "model.compaction.threshold_ratio"
        );
        assert_eq!(schema["budget"]["properties"]["agentMaxRunsPerDay"], "budget.max_runs_per_day");
        assert_eq!(schema["agent"]["additionalProperties"], false);
    }
}
