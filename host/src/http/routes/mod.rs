//! Route handlers, one file per resource.

pub mod audit;
pub mod capabilities;
pub mod session;
