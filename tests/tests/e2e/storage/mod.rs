//! The durable core on SQLite and PostgreSQL: the store under cancellation,
//! the ledger, tasks, the domain store (directly and over HTTP), settings and
//! the console's setup.

mod batch;
mod cluster_plugins;
mod cluster_writes;
mod decisions;
pub mod domain;
mod domain_api;
pub mod ledger;
mod resolving;
mod retention;
mod settings;
mod setup;
mod store;
mod tasks;
mod uncertain;
mod upgrades;
