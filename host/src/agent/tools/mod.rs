//! Session tools: tools the agent loop answers itself, never published as
//! capabilities. So far `update_plan` ([`plan`]).

pub mod plan;
