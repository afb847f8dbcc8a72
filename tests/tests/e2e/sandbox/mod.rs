//! The sandbox against misbehaving and hostile components: effect classes and
//! limits, bounded output, the loader, file roots and outbound services.

mod bounded;
mod classes;
mod files;
mod files_edges;
mod loading;
mod loading_edges;
mod outbound;
mod outbound_edges;
