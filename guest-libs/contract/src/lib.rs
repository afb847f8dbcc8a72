//! The contract between Capstan's host and its guests, compiled by both: the
//! effect table that says which class each host interface belongs to, who
//! can call (actor kinds), the statuses records move through, the domain
//! records, and each domain operation (`library` query, `drafts` kind,
//! `records` transition) with its name, arguments and answer.
//!
//! The host dispatches by these types and the SDK calls by them, so the two
//! cannot drift apart: a renamed field or status is a compile error on both
//! sides. The database keeps statuses as text; code compares the enums.

pub mod actor;
pub mod effects;
pub mod ops;
pub mod records;
pub mod status;

pub use actor::ActorKind;
pub use effects::EffectClass;
pub use ops::Operation;
