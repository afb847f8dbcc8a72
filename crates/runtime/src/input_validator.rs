//! The validator of a loaded component's input schema: vetted against the
//! schema caps ([`schema_caps`](super::schema_caps)) and compiled when the
//! component loads, on a blocking thread, so neither the first call nor an
//! async worker ever compiles one. It carries what deciding where a check
//! runs needs: the schema's measured weight, and the one place a check of
//! this capability may take off the async threads at a time (the pipeline's
//! `check_input` uses both).

use std::sync::Arc;

use serde_json::Value;

use super::schema_caps::{self, Measured};

/// Estimated work (schema weight × input size) a check may do on the
/// caller's async thread: below it a check takes microseconds, and moving
/// it to another thread would cost more than it does.
const INLINE_WORK: u64 = 1 << 16;

/// A compiled input schema.
pub struct InputValidator {
    validator: jsonschema::Validator,
    measured: Measured,
    /// Held by a check running off the async threads, until it finishes
    /// (also when its caller has gone): a capability has one such check
    /// running at a time, so a costly schema occupies one thread, not one
    /// per caller.
    gate: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for InputValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputValidator").field("measured", &self.measured).finish_non_exhaustive()
    }
}

impl InputValidator {
    /// Vets `schema` against the caps and compiles it; the error follows
    /// "the input schema". Call off the async threads: compiling is work.
    pub fn build(schema: &Value) -> Result<InputValidator, String> {
        let measured = schema_caps::vet(schema)?;
        let validator = schema_caps::validator_options()
            .build(schema)
            .map_err(|e| format!("is not a valid JSON Schema: {}", first_line(&e.to_string())))?;
        Ok(InputValidator { validator, measured, gate: Arc::new(tokio::sync::Semaphore::new(1)) })
    }

    /// A validator built some other way, weighed as `measured` on the
    /// caller's word rather than by vetting: for tests of the invoke path
    /// that need a check of a given cost.
    pub fn weighed(validator: jsonschema::Validator, measured: Measured) -> InputValidator {
        InputValidator { validator, measured, gate: Arc::new(tokio::sync::Semaphore::new(1)) }
    }

    pub fn validator(&self) -> &jsonschema::Validator {
        &self.validator
    }

    /// What vetting measured of the schema.
    pub fn measured(&self) -> Measured {
        self.measured
    }

    /// Whether checking `input` is cheap enough to do where the caller is.
    /// Reads no more of the input than that takes to tell.
    pub fn is_cheap_for(&self, input: &Value) -> bool {
        input_size_within(input, INLINE_WORK / self.measured.weight.max(1)).is_some()
    }

    /// The place a check of this capability takes off the async threads.
    pub fn gate(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.gate
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    super::text::clip(&super::text::escape_controls(line), 300).into_owned()
}

/// An input's size for the estimate — its values and the bytes of its
/// strings and member names — when it is at most `limit`, walked without
/// recursion and no further than `limit`.
pub(crate) fn input_size_within(input: &Value, limit: u64) -> Option<u64> {
    let mut total = 0u64;
    let mut stack = vec![input];
    while let Some(value) = stack.pop() {
        total += 1;
        match value {
            Value::String(s) => total += s.len() as u64,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                total += map.keys().map(|k| k.len() as u64).sum::<u64>();
                stack.extend(map.values());
            }
            _ => {}
        }
        if total > limit {
            return None;
        }
    }
    Some(total)
}
