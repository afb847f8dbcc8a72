//! Each cap refuses the schema built to exceed it, naming the cap and what
//! was measured; schemas written the way capabilities write theirs pass.

use serde_json::{Value, json};

use super::{MAX_EXPANDED, MAX_EXPANDED_DEPTH, MAX_SCHEMA_BYTES, Measured, parse, vet};
use crate::InputValidator;

/// Parses `text` and vets it, the way the loader does.
fn refusal(text: &str) -> String {
    match parse(text).and_then(|schema| vet(&schema)) {
        Ok(measured) => panic!("accepted, measured {measured:?}: {}", super::shown(text)),
        Err(reason) => {
            assert!(!reason.contains('\n'), "reasons are one line: {reason}");
            reason
        }
    }
}

fn accepted(schema: &Value) -> Measured {
    vet(schema).unwrap_or_else(|reason| panic!("refused: {reason}"))
}

/// `levels` definitions, each an `allOf` of two references to the next:
/// checking an input against the first would visit 2^levels nodes.
fn doubling_chain(levels: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for level in 0..levels {
        let next = json!({ "$ref": format!("#/$defs/d{}", level + 1) });
        defs.insert(format!("d{level}"), json!({ "allOf": [next.clone(), next] }));
    }
    defs.insert(format!("d{levels}"), json!({ "type": "integer" }));
    json!({ "$ref": "#/$defs/d0", "$defs": defs })
}

#[test]
fn a_doubling_chain_of_references_is_measured_without_being_expanded() {
    // Level i visits itself, its two references and twice level i + 1:
    // n(i) = 3 + 2·n(i + 1) with n(levels) = 1, so n(0) = 2^(levels + 2) - 3,
    // and the root adds one.
    let expanded = |levels: u32| (1u64 << (levels + 2)) - 2;
    let reason = refusal(&doubling_chain(40).to_string());
    assert!(reason.contains(&format!("over the cap of {MAX_EXPANDED}")), "{reason}");
    assert!(reason.contains(&format!("expands to {} nodes", expanded(40))), "{reason}");
    // Past 64 levels the count saturates instead of overflowing.
    let reason = refusal(&doubling_chain(80).to_string());
    assert!(reason.contains(&format!("expands to {} nodes", u64::MAX)), "{reason}");
    // A short chain is within the cap, and measured exactly.
    let measured = accepted(&doubling_chain(5));
    assert_eq!(measured.expanded, expanded(5));
}

#[test]
fn a_long_chain_of_references_is_refused_for_its_depth() {
    // Shallow text, few nodes, but a check would recurse 401 schemas deep.
    let mut defs = serde_json::Map::new();
    for level in 0..200 {
        defs.insert(format!("d{level}"), json!({ "allOf": [{ "$ref": format!("#/$defs/d{}", level + 1) }] }));
    }
    defs.insert("d200".into(), json!({ "type": "string" }));
    let reason = refusal(&json!({ "$ref": "#/$defs/d0", "$defs": defs }).to_string());
    assert!(
        reason.contains(&format!(
            "nests 402 schemas deep when its references are followed, over the cap of {MAX_EXPANDED_DEPTH}"
        )),
        "{reason}"
    );
    assert_eq!(accepted(&doubling_chain(5)).depth, 12);
}

#[test]
fn a_schema_nested_twenty_thousand_levels_is_refused_before_it_is_parsed() {
    // 40 KB of text, within the size cap; a parser that recursed would need
    // far more stack than the small thread below has.
    let deep = format!("{{\"enum\":[{}{}]}}", "[".repeat(20_000), "]".repeat(20_000));
    assert!(deep.len() < MAX_SCHEMA_BYTES);
    let reason = std::thread::Builder::new()
        .stack_size(64 << 10)
        .spawn(move || refusal(&deep))
        .unwrap()
        .join()
        .expect("refused without running out of stack");
    assert!(reason.contains("nests 20002 levels deep, over the cap of 32 levels"), "{reason}");

    // Nested schemas as a hostile author writes them: refused by whichever
    // cap they meet first, and never parsed.
    let nots = |n: usize| format!("{}{{}}{}", "{\"not\":".repeat(n), "}".repeat(n));
    let reason = refusal(&nots(5_000));
    assert!(reason.contains("nests 5001 levels deep, over the cap of 32 levels"), "{reason}");
    let reason = refusal(&nots(20_000));
    assert!(reason.contains(&format!("over the cap of {MAX_SCHEMA_BYTES} bytes")), "{reason}");

    // Brackets in strings are text, not nesting.
    let schema = parse(&json!({ "description": "[[[[".repeat(100), "type": "object" }).to_string()).unwrap();
    accepted(&schema);
    // A value built in code is held to the same cap.
    let mut deep = json!({});
    for _ in 0..40 {
        deep = json!({ "not": deep });
    }
    assert!(vet(&deep).unwrap_err().contains("nests 41 levels deep"));
}

#[test]
fn a_huge_schema_is_refused_by_its_size() {
    let huge = json!({ "type": "object", "description": "x".repeat(70_000) }).to_string();
    let reason = refusal(&huge);
    assert!(reason.contains(&format!("is {} bytes, over the cap of 65536 bytes", huge.len())), "{reason}");
}

#[test]
fn a_schema_with_too_many_keywords_is_refused() {
    let properties: serde_json::Map<String, Value> = (0..5_000).map(|i| (i.to_string(), json!({}))).collect();
    let text = json!({ "properties": properties }).to_string();
    assert!(text.len() < MAX_SCHEMA_BYTES);
    let reason = refusal(&text);
    assert!(reason.contains("has 5001 keywords, over the cap of 4096"), "{reason}");
}

#[test]
fn backtracking_patterns_are_refused_with_the_reason() {
    for (schema, shown) in [
        (json!({ "pattern": "^(?=a)a+$" }), "^(?=a)a+$"),
        (json!({ "pattern": "^(a+)\\1$" }), "^(a+)\\\\1$"),
        (json!({ "properties": { "p": { "pattern": "(?<!x)y" } } }), "(?<!x)y"),
        (json!({ "patternProperties": { "^(?!_)": {} } }), "^(?!_)"),
    ] {
        let reason = refusal(&schema.to_string());
        assert!(reason.contains("linear-time pattern engine"), "{reason}");
        assert!(reason.contains(shown), "names the pattern: {reason}");
    }
    let reason = refusal(&json!({ "pattern": "^(?=a)a+$" }).to_string());
    assert!(reason.contains("look-around"), "says why: {reason}");
    let reason = refusal(&json!({ "pattern": "(a{1000}){1000}" }).to_string());
    assert!(reason.contains("linear-time pattern engine"), "{reason}");

    let many: serde_json::Map<String, Value> = (0..65).map(|i| (format!("^p{i}$"), json!({}))).collect();
    let reason = refusal(&json!({ "patternProperties": many }).to_string());
    assert!(reason.contains("has 65 different patterns, over the cap of 64"), "{reason}");
}

#[test]
fn a_pattern_that_backtracks_elsewhere_runs_in_linear_time_here() {
    // `^(a+)+$` against a's and a final b takes a backtracking engine
    // 2^n steps; the linear-time engine reads the text once.
    let schema = json!({ "type": "string", "pattern": "^(a+)+$" });
    let validator = InputValidator::build(&schema).unwrap();
    let hostile = json!(format!("{}b", "a".repeat(100_000)));
    assert!(!validator.validator().is_valid(&hostile), "the check ends, refusing the input");
    assert_eq!(validator.validator().iter_errors(&hostile).count(), 1);
    assert!(validator.validator().is_valid(&json!("a".repeat(100_000))));
}

#[test]
fn references_must_stay_within_the_schema_and_must_not_loop() {
    for (schema, expected) in [
        (json!({ "$ref": "https://example.com/schema.json" }), "outside the schema"),
        (json!({ "$ref": "other.json#/a" }), "outside the schema"),
        (json!({ "$ref": "#thing", "$defs": { "a": { "$anchor": "thing" } } }), "by name"),
        (json!({ "$ref": "#/$defs/missing" }), "not in the schema"),
        (json!({ "$ref": "#/$defs/a/type", "$defs": { "a": { "type": "string" } } }), "not a schema"),
        (json!({ "$ref": "#" }), "reference cycle through #"),
        (
            json!({ "$ref": "#/$defs/node", "$defs": { "node": {
                "properties": { "children": { "items": { "$ref": "#/$defs/node" } } } } } }),
            "reference cycle through #/$defs/node",
        ),
        (json!({ "$defs": { "a": { "$ref": "#/$defs/b" }, "b": { "$ref": "#/$defs/a" } } }), "reference cycle"),
        (json!({ "$dynamicRef": "#meta" }), "$dynamicRef"),
        (json!({ "$recursiveRef": "#" }), "$recursiveRef"),
        (json!({ "properties": { "a": { "$id": "https://example.com/a", "type": "string" } } }), "sets $id"),
        (
            json!({ "$schema": "http://json-schema.org/draft-04/schema#",
                    "properties": { "a": { "id": "other", "type": "string" } } }),
            "sets id",
        ),
    ] {
        let reason = refusal(&schema.to_string());
        assert!(reason.contains(expected), "{schema}: {reason}");
    }
    // Names and data that look like keywords are neither.
    accepted(&json!({
        "properties": { "$ref": { "type": "string" }, "pattern": { "type": "string" }, "$id": {} },
        "enum": [{ "$ref": "https://example.com" }, { "pattern": "(?=x)" }],
        "default": { "$dynamicRef": "#x" },
    }));
    // A definition referred to from two places is counted at each.
    let shared = accepted(&json!({
        "properties": { "a": { "$ref": "#/$defs/s" }, "b": { "$ref": "#/$defs/s" } },
        "$defs": { "s": { "type": "string" } },
    }));
    assert_eq!(shared.expanded, 5);
    // A pointer's escapes are read as the pointer says.
    accepted(&json!({ "$ref": "#/$defs/a~1b%20c", "$defs": { "a/b c": { "type": "string" } } }));
}

#[test]
fn schemas_written_the_way_capabilities_write_them_pass() {
    // What schemars writes for an input with a nested type and an enum.
    let derived = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "PlanInput",
        "type": "object",
        "properties": {
            "title_id": { "type": "string", "description": "The title to plan for." },
            "profile": { "anyOf": [{ "$ref": "#/$defs/Profile" }, { "type": "null" }] },
            "limit": { "type": ["integer", "null"], "format": "uint32", "minimum": 0 },
            "sizes": { "type": "array", "items": { "$ref": "#/$defs/Size" }, "maxItems": 16 },
        },
        "required": ["title_id"],
        "additionalProperties": false,
        "$defs": {
            "Profile": { "type": "string", "enum": ["any", "hd", "uhd"] },
            "Size": { "type": "object", "properties": {
                "min": { "type": "integer" }, "max": { "type": "integer" },
                "unit": { "$ref": "#/$defs/Unit" } } },
            "Unit": { "oneOf": [{ "const": "mb" }, { "const": "gb" }] },
        },
    });
    let measured = accepted(&derived);
    assert!(measured.expanded < 50, "{measured:?}");
    InputValidator::build(&derived).expect("compiles");
    // The word-count example's, as Python and JavaScript write it.
    let word_count = json!({
        "type": "object",
        "properties": { "text": { "type": "string", "description": "Any text.", "pattern": "\\S" } },
        "required": ["text"],
        "additionalProperties": false,
    });
    accepted(&word_count);
    // An input schema that is not a JSON Schema at all is refused at load.
    let reason = InputValidator::build(&json!({ "type": 5 })).unwrap_err();
    assert!(reason.contains("is not a valid JSON Schema"), "{reason}");
}
