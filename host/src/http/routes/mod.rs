//! Route handlers, one file per resource.

pub mod audit;
pub mod capabilities;
pub mod grants;
pub mod session;
