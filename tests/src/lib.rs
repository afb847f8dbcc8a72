//! Shared pieces of Capstan's end-to-end suites: paths of the built test
//! components, a runtime builder over a temporary data directory, a loopback
//! HTTP server that plays outbound services, mock TMDB and Torznab servers
//! speaking the real protocols, a real qbittorrent-nox with a builder for
//! the `.torrent` files it is fed, a forwarding proxy that can withhold an
//! answer, helpers to run the `capstan` binary and to run a task to its end.

pub mod components {
    //! Paths of the test components and the example plugin, built by this
    //! crate's build script.
    include!(concat!(env!("OUT_DIR"), "/test_components.rs"));
}

pub mod api;
pub mod binary;
pub mod browser;
pub mod console;
pub mod db;
pub mod fixtures;
pub mod grants;
pub mod host;
pub mod languages;
pub mod llm_rules;
pub mod load;
pub mod loopback;
pub mod mock_llm;
pub mod mock_mediaserver;
pub mod mock_notify;
pub mod mock_router;
pub mod mock_rss;
pub mod mock_service;
pub mod mock_tmdb;
pub mod mock_torznab;
pub mod openapi;
pub mod pg_stats;
pub mod proxy;
pub mod qbittorrent;
pub mod swarm;
pub mod tasks;
pub mod torrent;
pub mod transmission;
