//! Capstan's end-to-end suites, in one test binary, grouped by concern.
//! Where each host module is exercised end to end:
//!
//! | host module (`crates/*/src/`, `host/src/`) | suites |
//! |---|---|
//! | `runtime` (loader, registry, host imports, limits) | `sandbox::*`, `media::release`, `media::qbittorrent` |
//! | `runtime::host::outbound` | `sandbox::outbound`, `sandbox::outbound_edges`, `media::catalog`, `media::search` |
//! | `runtime::host::files` | `sandbox::files`, `sandbox::files_edges`, `media::organize` |
//! | `pipeline` (the invoke path) | `storage::ledger`, `authority::*`, `media::library` |
//! | `ledger`, `audit` | `storage::ledger`, `http::api` |
//! | `authz` | `authority::approvals`, `authority::authz`, `agent::gate` |
//! | `tasks` | `storage::tasks`, `media::pipeline` |
//! | `domain` | `storage::domain`, `storage::decisions`, `storage::domain_api`, `media::organize` |
//! | `store` | `storage::store` and every suite run on both backends |
//! | `settings`, `setup` | `storage::settings`, `storage::setup`, `http::console_services`, `cli::environment`, `cli::runbook` |
//! | `acquisition` | `media::pipeline`, `media::quality`, `media::download`, `media::getting_started` |
//! | `agent` | `agent::*`, `storage::retention` (deleting runs) |
//! | `retention` | `storage::retention` |
//! | `http` (API, OpenAPI, console, MCP) | `http::*` (`http::mcp` for `/mcp`), `storage::domain_api`, `media::titles` |
//! | `events` | `http::events`, `agent::runs` |
//! | `metrics` | `http::operations` |
//! | `config`, `cli` | `cli::*` |
//! | `app` (the composition root) | every suite that builds a host (`App::start`) |
//! | `canonical`, `text` | unit tests beside them; `storage::ledger` (keys), `http::fuzz` (blank texts), `http::bounds` (URLs) |
//! | `principal` | `authority::approvals` (self-approval), `agent::media` (who asked) |
//!
//! Suites on storage run twice (`::sqlite`, `::postgres`); the Chromium
//! suites are `http::console*`, `http::lan` and `media::getting_started`.

mod agent;
mod authority;
mod cli;
mod http;
mod media;
mod sandbox;
mod storage;

use capstan::runtime::{Actor, EffectClass, Grant};

/// A CLI-actor grant up to `class`.
pub fn grant(class: EffectClass) -> Grant {
    Grant::new(Actor::Cli, class)
}
