//! Capstan's records: what the host keeps about what was configured,
//! allowed, asked and done, above the sandbox and below the domain. The
//! settings stored in the database ([`settings`]), the event log
//! ([`events`]), grants, approvals and policies ([`authz`]), the
//! hash-chained audit log ([`audit`]), the services and folders set up in
//! the console ([`setup`]), the external MCP servers whose tools the
//! runtime offers ([`external_tools`]), the command output every node
//! reads ([`command_output`]), the plugins every node of a cluster loads
//! ([`plugin_catalog`]), claims before effects
//! ([`ledger`]) and the durable task queue ([`tasks`]).
//!
//! The crates below are named by their module names (`crate::store`,
//! `crate::runtime`), as in every crate of the host, so a path says which
//! layer it reaches; the order of the layers is the map in the `capstan`
//! crate's `lib.rs`.

pub mod audit;
pub mod authz;
pub mod command_output;
pub mod events;
pub mod external_tools;
pub mod ledger;
pub mod plugin_catalog;
pub mod settings;
pub mod setup;
pub mod tasks;

pub(crate) use capstan_config as config;
pub(crate) use capstan_foundation::{background, canonical, principal, store, text};
pub(crate) use capstan_runtime as runtime;
