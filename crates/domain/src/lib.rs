//! Capstan's media domain and the one path every capability call takes:
//! the media store the runtime's domain imports reach ([`domain`]), the
//! metrics read from the ledger and tasks ([`metrics`]), and the invoke
//! path over all the layers below ([`pipeline`]): gate, authorise, claim,
//! call, audit.
//!
//! The crates below are named by their module names (`crate::store`,
//! `crate::ledger`), as in every crate of the host; the order of the
//! layers is the map in the `capstan` crate's `lib.rs`.

pub mod domain;
pub mod metrics;
pub mod pipeline;

pub(crate) use capstan_foundation::{canonical, principal, store};
pub(crate) use capstan_records::{audit, authz, events, ledger, tasks};
pub(crate) use capstan_runtime as runtime;
