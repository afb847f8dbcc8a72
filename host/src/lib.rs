//! Capstan: a WebAssembly-sandboxed capability host for a media-automation
//! agent. This crate is the host: configuration, the component runtime and
//! its host interfaces, the HTTP API and the command line.

pub mod cli;
pub mod config;
pub mod http;
pub mod runtime;

pub use config::Config;
pub use runtime::Runtime;
