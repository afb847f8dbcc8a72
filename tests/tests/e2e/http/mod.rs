//! The HTTP API and the operator console: keys and scopes, the event stream,
//! the OpenAPI document (its bounds the server's, valid by a third-party
//! validator, Schemathesis against it), operations endpoints, and the
//! console in a real Chromium (also from the LAN).

mod api;
mod authority_walk;
mod bounds;
mod component_decisions;
mod console;
mod console_forms;
mod console_library;
mod console_live;
mod console_mcp;
mod console_notify;
mod console_profiles;
mod console_services;
mod console_skills;
mod decisions;
pub mod events;
mod fuzz;
mod lan;
mod mcp;
mod mcp_conformance;
mod openapi_valid;
mod operations;
mod shutdown;
mod signin;
mod skills;
