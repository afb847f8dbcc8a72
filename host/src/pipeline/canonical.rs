//! Canonical JSON and idempotency keys. Keys are
//! `<id>:v<version>:<scope>:<sha256 of the canonical input>`, where scope is
//! the run, the task, or the explicit user request the call belongs to.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// JSON text with object keys sorted at every level and no whitespace, so
/// equal inputs hash equally whatever order their keys came in.
pub fn canonical(value: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push(':');
                    write(&map[*k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// SHA-256 of the canonical form, hex.
pub fn input_digest(value: &Value) -> String {
    hex::encode(Sha256::digest(canonical(value).as_bytes()))
}

/// The idempotency key of a call.
pub fn idempotency_key(id: &str, version: u32, scope: &str, digest: &str) -> String {
    format!("{id}:v{version}:{scope}:{digest}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_digest() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b: Value = serde_json::from_str(r#"{"a":{"x":"s","y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(canonical(&a), r#"{"a":{"x":"s","y":[1,2]},"b":1}"#);
        assert_eq!(input_digest(&a), input_digest(&b));
        assert_ne!(input_digest(&a), input_digest(&json!({"b": 2, "a": {"y": [1, 2], "x": "s"}})));
    }
}
