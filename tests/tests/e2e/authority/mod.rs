//! Who may act: approvals and automation grants for automated callers.

pub mod approvals;
mod authz;
mod grant_actions;
