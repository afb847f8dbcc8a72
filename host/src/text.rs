//! Text rules every layer shares. `blank` is what `str::trim` leaves
//! empty; `NOT_BLANK_PATTERN` says the same as a regular expression a JSON
//! Schema can carry, so a document and the check agree on every character.

/// Every character `char::is_whitespace` (and so `str::trim`) counts as
/// white space, as the body of a regular-expression class.
const WHITE_SPACE: &str = "\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

/// A pattern a text matches when it holds something besides white space.
pub fn not_blank_pattern() -> String {
    format!("[^{WHITE_SPACE}]")
}

/// The JSON Schema of a text that is not blank.
pub fn not_blank_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new().schema_type(Type::String).pattern(Some(not_blank_pattern())).build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_refuses_exactly_what_trim_leaves_empty() {
        let pattern = regex::Regex::new(&not_blank_pattern()).unwrap();
        for c in (0..0x3100u32).filter_map(char::from_u32) {
            let text = c.to_string();
            assert_eq!(pattern.is_match(&text), !text.trim().is_empty(), "U+{:04X}", c as u32);
        }
    }
}
