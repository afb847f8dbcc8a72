//! Route handlers, one file per resource.

pub mod acquisition;
pub mod agent;
pub mod approvals;
pub mod audit;
pub mod capabilities;
pub mod events;
pub mod grants;
pub mod library;
pub mod session;
pub mod settings;
