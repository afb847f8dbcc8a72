//! The media capabilities and the acquisition pipeline against mock TMDB and
//! Torznab servers and a real qBittorrent: lookups, searches, release names,
//! downloads, organizing, the library, quality policies, and the getting-
//! started walk-through.

mod another_release;
mod catalog;
mod download;
mod feeds;
mod getting_started;
mod import_trouble;
mod library;
mod mediaservers;
mod not_started;
mod notifications;
mod organize;
mod pipeline;
mod qbittorrent;
mod quality;
mod recovery;
mod release;
mod rss;
mod search;
mod series;
mod series_env;
mod series_pipeline;
mod submit_failed;
mod swarm;
pub mod titles;
mod transmission;
mod trouble;
mod upgrades;
