//! The command line as an operator types it, the environment it starts
//! with, and the documentation against what the binary does.

mod commands;
mod docs;
mod environment;
pub mod paths;
