//! Capstan's end-to-end suites, one module per concern, in one test binary.

mod agent;
mod agent_context;
mod agent_gate;
mod agent_limits;
mod agent_media;
mod agent_outcomes;
mod agent_providers;
mod agent_runs;
mod agent_third_party;
mod agent_verdict;
mod agent_wire;
mod approvals;
mod authz;
mod bounded;
mod catalog;
mod cli;
mod cli_paths;
mod console;
mod console_forms;
mod console_library;
mod console_services;
mod docs;
mod domain;
mod domain_api;
mod download;
mod events;
mod files;
mod files_edges;
mod fuzz;
mod getting_started;
mod http;
mod lan;
mod ledger;
mod library;
mod library_titles;
mod loading;
mod loading_edges;
mod operations;
mod organize;
mod outbound;
mod outbound_edges;
mod pipeline;
mod qbittorrent;
mod quality;
mod release;
mod sandbox;
mod search;
mod settings;
mod setup;
mod store;
mod tasks;

use capstan::runtime::{Actor, EffectClass, Grant};

/// A CLI-actor grant up to `class`.
pub fn grant(class: EffectClass) -> Grant {
    Grant::new(Actor::Cli, class)
}
