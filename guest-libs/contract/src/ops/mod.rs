//! Each domain operation a component can call, as a type: its name, the
//! host interface that carries it, its arguments and its answer. The host
//! dispatches by these types (`capstan-domain`'s `dispatch`) and the SDK
//! calls them by these types (`capstan_sdk::host::domain::call`), so both
//! sides compile against the same fields. Arguments refuse unknown fields.
//! JSON values remain only where the shape belongs to whoever wrote it (a
//! plan's payload, a policy's body, a slot's activity in the inventory).

use serde::Serialize;
use serde::de::DeserializeOwned;

pub mod drafts;
pub mod queries;
pub mod transitions;

/// The host interface that carries an operation, and so its effect class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// `capstan:host/library`: reads (read).
    Library,
    /// `capstan:host/drafts`: internal facts (propose).
    Drafts,
    /// `capstan:host/records`: state changes (execute).
    Records,
}

/// One domain operation.
pub trait Operation {
    /// The name components pass to the interface.
    const NAME: &'static str;
    const CARRIER: Carrier;
    type Args: Serialize + DeserializeOwned;
    type Answer: Serialize + DeserializeOwned;
}

/// Declares an operation type.
macro_rules! operation {
    ($(#[$doc:meta])* $name:ident = $text:literal via $carrier:ident: $args:ty => $answer:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $crate::ops::Operation for $name {
            const NAME: &'static str = $text;
            const CARRIER: $crate::ops::Carrier = $crate::ops::Carrier::$carrier;
            type Args = $args;
            type Answer = $answer;
        }
    };
}
pub(crate) use operation;

/// The arguments of an operation on one record.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ById {
    pub id: String,
}

impl ById {
    pub fn new(id: impl Into<String>) -> ById {
        ById { id: id.into() }
    }
}

/// How many records a list answers when the caller does not say.
pub const DEFAULT_LIMIT: i64 = 100;

pub(crate) fn default_limit() -> i64 {
    DEFAULT_LIMIT
}

pub(crate) fn is_default_limit(limit: &i64) -> bool {
    *limit == DEFAULT_LIMIT
}

/// Deserializes a field that may be absent (`None`), `null` (`Some(None)`)
/// or set.
pub(crate) fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}
