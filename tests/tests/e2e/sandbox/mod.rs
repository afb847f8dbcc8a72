//! The sandbox against misbehaving and hostile components: effect classes and
//! limits, bounded output, the loader, file roots, outbound services and
//! operator commands.

mod bounded;
mod classes;
pub(crate) mod commands;
mod commands_bounds;
mod commands_nodes;
mod files;
mod files_edges;
mod hostile_schemas;
mod languages;
mod loading;
mod loading_edges;
mod outbound;
mod outbound_edges;
mod outbound_links;
