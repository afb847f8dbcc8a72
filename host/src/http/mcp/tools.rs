//! Each loaded capability as the MCP tool it is, for a key whose scopes
//! reach its label: its id as the tool's name (MCP names may hold dots),
//! its summary as the title, its description, its input schema as the
//! model providers get it (an object at the top: a tagged union is
//! flattened, anything else wrapped as `{"input": ...}` and unwrapped on
//! the way back), its output schema where it is an object, and
//! annotations that follow from the label rather than from anything the
//! component says about itself:
//!
//! | label | readOnly | destructive | idempotent |
//! |---|---|---|---|
//! | read, preview | true | – | true |
//! | propose | false | false | – |
//! | execute | false | true | replay policy `safe` |
//!
//! `openWorld` is whether it names an outbound service. Held components
//! and files still compiling are not in the snapshot's active set, so
//! they are never listed.
//!
//! A client whose model API refuses dots in tool names connects to
//! `/mcp?names=plain`: each name is then the id with `.` as `_`
//! (`release_inspect`), mapped back on each call; two ids that would
//! share a name are both left out rather than confused.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

use crate::agent::providers::schema::for_wire;
use crate::runtime::{Descriptor, EffectClass, Replay, Snapshot};

/// Whether a key reaching `ceiling` may see and call a capability labelled `label`.
pub fn reaches(ceiling: Option<EffectClass>, label: EffectClass) -> bool {
    ceiling.is_some_and(|c| c >= label)
}

/// How tools are named to a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// The capability id as it is (`release.inspect`).
    Ids,
    /// Letters, digits, `_` and `-` only (`release_inspect`).
    Plain,
}

impl Naming {
    /// From the endpoint's query string: `names=plain`, else ids.
    pub(crate) fn of_query(query: Option<&str>) -> Naming {
        let plain = query.into_iter().flat_map(|q| q.split('&')).any(|pair| pair == "names=plain");
        if plain { Naming::Plain } else { Naming::Ids }
    }

    fn name(self, id: &str) -> String {
        match self {
            Naming::Ids => id.to_string(),
            Naming::Plain => id.replace('.', "_"),
        }
    }
}

/// The ids a key reaching `ceiling` may use, by the name it sees them
/// under; ids that would share a name are left out.
pub fn names(snapshot: &Snapshot, ceiling: Option<EffectClass>, naming: Naming) -> BTreeMap<String, String> {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for loaded in snapshot.active.values().filter(|l| reaches(ceiling, l.descriptor.label)) {
        by_name.entry(naming.name(&loaded.descriptor.id)).or_default().push(loaded.descriptor.id.clone());
    }
    by_name
        .into_iter()
        .filter_map(|(name, mut ids)| match ids.len() {
            1 => ids.pop().map(|id| (name, id)),
            _ => {
                tracing::warn!(%name, ?ids, "capabilities share an MCP tool name; neither is offered under it");
                None
            }
        })
        .collect()
}

/// The id a key reaching `ceiling` calls under `name`, as [`names`] maps
/// it, without building the whole map: a call looks up one name.
pub fn id_named(snapshot: &Snapshot, ceiling: Option<EffectClass>, naming: Naming, name: &str) -> Option<String> {
    let reached = |id: &str| snapshot.active.get(id).is_some_and(|l| reaches(ceiling, l.descriptor.label));
    match naming {
        // Ids are unique: the name is the id.
        Naming::Ids => reached(name).then(|| name.to_string()),
        Naming::Plain => {
            let plain = |id: &str| {
                id.len() == name.len() && id.chars().zip(name.chars()).all(|(i, n)| i == n || (i == '.' && n == '_'))
            };
            let mut ids = snapshot.active.keys().filter(|id| plain(id) && reached(id));
            match (ids.next(), ids.next()) {
                (Some(id), None) => Some(id.clone()),
                // Two ids sharing a name: neither is offered under it.
                _ => None,
            }
        }
    }
}

/// The tools a key reaching `ceiling` sees.
pub fn visible(snapshot: &Snapshot, ceiling: Option<EffectClass>, naming: Naming) -> Vec<Tool> {
    let names = names(snapshot, ceiling, naming);
    names
        .iter()
        .filter_map(|(name, id)| {
            let mut tool = tool(&snapshot.get(id)?.descriptor);
            tool.name = name.clone().into();
            Some(tool)
        })
        .collect()
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// `schema` with every boolean subschema under `properties` or `items`
/// written as an object (`true` as `{}`, `false` as `{"not": {}}`): JSON
/// Schema allows both, but MCP clients check that each property's schema
/// is an object (a `serde_json::Value` field is `true` in a generated one).
fn with_object_subschemas(schema: &mut Value) {
    let as_object = |v: &mut Value| match v {
        Value::Bool(true) => *v = serde_json::json!({}),
        Value::Bool(false) => *v = serde_json::json!({"not": {}}),
        other => with_object_subschemas(other),
    };
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    ("properties" | "$defs" | "definitions" | "patternProperties", Value::Object(children)) => {
                        children.values_mut().for_each(as_object)
                    }
                    ("items", value) => as_object(value),
                    (_, value) => with_object_subschemas(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(with_object_subschemas),
        _ => {}
    }
}

/// The annotations a label and a replay policy make. A tool of an
/// external MCP server (tagged `mcp`) reaches the world outside the host.
fn annotations(d: &Descriptor) -> ToolAnnotations {
    let open_world = !d.services.is_empty() || d.tags.iter().any(|t| t == "mcp");
    let base = ToolAnnotations::new().open_world(open_world);
    match d.label {
        EffectClass::Read | EffectClass::Preview => base.read_only(true).idempotent(true),
        EffectClass::Propose => base.read_only(false).destructive(false),
        EffectClass::Execute => base.read_only(false).destructive(true).idempotent(d.replay == Replay::Safe),
    }
}

/// The tool capability `d` is.
pub fn tool(d: &Descriptor) -> Tool {
    let mut input = for_wire(&d.input_schema).schema;
    with_object_subschemas(&mut input);
    let description = if d.description.trim().is_empty() { d.summary.clone() } else { d.description.clone() };
    let mut tool = Tool::new(d.id.clone(), description, Arc::new(object(input))).with_annotations(annotations(d));
    if !d.summary.trim().is_empty() {
        tool = tool.with_title(d.summary.clone());
    }
    // MCP takes an output schema only as an object; a call's structured
    // content is then what the schema says.
    if d.output_schema.get("type").and_then(Value::as_str) == Some("object") {
        let mut output = d.output_schema.clone();
        with_object_subschemas(&mut output);
        let mut output = object(output);
        output.remove("$schema");
        tool = tool.with_raw_output_schema(Arc::new(output));
    }
    tool
}

/// A call's arguments as capability `d` takes them: unwrapped from
/// `{"input": ...}` when its schema had to be wrapped (`wrapped`, from
/// [`Wrapped::of`]).
pub fn input_of(wrapped: bool, arguments: Option<JsonObject>) -> Value {
    let mut arguments = arguments.unwrap_or_default();
    if wrapped {
        return arguments.remove("input").unwrap_or(Value::Null);
    }
    Value::Object(arguments)
}

/// Whether each component's input schema is wrapped on the wire, by the
/// digest of its bytes: working it out copies the schema, which a call
/// should not pay for each time.
#[derive(Default)]
pub(crate) struct Wrapped(std::sync::Mutex<std::collections::HashMap<String, bool>>);

/// Components remembered before [`Wrapped`] forgets them all.
const WRAPPED_REMEMBERED: usize = 4096;

impl Wrapped {
    pub(crate) fn of(&self, loaded: &crate::runtime::Loaded) -> bool {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(wrapped) = known.get(&loaded.digest) {
            return *wrapped;
        }
        let wrapped = for_wire(&loaded.descriptor.input_schema).wrapped;
        if known.len() >= WRAPPED_REMEMBERED {
            known.clear();
        }
        known.insert(loaded.digest.clone(), wrapped);
        wrapped
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn descriptor(label: EffectClass, replay: Replay, services: &[&str]) -> Descriptor {
        Descriptor {
            id: "download.submit".into(),
            version: 1,
            label,
            summary: "Hand a planned release to the download client".into(),
            description: "Submits a plan.".into(),
            tags: vec![],
            aliases: vec![],
            input_schema: json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
            output_schema: json!({"$schema": "x", "type": "object", "properties": {"ok": {"type": "boolean"},
                "body": true, "never": false, "list": {"type": "array", "items": true}}}),
            replay,
            services: services.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn annotations_follow_the_label_and_never_the_component() {
        let read = tool(&descriptor(EffectClass::Read, Replay::Never, &[]));
        let a = read.annotations.clone().unwrap();
        assert_eq!((a.read_only_hint, a.idempotent_hint, a.open_world_hint), (Some(true), Some(true), Some(false)));
        let propose = tool(&descriptor(EffectClass::Propose, Replay::Never, &["qbittorrent"]));
        let a = propose.annotations.clone().unwrap();
        assert_eq!((a.read_only_hint, a.destructive_hint, a.open_world_hint), (Some(false), Some(false), Some(true)));
        for (replay, idempotent) in [(Replay::Safe, true), (Replay::Verify, false), (Replay::Never, false)] {
            let a = tool(&descriptor(EffectClass::Execute, replay, &[])).annotations.unwrap();
            assert_eq!((a.destructive_hint, a.idempotent_hint), (Some(true), Some(idempotent)), "{replay:?}");
        }
        assert_eq!(read.title.as_deref(), Some("Hand a planned release to the download client"));
        let output = read.output_schema.unwrap();
        assert!(!output.contains_key("$schema") && output["type"] == "object");
        // Boolean subschemas become the objects MCP clients check for.
        assert_eq!(output["properties"]["body"], json!({}));
        assert_eq!(output["properties"]["never"], json!({"not": {}}));
        assert_eq!(output["properties"]["list"]["items"], json!({}));
    }

    #[test]
    fn a_schema_that_is_not_an_object_is_wrapped_and_unwrapped() {
        let d = descriptor(EffectClass::Read, Replay::Never, &[]);
        let t = tool(&d);
        assert_eq!(t.input_schema["type"], "object");
        assert_eq!(t.input_schema["required"], json!(["input"]));
        let args = object(json!({"input": 7}));
        assert!(for_wire(&d.input_schema).wrapped);
        assert_eq!(input_of(true, Some(args.clone())), json!(7));
        assert_eq!(input_of(false, Some(args)), json!({"input": 7}), "an object schema's arguments are the input");
        assert!(!reaches(Some(EffectClass::Read), EffectClass::Preview) && !reaches(None, EffectClass::Read));
        assert!(reaches(Some(EffectClass::Execute), EffectClass::Propose));
    }

    #[test]
    fn plain_names_are_asked_for_in_the_query() {
        assert_eq!(Naming::of_query(Some("names=plain")), Naming::Plain);
        assert_eq!(Naming::of_query(Some("x=1&names=plain")), Naming::Plain);
        assert_eq!(Naming::of_query(Some("names=plainer")), Naming::Ids);
        assert_eq!(Naming::of_query(None), Naming::Ids);
        assert_eq!(Naming::Plain.name("system.command-output"), "system_command-output");
    }
}
