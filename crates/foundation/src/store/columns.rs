//! Column types the `Any` driver does not decode by itself, so records can
//! derive `sqlx::FromRow` (`#[sqlx(try_from = "IntFlag")]`): a flag kept as
//! an integer (0 or 1, the same on SQLite and PostgreSQL) and a JSON
//! document kept as text.

use serde_json::Value;
use sqlx::any::{Any, AnyTypeInfo};
use sqlx::error::BoxDynError;
use sqlx::{Decode, Type};

/// A flag column: `BIGINT NOT NULL`, 0 for no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntFlag(pub bool);

impl From<IntFlag> for bool {
    fn from(flag: IntFlag) -> bool {
        flag.0
    }
}

impl Type<Any> for IntFlag {
    fn type_info() -> AnyTypeInfo {
        <i64 as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <i64 as Type<Any>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Any> for IntFlag {
    fn decode(value: <Any as sqlx::Database>::ValueRef<'r>) -> Result<IntFlag, BoxDynError> {
        let n = <i64 as Decode<Any>>::decode(value)?;
        Ok(IntFlag(n != 0))
    }
}

/// A JSON document kept as text (an event's payload).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonText(pub Value);

impl From<JsonText> for Value {
    fn from(text: JsonText) -> Value {
        text.0
    }
}

impl Type<Any> for JsonText {
    fn type_info() -> AnyTypeInfo {
        <String as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <String as Type<Any>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Any> for JsonText {
    fn decode(value: <Any as sqlx::Database>::ValueRef<'r>) -> Result<JsonText, BoxDynError> {
        let text = <&str as Decode<Any>>::decode(value)?;
        Ok(JsonText(serde_json::from_str(text)?))
    }
}
