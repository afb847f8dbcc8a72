//! RSS feeds: a tracker's own feed URL (the kind a private tracker gives
//! each member, a passkey in its query) read as an indexer that lists its
//! newest releases and is never searched. Each feed is a service (`rss`,
//! `rss-2`, `rss-3`) holding the address and the key, which the host adds
//! to the request as it adds a Torznab indexer's and masks in answers;
//! the setting `<service>_path` (`rss_path`, `rss_2_path`, `rss_3_path`)
//! holds the rest of the URL, its path and other query parameters, and
//! may not carry a key. Items are read as Torznab items are; feeds in the
//! ezRSS and nyaa namespaces give their hash, seeds and size.

use capstan_sdk::host::{self, Request, setting};

use crate::redact::{decode, is_secret};
use crate::torznab::{self, IndexerError, feed};

/// The feed services, in the order read.
pub const FEED_SERVICES: &[&str] = &["rss", "rss-2", "rss-3"];

/// Longest path setting read.
const MAX_PATH: usize = 2000;

/// The setting holding `service`'s path and query.
pub fn path_setting(service: &str) -> String {
    format!("{}_path", service.replace('-', "_"))
}

/// The path and query parameters to GET for `service`, from its setting
/// (default `/`), or why the setting cannot be used.
pub fn request_for(service: &str) -> Result<(String, Vec<(String, String)>), String> {
    let name = path_setting(service);
    let raw = setting(&name).map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into());
    if raw.len() > MAX_PATH {
        return Err(format!("the setting {name} is longer than {MAX_PATH} characters"));
    }
    if !raw.starts_with('/') || raw.starts_with("//") {
        return Err(format!(
            "the setting {name} must be the feed's path on the service's address, starting with / (such as /rss.php?cat=5)"
        ));
    }
    let (path, query) = raw.split_once('?').unwrap_or((&raw, ""));
    let mut params = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(&key.replace('+', " "));
        if is_secret(&key) {
            return Err(format!(
                "the setting {name} carries the feed's key ({key}); it belongs in the service's credential, where only the host sees it"
            ));
        }
        params.push((key, decode(&value.replace('+', " "))));
    }
    Ok((path.to_string(), params))
}

/// Reads `service`'s feed: its items, or why it gave none.
pub fn read(service: &str) -> Result<Vec<feed::FeedItem>, IndexerError> {
    let (path, params) = request_for(service).map_err(IndexerError::Failed)?;
    let mut req = Request::get(service, &path);
    for (name, value) in params {
        req = req.query(&name, value);
    }
    let resp = host::outbound::read(req).map_err(torznab::host_error)?;
    torznab::check_status(&resp)?;
    let body = String::from_utf8_lossy(&resp.body);
    feed::parse(&body).map_err(|e| IndexerError::Failed(torznab::doc_error("feed", e)))
}
