//! The download client the operator set up — qBittorrent or Transmission,
//! each the outbound service of its name — behind one interface, so the
//! download capabilities work with either. [`DownloadClient::connect`]
//! picks the one set up (qBittorrent when both are, unless the calling
//! capability's setting `download_client` names `transmission`); both give
//! torrents as one [`Torrent`] record and take one [`AddTorrent`]. A
//! filter by tag or category is asked of qBittorrent and applied to
//! Transmission's list (its labels are the tags, and the category one
//! more label).

use crate::host::{HostError, setting};
use crate::qbittorrent::{self, AddTorrent, Torrent, TorrentFilter};
use crate::transmission;

/// The download clients' services.
pub const SERVICES: [&str; 2] = [qbittorrent::SERVICE, transmission::SERVICE];

/// A connected download client.
#[derive(Debug)]
pub enum DownloadClient {
    Qbittorrent(qbittorrent::Client),
    Transmission(transmission::Client),
}

/// Whether a host error says the service is not set up.
fn not_set_up(e: &HostError) -> bool {
    matches!(e, HostError::NotFound(m) if m.contains("not configured"))
}

impl DownloadClient {
    /// The client the operator set up (read class: qBittorrent's version,
    /// or Transmission's session). Neither set up is `not-found`, saying so.
    pub fn connect() -> Result<DownloadClient, HostError> {
        let wanted = setting("download_client").map(|c| c.trim().to_ascii_lowercase());
        if wanted.as_deref() != Some(transmission::SERVICE) {
            match qbittorrent::Client::connect() {
                Ok(client) => return Ok(DownloadClient::Qbittorrent(client)),
                Err(e) if not_set_up(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let client = transmission::Client::new();
        match client.session() {
            Ok(()) => Ok(DownloadClient::Transmission(client)),
            Err(e) if not_set_up(&e) => Err(HostError::NotFound(
                "no download client is set up: set up qBittorrent or Transmission under Services".into(),
            )),
            Err(e) => Err(e),
        }
    }

    /// Which client it is, as people write it.
    pub fn name(&self) -> &'static str {
        match self {
            DownloadClient::Qbittorrent(_) => "qBittorrent",
            DownloadClient::Transmission(_) => "Transmission",
        }
    }

    /// The torrent with infohash `hash`, if the client has it (read class).
    pub fn torrent(&self, hash: &str) -> Result<Option<Torrent>, HostError> {
        match self {
            DownloadClient::Qbittorrent(c) => c.torrent(hash),
            DownloadClient::Transmission(c) => c.torrent(hash),
        }
    }

    /// Torrents matching `filter` (read class).
    pub fn torrents(&self, filter: &TorrentFilter) -> Result<Vec<Torrent>, HostError> {
        match self {
            DownloadClient::Qbittorrent(c) => c.torrents(filter),
            DownloadClient::Transmission(c) => {
                let listed = c.torrents(&filter.hashes)?;
                let wanted = |t: &Torrent| {
                    filter.tag.as_ref().is_none_or(|tag| t.tags.contains(tag))
                        && filter.category.as_ref().is_none_or(|cat| t.tags.contains(cat))
                };
                Ok(listed.into_iter().filter(wanted).collect())
            }
        }
    }

    /// Adds a torrent (execute class); one the client already has is a
    /// conflict.
    pub fn add(&self, add: &AddTorrent) -> Result<(), HostError> {
        match self {
            DownloadClient::Qbittorrent(c) => c.add(add),
            DownloadClient::Transmission(c) => c.add(add).map(drop),
        }
    }

    /// Verifies torrents' data again (execute class).
    pub fn recheck(&self, hashes: &[&str]) -> Result<(), HostError> {
        match self {
            DownloadClient::Qbittorrent(c) => c.recheck(hashes),
            DownloadClient::Transmission(c) => c.recheck(hashes),
        }
    }

    /// Starts torrents (execute class).
    pub fn resume(&self, hashes: &[&str]) -> Result<(), HostError> {
        match self {
            DownloadClient::Qbittorrent(c) => c.resume(hashes),
            DownloadClient::Transmission(c) => c.resume(hashes),
        }
    }

    /// Removes torrents, keeping their data (execute class).
    pub fn remove_keeping_data(&self, hashes: &[&str]) -> Result<(), HostError> {
        match self {
            DownloadClient::Qbittorrent(c) => c.remove_keeping_data(hashes),
            DownloadClient::Transmission(c) => c.remove_keeping_data(hashes),
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
