//! Tool schemas as model APIs accept them. A capability's input schema is
//! whatever its toolchain emits (schemars writes a tagged enum as a
//! top-level `oneOf` with no `type`); the Messages and Chat Completions
//! APIs both want `"type": "object"` at the top and refuse `oneOf`,
//! `anyOf` and `allOf` there (Chat Completions also `enum` and `not`). So:
//!
//! - an object schema goes as it is (without `$schema`);
//! - a union of objects told apart by one property with a constant value
//!   (a tagged enum) is flattened into one object: the tag as a string
//!   enum, every variant's properties (each saying which variants use it),
//!   required what every variant requires;
//! - anything else is wrapped as `{"input": <schema>}`, and the call's
//!   `input` is unwrapped when it comes back.
//!
//! The host still validates every call against the capability's own
//! schema, so flattening only loosens what the model is shown.

use serde_json::{Map, Value, json};

/// Top-level keywords either API refuses.
const REFUSED_AT_TOP: &[&str] = &["oneOf", "anyOf", "allOf", "enum", "not"];

/// A schema for the wire, and whether calls come back wrapped.
#[derive(Debug, Clone, PartialEq)]
pub struct WireSchema {
    pub schema: Value,
    pub wrapped: bool,
}

/// The definitions a schema's `$ref`s point into, by the prefix they use.
fn definitions(root: &Map<String, Value>) -> Vec<(&'static str, &Map<String, Value>)> {
    [("#/$defs/", "$defs"), ("#/definitions/", "definitions")]
        .into_iter()
        .filter_map(|(prefix, key)| root.get(key).and_then(Value::as_object).map(|m| (prefix, m)))
        .collect()
}

/// `schema` with a top-level `$ref` into the root's definitions resolved.
fn resolved<'a>(schema: &'a Value, root: &'a Map<String, Value>) -> &'a Value {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else { return schema };
    for (prefix, defs) in definitions(root) {
        if let Some(found) = reference.strip_prefix(prefix).and_then(|name| defs.get(name)) {
            return found;
        }
    }
    schema
}

fn is_object_schema(s: &Map<String, Value>) -> bool {
    s.get("type").and_then(Value::as_str) == Some("object") && !REFUSED_AT_TOP.iter().any(|k| s.contains_key(*k))
}

/// The constant a variant gives `property`, from `const` or a one-value `enum`.
fn constant<'a>(variant: &'a Map<String, Value>, property: &str) -> Option<&'a Value> {
    let p = variant.get("properties")?.get(property)?;
    p.get("const").or_else(|| p.get("enum").and_then(Value::as_array).filter(|e| e.len() == 1).map(|e| &e[0]))
}

/// Adds `schema` as what `key` may be: a second, different schema for the
/// same name makes it an `anyOf` of both (allowed below the top level).
fn merge_property(properties: &mut Map<String, Value>, key: &str, schema: &Value) {
    match properties.get_mut(key) {
        None => {
            properties.insert(key.to_string(), schema.clone());
        }
        Some(existing) if existing == schema => {}
        Some(existing) => {
            let mut options = match existing.get("anyOf").and_then(Value::as_array) {
                Some(options) if existing.as_object().is_some_and(|o| o.len() == 1) => options.clone(),
                _ => vec![existing.clone()],
            };
            if !options.contains(schema) {
                options.push(schema.clone());
            }
            *existing = json!({ "anyOf": options });
        }
    }
}

/// Flattens a tagged union of objects, or says it is not one. `common` is
/// what the schema says beside the union (properties every variant has,
/// from a struct with a flattened enum).
fn flatten(variants: &[&Map<String, Value>], common: &Map<String, Value>) -> Option<Map<String, Value>> {
    let first = variants.first()?;
    let tag = first
        .get("properties")?
        .as_object()?
        .keys()
        .find(|k| variants.iter().all(|v| constant(v, k).is_some_and(Value::is_string)))?
        .clone();
    let tags: Vec<Value> = variants.iter().filter_map(|v| constant(v, &tag).cloned()).collect();
    let mut described: Vec<String> = Vec::new();
    let mut properties = Map::new();
    let mut used_by: Map<String, Value> = Map::new();
    for (variant, value) in variants.iter().zip(&tags) {
        let name = value.as_str().unwrap_or_default();
        if let Some(d) = variant.get("description").and_then(Value::as_str) {
            described.push(format!("{name}: {d}"));
        }
        for (key, schema) in variant.get("properties").and_then(Value::as_object).into_iter().flatten() {
            if *key == tag {
                continue;
            }
            merge_property(&mut properties, key, schema);
            let users = used_by.entry(key.clone()).or_insert_with(|| json!([]));
            if let Some(list) = users.as_array_mut() {
                list.push(Value::from(name));
            }
        }
    }
    for (key, users) in &used_by {
        let users: Vec<&str> = users.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        if users.len() < variants.len()
            && let Some(Value::Object(p)) = properties.get_mut(key)
        {
            let note = format!("(for {tag} {})", users.join(", "));
            let text = match p.get("description").and_then(Value::as_str) {
                Some(d) => format!("{d} {note}"),
                None => note,
            };
            p.insert("description".into(), Value::from(text));
        }
    }
    let mut tag_schema = json!({"type": "string", "enum": tags});
    if !described.is_empty() {
        tag_schema["description"] = Value::from(described.join("; "));
    }
    properties.insert(tag.clone(), tag_schema);
    for (key, schema) in common.get("properties").and_then(Value::as_object).into_iter().flatten() {
        merge_property(&mut properties, key, schema);
    }
    let common_required = common.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    let required: Vec<Value> = std::iter::once(Value::from(tag.clone()))
        .chain(common_required.into_iter().filter(|r| r.as_str() != Some(&tag)))
        .chain(
            first
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| r.as_str() != Some(&tag))
                .filter(|r| {
                    variants
                        .iter()
                        .all(|v| v.get("required").and_then(Value::as_array).is_some_and(|req| req.contains(r)))
                })
                .cloned(),
        )
        .collect();
    let mut unique: Vec<Value> = Vec::new();
    for r in required {
        if !unique.contains(&r) {
            unique.push(r);
        }
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::from("object"));
    out.insert("properties".into(), Value::Object(properties));
    out.insert("required".into(), Value::Array(unique));
    Some(out)
}

/// The wire form of a capability's input schema (see the module docs).
pub fn for_wire(schema: &Value) -> WireSchema {
    let Some(root) = schema.as_object() else {
        return WireSchema { schema: json!({"type": "object"}), wrapped: false };
    };
    let mut top = root.clone();
    top.remove("$schema");
    let defs: Map<String, Value> =
        ["$defs", "definitions"].iter().filter_map(|k| top.remove(*k).map(|v| (k.to_string(), v))).collect();
    let with_defs = |mut out: Map<String, Value>| {
        out.extend(defs.clone());
        if let Some(d) = root.get("description").filter(|_| !out.contains_key("description")) {
            out.insert("description".into(), d.clone());
        }
        Value::Object(out)
    };
    let body = match resolved(&Value::Object(top.clone()), root) {
        Value::Object(o) if o.contains_key("$ref") => top.clone(),
        Value::Object(o) => o.clone(),
        _ => top.clone(),
    };
    if is_object_schema(&body) {
        return WireSchema { schema: with_defs(body), wrapped: false };
    }
    let branches = body.get("oneOf").or_else(|| body.get("anyOf")).and_then(Value::as_array);
    if let Some(branches) = branches {
        let variants: Option<Vec<&Map<String, Value>>> =
            branches.iter().map(|b| resolved(b, root).as_object().filter(|v| is_object_schema(v))).collect();
        if let Some(flat) = variants.as_deref().and_then(|v| flatten(v, &body)) {
            return WireSchema { schema: with_defs(flat), wrapped: false };
        }
    }
    let mut wrapper = Map::new();
    wrapper.insert("type".into(), Value::from("object"));
    wrapper.insert("properties".into(), json!({ "input": Value::Object(body) }));
    wrapper.insert("required".into(), json!(["input"]));
    WireSchema { schema: with_defs(wrapper), wrapped: true }
}

/// Whether a tool schema meets both APIs' documented rules for the top
/// level: an object with `"type": "object"` and none of the refused
/// keywords. `Err` says which rule it breaks.
#[cfg(test)]
fn check_top_level(schema: &Value) -> Result<(), String> {
    let Some(o) = schema.as_object() else { return Err("the schema is not a JSON object".into()) };
    if o.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the schema must have \"type\": \"object\" at the top level".into());
    }
    if let Some(k) = REFUSED_AT_TOP.iter().find(|k| o.contains_key(**k)) {
        return Err(format!("the schema must not have {k} at the top level"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{check_top_level, for_wire};

    #[test]
    fn an_object_schema_goes_as_it_is() {
        let s =
            json!({"$schema": "x", "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
        let wire = for_wire(&s);
        assert!(!wire.wrapped);
        assert_eq!(
            wire.schema,
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
        );
    }

    #[test]
    fn a_tagged_union_is_flattened_into_one_object() {
        let s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "LookupInput",
            "oneOf": [
                {"type": "object", "description": "Search by name",
                 "properties": {"action": {"type": "string", "const": "search"}, "query": {"type": "string"}, "year": {"$ref": "#/$defs/Year"}},
                 "required": ["action", "query"]},
                {"type": "object", "properties": {"action": {"type": "string", "const": "details"}, "tmdbId": {"type": "integer"}},
                 "required": ["action", "tmdbId"]}
            ],
            "$defs": {"Year": {"type": "integer"}}
        });
        let wire = for_wire(&s);
        assert!(!wire.wrapped);
        check_top_level(&wire.schema).unwrap();
        let p = &wire.schema["properties"];
        assert_eq!(p["action"]["enum"], json!(["search", "details"]));
        assert!(p["action"]["description"].as_str().unwrap().contains("search: Search by name"));
        assert!(p["query"]["description"].as_str().unwrap().contains("(for action search)"));
        assert_eq!(wire.schema["required"], json!(["action"]));
        assert_eq!(wire.schema["$defs"]["Year"], json!({"type": "integer"}));
    }

    #[test]
    fn common_fields_are_kept_and_differing_ones_become_any_of() {
        let s = json!({
            "type": "object",
            "properties": {"token": {"type": "string"}},
            "required": ["token"],
            "oneOf": [
                {"type": "object", "properties": {"op": {"const": "set"}, "value": {"type": "string"}}, "required": ["op", "value"]},
                {"type": "object", "properties": {"op": {"const": "add"}, "value": {"type": "integer"}}, "required": ["op", "value"]}
            ]
        });
        let wire = for_wire(&s);
        assert!(!wire.wrapped);
        check_top_level(&wire.schema).unwrap();
        let p = &wire.schema["properties"];
        assert_eq!(p["token"], json!({"type": "string"}));
        assert_eq!(p["value"]["anyOf"], json!([{"type": "string"}, {"type": "integer"}]));
        assert_eq!(wire.schema["required"], json!(["op", "token", "value"]));
    }

    #[test]
    fn anything_else_is_wrapped() {
        for s in [json!({"enum": ["a", "b"]}), json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}), json!({})] {
            let wire = for_wire(&s);
            assert!(wire.wrapped, "{s}");
            check_top_level(&wire.schema).unwrap();
            assert_eq!(wire.schema["required"], json!(["input"]));
        }
    }
}
