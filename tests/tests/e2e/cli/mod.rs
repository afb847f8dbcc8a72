//! The command line as an operator types it, the environment it starts
//! with, a server that dies while an operator command runs, the
//! descriptors an operator command starts with, and the
//! documentation against what the binary does (the runbook's examples run
//! as written).

mod capability_test;
mod command_crash;
mod commands;
mod commands_fds;
mod docs;
mod environment;
pub mod paths;
mod runbook;
