//! Capstan: a WebAssembly-sandboxed capability host for a media-automation
//! agent. This crate is the top of the host: the composition root, the
//! HTTP API and console, and the command line. Everything below it is a
//! crate of its own, re-exported here under its module names so the tests
//! and the command line see one tree (`capstan::ledger`):
//!
//! - `capstan-foundation` — `text`, `canonical`, `principal`, `store`, `files`;
//! - `capstan-config` — `config`;
//! - `capstan-runtime` — `runtime`, the sandbox, which reaches only the
//!   two crates above;
//! - `capstan-records` — `settings`, `events`, `authz`, `audit`, `setup`,
//!   `external_tools`, `command_output`, `plugin_catalog`, `ledger`, `tasks`;
//! - `capstan-domain` — `domain`, `metrics`, `pipeline`;
//! - `capstan-agent` — `skills`, `acquisition`, `agent`, `recovery`, `retention`, `notify`;
//! - this crate — `app`, `http`, `cli`.
//!
//! # Layers
//!
//! Each module imports only from layers below its own, never from a peer;
//! between crates the compiler sees to it, and inside one
//! `layers_point_down` reads the sources and names any import that does
//! not. Lowest first:
//!
//! 1. `text`, `canonical`, `principal`, `store`, `background`, `files` — foundations:
//!    text rules, canonical JSON and digests, principal strings, the
//!    database pool, a service's own tasks, reading a dropped-in file
//!    within a cap.
//! 2. `config` — what the operator configured in the file.
//! 3. `runtime` — the sandbox: components, host imports and their classes.
//!    The domain store is reached through the `DomainStore` trait it
//!    defines, so the sandbox knows nothing of media.
//! 4. `settings` — the settings stored in the database (their checks that
//!    need a higher layer, such as a model script's, are handed in).
//! 5. `events` — the event log the layers above append to.
//! 6. `authz` — grants, approvals and policies as records; a grant judges a
//!    call by the capability's id and tags, not by the runtime's types.
//! 7. `audit`, `setup`, `external_tools`, `command_output`, `plugin_catalog` — the
//!    hash-chained log, and the runtime's component changes written to it;
//!    the services and folders set up in the console, applied to the
//!    runtime; the external MCP servers whose tools the runtime offers as
//!    capabilities; the runtime's command output kept for every node; the
//!    plugins every node of a cluster loads.
//! 8. `ledger` — claims before effects; charges an automation grant in the
//!    claim's transaction.
//! 9. `tasks` — the durable queue and its worker.
//! 10. `domain` — the media store; implements the runtime's `DomainStore`
//!     and authz's `PlanSource`, queues its follow-up tasks.
//! 11. `metrics` — counters and the figures read from the ledger and tasks.
//! 12. `pipeline` — the one invoke path over all of the above.
//! 13. `skills` — the playbooks agent runs read, checked against what the
//!     runtime has loaded.
//! 14. `acquisition`, `agent` — what calls the invoke path: the background
//!     acquisition tasks and agent runs.
//! 15. `recovery`, `retention`, `notify` — what follows a decision: the
//!     chosen option carried out once, through the invoke path, for whoever
//!     chose it; what the host keeps, and for how long; and who is told
//!     what happened.
//! 16. `app` — the composition root: every service of one process, built
//!     once.
//! 17. `http` — the API and the console, over an `App`.
//! 18. `cli` — the command line, which builds the `App`.
//!
//! Why this order: what the sandbox enforces (`runtime`) must not depend on
//! what it protects (`domain`, `ledger`), and what records decisions
//! (`authz`, `audit`, `ledger`) must not depend on who asks (`agent`,
//! `http`); the invoke path sits above everything it consults and below
//! everything that calls it.

pub mod app;
pub mod cli;
pub mod http;

pub use capstan_agent::{acquisition, agent, notify, recovery, retention, skills};
pub use capstan_config as config;
pub use capstan_domain::{domain, metrics, pipeline};
pub use capstan_foundation::{canonical, principal, store, text};
pub use capstan_records::{
    audit, authz, command_output, events, external_tools, ledger, plugin_catalog, settings, setup, tasks,
};
pub use capstan_runtime as runtime;

pub use capstan_builtins::BUILT_INS;
pub use config::Config;
pub use runtime::Runtime;

#[cfg(test)]
mod layers;
