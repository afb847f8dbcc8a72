//! Schemas the OpenAPI document gives for what serde's derive cannot say:
//! a text that must hold more than white space, a field that may only be
//! `false`, one of two fields but not both. Each matches the check the
//! server makes, character for character, so a request the document allows
//! is one the server takes.

use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{Object, RefOr};

pub use crate::text::not_blank_pattern;

/// A text with at least one character that is not white space: what the
/// server's `trim().is_empty()` refuses, the document refuses too.
pub use crate::text::not_blank_schema as not_blank;

/// What a text must be when it does not match one of the document's
/// patterns (or matches one a `not` forbids), said plainly: a refusal says
/// this rather than the expression.
pub(crate) fn pattern_meaning(pattern: &str) -> Option<&'static str> {
    let known = [
        (not_blank_pattern(), "must not be blank"),
        (crate::text::http_url_pattern(), "must be an http or https URL"),
        (crate::text::service_url_pattern(), "must be an http or https URL without a query, a fragment or credentials"),
        (crate::text::absolute_path_pattern(), "must be an absolute path"),
        (crate::authz::POLICY_REVISION_ID_PATTERN.to_string(), "must be <name>@<revision>, the revision from 1"),
        (crate::setup::kinds::reference_pattern(), "must be the secret itself, not env:... or file:..."),
    ];
    known.into_iter().find(|(known, _)| known == pattern).map(|(_, meaning)| meaning)
}

/// The boolean `false` and nothing else.
pub(crate) fn only_false() -> Object {
    ObjectBuilder::new().schema_type(Type::Boolean).enum_values(Some([false])).build()
}

/// The boolean `true` and nothing else.
pub(crate) fn only_true() -> Object {
    ObjectBuilder::new().schema_type(Type::Boolean).enum_values(Some([true])).build()
}

/// A body whose schema is written out as JSON (with `oneOf`, say), which
/// the derive cannot give. Its `ToSchema` is a placeholder
/// ([`placeholder`]); the document's `complete` puts `json()` in its place.
pub(crate) trait WrittenOut {
    const NAME: &'static str;
    fn json() -> serde_json::Value;
}

/// The stand-in schema of a [`WrittenOut`] type until the document is completed.
pub fn placeholder() -> RefOr<Schema> {
    RefOr::T(Schema::Object(Object::new()))
}

/// A parameter whose schema says more than its Rust type (a pattern, a
/// list of names), which the `IntoParams` derive would give without its
/// description or, in a path, without `required`.
pub fn parameter(
    name: &str,
    within: utoipa::openapi::path::ParameterIn,
    description: &str,
    schema: Object,
) -> utoipa::openapi::path::Parameter {
    use utoipa::openapi::Required;
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    let required = if matches!(within, ParameterIn::Path) { Required::True } else { Required::False };
    ParameterBuilder::new()
        .name(name)
        .parameter_in(within)
        .required(required)
        .description(Some(description))
        .schema(Some(schema))
        .build()
}
