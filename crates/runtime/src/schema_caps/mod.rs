//! The caps a component's JSON Schemas must meet before the host accepts
//! the component. A schema is written by the component's author, and the
//! host checks every input against the input schema before the component
//! runs, outside the sandbox's limits; so what that check can cost is
//! measured here, once, when the component loads, and a schema over any cap
//! is refused with the cap and what was measured:
//!
//! - **size**: the schema's text, at most [`MAX_SCHEMA_BYTES`];
//! - **nesting**: objects and arrays inside each other, at most
//!   [`MAX_DEPTH`] levels, counted on the text before it is parsed, so a
//!   schema nested ten thousand levels deep is refused without being built;
//! - **keywords**: the members of all its objects, at most [`MAX_KEYWORDS`];
//! - **references**: only within the schema (`#` or `#/` and a JSON
//!   pointer), no `$dynamicRef` or `$recursiveRef`, no `$id` below the root
//!   (it would change what a reference below it means), and no cycle: what
//!   checking against a recursive schema costs grows with the input, up to
//!   doubling at each level of it, which no measure of the schema bounds;
//! - **expansion**: the nodes a check visits with every reference followed,
//!   at most [`MAX_EXPANDED`]. Each node's expanded size is computed once
//!   and reused (`graph`), so a chain of `allOf`s that doubles at every
//!   level is measured in steps proportional to its length, not expanded;
//!   and those nodes nest at most [`MAX_EXPANDED_DEPTH`] deep, as the check
//!   recurses through them;
//! - **patterns**: every `pattern` and `patternProperties` key must compile
//!   for the linear-time engine (the `regex` crate: no look-around, no
//!   backreferences) within [`PATTERN_SIZE_LIMIT`], and there are at most
//!   [`MAX_PATTERNS`] different ones. The validator the host builds uses
//!   that engine ([`validator_options`]), so a match takes time
//!   proportional to the text, whatever the pattern.

mod graph;
#[cfg(test)]
mod tests;

use serde_json::Value;

/// The largest schema text, in bytes.
pub const MAX_SCHEMA_BYTES: usize = 64 << 10;
/// The deepest nesting of objects and arrays in a schema. serde_json's own
/// limit (128) only stops the parser; this one is the schema's.
pub const MAX_DEPTH: usize = 32;
/// The most object members (keywords, property names, definitions) in a schema.
pub const MAX_KEYWORDS: usize = 4_096;
/// The most schema nodes a check may visit with every reference followed.
pub const MAX_EXPANDED: u64 = 10_000;
/// The deepest a check's path through the schema goes with every reference
/// followed, in schema nodes: a chain of references nests the check's own
/// calls however shallow the text is, and each takes stack.
pub const MAX_EXPANDED_DEPTH: u64 = 128;
/// The most different patterns in a schema.
pub(crate) const MAX_PATTERNS: usize = 64;
/// The largest compiled form of one pattern, in bytes (the `regex` crate's
/// size limit; its default is 10 MiB).
pub(crate) const PATTERN_SIZE_LIMIT: usize = 256 << 10;
/// The most memory one pattern's matcher may keep for its cache, in bytes.
const PATTERN_CACHE_LIMIT: usize = 256 << 10;

/// What vetting measured of a schema within the caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// Object members in the schema.
    pub keywords: usize,
    /// Schema nodes a check visits with every reference followed.
    pub expanded: u64,
    /// How deep those nodes nest, the root counted as one.
    pub depth: u64,
    /// What one check costs per unit of input, roughly: the expanded nodes
    /// weighed by their keywords and the size of their `enum` and `const`
    /// values. Decides whether a check may run on the caller's thread.
    pub weight: u64,
}

/// Parses schema text within the size and nesting caps. The error says
/// what is wrong as it follows "the input schema".
pub fn parse(text: &str) -> Result<Value, String> {
    if text.len() > MAX_SCHEMA_BYTES {
        return Err(format!("is {} bytes, over the cap of {MAX_SCHEMA_BYTES} bytes", text.len()));
    }
    let depth = text_depth(text);
    if depth > MAX_DEPTH {
        return Err(format!("nests {depth} levels deep, over the cap of {MAX_DEPTH} levels"));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("is not JSON: {e}"))?;
    if !value.is_object() {
        return Err("must be a JSON object".into());
    }
    Ok(value)
}

/// How deep objects and arrays nest in JSON text, read in one pass without
/// parsing: brackets inside strings do not count. On text that is not JSON
/// the figure may be anything, and parsing says what is wrong.
fn text_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Checks a parsed schema against the caps past size and nesting. The
/// error says what is wrong as it follows "the input schema".
pub fn vet(schema: &Value) -> Result<Measured, String> {
    let keywords = vet_shape(schema)?;
    let found = graph::Graph::of(schema)?;
    if found.patterns.len() > MAX_PATTERNS {
        return Err(format!("has {} different patterns, over the cap of {MAX_PATTERNS}", found.patterns.len()));
    }
    let expansion = found.expansion()?;
    if expansion.nodes > MAX_EXPANDED {
        return Err(format!(
            "expands to {} nodes when its references are followed, over the cap of {MAX_EXPANDED}",
            expansion.nodes
        ));
    }
    if expansion.depth > MAX_EXPANDED_DEPTH {
        return Err(format!(
            "nests {} schemas deep when its references are followed, over the cap of {MAX_EXPANDED_DEPTH}",
            expansion.depth
        ));
    }
    for (pattern, at) in &found.patterns {
        linear_pattern(pattern)
            .map_err(|why| format!("has the pattern {:?} at {}, {why}", shown(pattern), graph::place(at)))?;
    }
    Ok(Measured { keywords, expanded: expansion.nodes, depth: expansion.depth, weight: expansion.weight })
}

/// Checks the nesting and keyword caps alone, for a schema the host keeps
/// and lists but never checks anything against (the output schema);
/// returns how many keywords it has.
pub(crate) fn vet_shape(schema: &Value) -> Result<usize, String> {
    let (keywords, depth) = members_and_depth(schema);
    if depth > MAX_DEPTH {
        return Err(format!("nests {depth} levels deep, over the cap of {MAX_DEPTH} levels"));
    }
    if keywords > MAX_KEYWORDS {
        return Err(format!("has {keywords} keywords, over the cap of {MAX_KEYWORDS}"));
    }
    Ok(keywords)
}

/// The options every validator of a component's schema is built with:
/// patterns on the linear-time engine within their size caps, and no
/// reference is ever fetched from outside the schema.
pub fn validator_options() -> jsonschema::ValidationOptions<'static> {
    let patterns =
        jsonschema::PatternOptions::regex().size_limit(PATTERN_SIZE_LIMIT).dfa_size_limit(PATTERN_CACHE_LIMIT);
    jsonschema::options().with_pattern_options(patterns).offline()
}

/// Whether `pattern` compiles for the validator's linear-time engine, and
/// if not, why, in one line.
fn linear_pattern(pattern: &str) -> Result<(), String> {
    if validator_options().build(&serde_json::json!({ "pattern": pattern })).is_ok() {
        return Ok(());
    }
    // The engine's own words say why (look-around, size), on their `error:`
    // line; the validator translates from JavaScript's dialect first, so
    // a pattern the engine takes as written may still be refused.
    let reason = match regex::RegexBuilder::new(pattern).size_limit(PATTERN_SIZE_LIMIT).build() {
        Err(regex::Error::CompiledTooBig(limit)) => format!("its compiled form is over {limit} bytes"),
        Err(e) => {
            let text = e.to_string();
            let line = text.lines().find_map(|l| l.strip_prefix("error: ")).or_else(|| text.lines().next());
            let line = crate::text::escape_controls(line.unwrap_or_default());
            crate::text::clip(&line, 200).into_owned()
        }
        Ok(_) => "not in the dialect the engine runs".to_string(),
    };
    Err(format!("which does not compile for the linear-time pattern engine: {reason}"))
}

/// Up to 80 characters of `text`, for a message.
fn shown(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(80).collect();
    if chars.next().is_some() { format!("{head}…") } else { head }
}

/// How many object members `value` holds and how deep it nests, walked
/// without recursion.
fn members_and_depth(value: &Value) -> (usize, usize) {
    let (mut members, mut deepest) = (0, 0);
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::Object(map) => {
                members += map.len();
                deepest = deepest.max(depth + 1);
                stack.extend(map.values().map(|v| (v, depth + 1)));
            }
            Value::Array(items) => {
                deepest = deepest.max(depth + 1);
                stack.extend(items.iter().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
    (members, deepest)
}
