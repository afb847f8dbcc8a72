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

/// The boolean `false` and nothing else.
pub fn only_false() -> Object {
    ObjectBuilder::new().schema_type(Type::Boolean).enum_values(Some([false])).build()
}

/// A body whose schema is written out as JSON (with `oneOf`, say), which
/// the derive cannot give. Its `ToSchema` is a placeholder
/// ([`placeholder`]); the document's `complete` puts `json()` in its place.
pub trait WrittenOut {
    const NAME: &'static str;
    fn json() -> serde_json::Value;
}

/// The stand-in schema of a [`WrittenOut`] type until the document is completed.
pub fn placeholder() -> RefOr<Schema> {
    RefOr::T(Schema::Object(Object::new()))
}
