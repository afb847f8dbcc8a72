//! Session tools: tools the agent loop answers itself, never published as
//! capabilities: `update_plan` ([`plan`]), `search_tools` ([`discovery`]),
//! `read_skill` ([`skill_reads`]) and the store behind `read_tool_result`
//! ([`results`]).

pub mod discovery;
pub mod plan;
pub mod results;
pub(crate) mod skill_reads;
