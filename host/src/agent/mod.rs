//! The agent runtime: model providers behind one streaming trait
//! ([`providers`]). The loop, its session tools, runs and resumption build
//! on these. Must not call components except through the one invoke path.

pub mod providers;
pub mod tools;
