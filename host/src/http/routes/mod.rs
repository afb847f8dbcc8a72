//! Route handlers, one file per resource.

pub mod approvals;
pub mod audit;
pub mod capabilities;
pub mod events;
pub mod grants;
pub mod session;
pub mod settings;
