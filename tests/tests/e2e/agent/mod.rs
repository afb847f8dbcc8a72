//! Agent runs: the loop and its scripted model, what the model is shown,
//! limits and endings, runs that cannot go on, model providers and the
//! requests real APIs accept, verdicts, runs doing real media work, and
//! the tools of an external MCP server.

mod behaviours;
mod boundaries;
mod commands;
mod context;
mod continuity;
mod engine;
pub(crate) mod external_mcp;
mod gate;
mod investigation;
mod limits;
mod media;
mod nodes;
mod outcomes;
mod providers;
mod runbook;
pub mod runs;
mod skills;
mod third_party;
mod verdict;
mod wire;
