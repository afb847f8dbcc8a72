//! Capstan: a WebAssembly-sandboxed capability host for a media-automation
//! agent. This crate is the host above the sandbox: the event log,
//! authorisation, the audit chain, the invocation ledger, the domain, the
//! single invoke path, the agent, the HTTP API and the command line. The
//! layers below it are crates of their own, re-exported here under their
//! module names (`crate::store`, `crate::config`, `crate::runtime`):
//!
//! - `capstan-foundation` — `text`, `canonical`, `principal`, `store`;
//! - `capstan-config` — `config`;
//! - `capstan-runtime` — `runtime`, the sandbox, which reaches only the
//!   two crates above.
//!
//! # Layers
//!
//! Each module imports only from layers below its own, never from a peer;
//! between crates the compiler sees to it, and inside this one
//! `layers_point_down` reads the sources and names any import that does
//! not. Lowest first:
//!
//! 1. `text`, `canonical`, `principal`, `store` — foundations: text rules,
//!    canonical JSON and digests, principal strings, the database pool.
//! 2. `config`, `settings` — what the operator configured: the file, and
//!    the settings stored in the database (their checks that need a higher
//!    layer, such as a model script's, are handed in).
//! 3. `events` — the event log the layers above append to.
//! 4. `authz` — grants, approvals and policies as records; a grant judges a
//!    call by the capability's id and tags, not by the runtime's types.
//! 5. `runtime` — the sandbox: components, host imports and their classes.
//!    The domain store is reached through the `DomainStore` trait it
//!    defines, so the sandbox knows nothing of media.
//! 6. `audit`, `setup`, `external_tools` — the hash-chained log, and the
//!    runtime's component changes written to it; the services and folders
//!    set up in the console, applied to the runtime; the external MCP
//!    servers whose tools the runtime offers as capabilities.
//! 7. `ledger` — claims before effects; charges an automation grant in the
//!    claim's transaction.
//! 8. `tasks` — the durable queue and its worker.
//! 9. `domain` — the media store; implements the runtime's `DomainStore`
//!    and authz's `PlanSource`, queues its follow-up tasks.
//! 10. `metrics` — counters and the figures read from the ledger and tasks.
//! 11. `pipeline` — the one invoke path over all of the above.
//! 12. `acquisition`, `agent` — what calls the invoke path: the background
//!     acquisition tasks and agent runs.
//! 13. `recovery`, `retention` — what follows a decision: the chosen option
//!     carried out once, through the invoke path, for whoever chose it; and
//!     what the host keeps, and for how long.
//! 14. `app` — the composition root: every service of one process, built
//!     once.
//! 15. `http` — the API and the console, over an `App`.
//! 16. `cli` — the command line, which builds the `App`.
//!
//! Why this order: what the sandbox enforces (`runtime`) must not depend on
//! what it protects (`domain`, `ledger`), and what records decisions
//! (`authz`, `audit`, `ledger`) must not depend on who asks (`agent`,
//! `http`); the invoke path sits above everything it consults and below
//! everything that calls it.

pub mod acquisition;
pub mod agent;
pub mod app;
pub mod audit;
pub mod authz;
pub mod cli;
pub mod domain;
pub mod events;
pub mod external_tools;
pub mod http;
pub mod ledger;
pub mod metrics;
pub mod pipeline;
pub mod recovery;
pub mod retention;
pub mod settings;
pub mod setup;
pub mod tasks;

pub use capstan_config as config;
pub use capstan_foundation::{canonical, principal, store, text};
pub use capstan_runtime as runtime;

pub use config::Config;
pub use runtime::Runtime;

#[cfg(test)]
mod layers;
