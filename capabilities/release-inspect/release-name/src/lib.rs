//! The release-name parser that `release.inspect` ships, as a plain
//! library. It lives in its own crate, not in the component crate, because
//! a component crate carries its capability's exports: linking
//! `cap-release-inspect` into another component would define those
//! exports twice. Capabilities that need parsed fields (identity.resolve,
//! policy.preview) link this crate instead. It owns [`parse::ReleaseInfo`]
//! and [`parse::inspect`]; it must not grow capability logic.

pub mod parse;
pub mod parser;
