//! The command line as an operator types it, and the documentation against
//! what the binary does.

mod commands;
mod docs;
pub mod paths;
