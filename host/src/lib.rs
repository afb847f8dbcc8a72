//! Capstan: a WebAssembly-sandboxed capability host for a media-automation
//! agent. This crate is the host: configuration, the component runtime and
//! its host interfaces, the durable store, the invocation ledger, the audit
//! chain, the single invoke path, the HTTP API and the command line.

pub mod acquisition;
pub mod agent;
pub mod audit;
pub mod authz;
pub mod cli;
pub mod config;
pub mod domain;
pub mod events;
pub mod http;
pub mod ledger;
pub mod metrics;
pub mod pipeline;
pub mod runtime;
pub mod settings;
pub mod setup;
pub mod store;
pub mod tasks;
pub mod text;

pub use config::Config;
pub use runtime::Runtime;
