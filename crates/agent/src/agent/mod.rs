//! The agent runtime: model providers behind one streaming trait
//! ([`providers`]), the session tools ([`tools`]), run records and their
//! event streams ([`runs`]), the append-only session log ([`session_log`]),
//! the loop and a run's lifecycle ([`engine`]) and the `runAgent` task
//! ([`task`]), token counting ([`tokens`]) and compaction ([`compaction`]).
//! Components are called only through the one invoke path.

pub mod compaction;
pub mod engine;
pub mod providers;
pub mod runs;
pub mod session_log;
pub mod session_store;
pub mod task;
pub mod tokens;
pub mod tools;

pub use engine::{AgentRuntime, RUN_AGENT, StartError};
