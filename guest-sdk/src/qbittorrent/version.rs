//! The qBittorrent WebAPI version and the endpoint and field names that
//! depend on it. qBittorrent 5.0 (WebAPI 2.11.0) renamed pause/resume to
//! stop/start without keeping the old names, so a client must ask the
//! server which line it speaks instead of guessing.

use std::fmt;

use crate::host::HostError;

/// A WebAPI version as `GET /api/v2/app/webapiVersion` reports it, e.g.
/// `2.8.19` (qBittorrent 4.5) or `2.11.2` (qBittorrent 5.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WebApiVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl WebApiVersion {
    /// The first version (qBittorrent 5.0) with `torrents/start|stop`, the
    /// `stopped` add field and `stoppedDL/stoppedUP` states.
    pub const START_STOP: WebApiVersion = WebApiVersion { major: 2, minor: 11, patch: 0 };

    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        WebApiVersion { major, minor, patch }
    }

    /// Parses `major.minor[.patch]`; surrounding whitespace is ignored
    /// because the endpoint answers plain text.
    pub fn parse(text: &str) -> Result<Self, HostError> {
        let bad = || HostError::Invalid(format!("qBittorrent reported an unreadable WebAPI version {text:?}"));
        let mut parts = text.trim().split('.');
        let mut next = |required: bool| -> Result<u32, HostError> {
            match parts.next() {
                Some(part) => part.parse().map_err(|_| bad()),
                None if required => Err(bad()),
                None => Ok(0),
            }
        };
        let version = WebApiVersion { major: next(true)?, minor: next(true)?, patch: next(false)? };
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(version)
    }

    /// Whether this server speaks the 5.x names (start/stop, stopped).
    pub fn uses_start_stop(self) -> bool {
        self >= Self::START_STOP
    }

    /// The endpoint that resumes torrents on this server.
    pub fn resume_endpoint(self) -> &'static str {
        if self.uses_start_stop() { "/api/v2/torrents/start" } else { "/api/v2/torrents/resume" }
    }

    /// The endpoint that pauses torrents on this server.
    pub fn pause_endpoint(self) -> &'static str {
        if self.uses_start_stop() { "/api/v2/torrents/stop" } else { "/api/v2/torrents/pause" }
    }

    /// The `torrents/add` field that adds a torrent without starting it.
    pub fn add_paused_field(self) -> &'static str {
        if self.uses_start_stop() { "stopped" } else { "paused" }
    }
}

impl fmt::Display for WebApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}
