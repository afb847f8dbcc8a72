//! Session tools: tools the agent loop answers itself, never published as
//! capabilities: `update_plan` ([`plan`]) and the store behind
//! `read_tool_result` ([`results`]).

pub mod plan;
pub mod results;
