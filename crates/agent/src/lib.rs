//! What calls the invoke path and what follows from it: the background
//! acquisition tasks ([`acquisition`]), agent runs with their model
//! providers and tools ([`agent`]), a decision's chosen option carried out
//! once ([`recovery`]), what the host keeps and for how long
//! ([`retention`]), and the playbooks runs read ([`skills`]).
//!
//! The crates below are named by their module names (`crate::pipeline`,
//! `crate::store`), as in every crate of the host; the order of the layers
//! is the map in the `capstan` crate's `lib.rs`.

pub mod acquisition;
pub mod agent;
pub mod notify;
pub mod recovery;
pub mod retention;
pub mod skills;

pub(crate) use capstan_domain::{domain, pipeline};
pub(crate) use capstan_foundation::{files, principal, store};
pub(crate) use capstan_records::{audit, authz, events, ledger, settings, tasks};
pub(crate) use capstan_runtime as runtime;
