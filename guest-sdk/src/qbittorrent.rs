//! A typed qBittorrent WebUI (API v2) client for capabilities, over the
//! host's outbound helpers and the operator's service named `qbittorrent`.
//!
//! The component never logs in: the operator configures the service with a
//! form login and the host keeps the session cookie. The client asks the
//! server for its WebAPI version once ([`Client::connect`]) and picks the
//! endpoint and field names of that line (4.x pause/resume, 5.x
//! stop/start). Reads (`torrents/info`, `app/webapiVersion`) go through
//! `outbound-read`; adding, rechecking, pausing, resuming and removing are writes.

mod form;
mod state;
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
mod version;

use serde::{Deserialize, Deserializer};

pub use self::state::{DownloadStatus, TorrentState};
pub use self::version::WebApiVersion;
use crate::host::{HostError, Request, Response, outbound};

/// The service name operators configure for qBittorrent.
pub const SERVICE: &str = "qbittorrent";

/// One torrent as `torrents/info` reports it. Fields a server version does
/// not send are left at their defaults.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default)]
pub struct Torrent {
    /// v1 infohash (v2 for pure v2 torrents), lowercase hex.
    pub hash: String,
    pub name: String,
    /// The raw state string, as sent; see [`Torrent::state`].
    #[serde(rename = "state")]
    pub raw_state: String,
    /// 0.0 to 1.0 of the wanted data.
    pub progress: f64,
    /// Bytes of the wanted files.
    pub size: i64,
    pub total_size: i64,
    pub amount_left: i64,
    pub save_path: String,
    pub content_path: String,
    pub category: String,
    #[serde(deserialize_with = "comma_list")]
    pub tags: Vec<String>,
    pub added_on: i64,
    pub completion_on: i64,
    pub eta: i64,
    pub dlspeed: i64,
    pub upspeed: i64,
    pub ratio: f64,
    /// Seeds connected now.
    pub num_seeds: i64,
}

impl Torrent {
    pub fn state(&self) -> TorrentState {
        TorrentState::from_api(&self.raw_state)
    }

    /// The Capstan download status of this torrent.
    pub fn status(&self) -> DownloadStatus {
        self.state().status(self.progress)
    }
}

/// qBittorrent joins tags with ", ".
fn comma_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let joined = String::deserialize(d)?;
    Ok(joined.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect())
}

/// Which torrents [`Client::torrents`] lists; empty means all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TorrentFilter {
    pub hashes: Vec<String>,
    pub category: Option<String>,
    pub tag: Option<String>,
}

/// A `.torrent` file to upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorrentFile {
    pub file_name: String,
    pub bytes: Vec<u8>,
}

/// What to add and how ([`Client::add`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddTorrent {
    /// Magnet links or http(s) URLs of `.torrent` files.
    pub urls: Vec<String>,
    pub torrent_files: Vec<TorrentFile>,
    /// Download folder as qBittorrent sees it; its default when `None`.
    pub save_path: Option<String>,
    pub category: Option<String>,
    pub tags: Vec<String>,
    /// Add without starting.
    pub paused: bool,
    /// Trust the data already in the save path without checking it.
    pub skip_checking: bool,
}

impl AddTorrent {
    /// Adds a magnet link or a `.torrent` URL.
    pub fn url(url: impl Into<String>) -> Self {
        AddTorrent { urls: vec![url.into()], ..AddTorrent::default() }
    }

    /// Uploads a `.torrent` file.
    pub fn file(file_name: impl Into<String>, bytes: Vec<u8>) -> Self {
        let file = TorrentFile { file_name: file_name.into(), bytes };
        AddTorrent { torrent_files: vec![file], ..AddTorrent::default() }
    }
}

/// Reads the server's WebAPI version (read class).
pub fn webapi_version() -> Result<WebApiVersion, HostError> {
    let resp = answer(outbound::read(Request::get(SERVICE, "/api/v2/app/webapiVersion"))?)?;
    WebApiVersion::parse(&resp.text())
}

/// A client bound to one server's WebAPI version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client {
    version: WebApiVersion,
}

impl Client {
    /// Asks the server its version once (read class).
    pub fn connect() -> Result<Client, HostError> {
        Ok(Client { version: webapi_version()? })
    }

    /// A client for a version already known, e.g. read earlier in the call.
    pub fn for_version(version: WebApiVersion) -> Client {
        Client { version }
    }

    pub fn version(&self) -> WebApiVersion {
        self.version
    }

    /// The torrent with infohash `hash`, if qBittorrent has it (read class).
    /// Check this before adding, so a re-run after a crash adds nothing twice.
    pub fn torrent(&self, hash: &str) -> Result<Option<Torrent>, HostError> {
        let hash = infohash(hash)?;
        let filter = TorrentFilter { hashes: vec![hash.clone()], ..TorrentFilter::default() };
        Ok(self.torrents(&filter)?.into_iter().find(|t| t.hash.eq_ignore_ascii_case(&hash)))
    }

    /// Torrents matching `filter` (read class).
    pub fn torrents(&self, filter: &TorrentFilter) -> Result<Vec<Torrent>, HostError> {
        let mut req = Request::get(SERVICE, "/api/v2/torrents/info");
        if !filter.hashes.is_empty() {
            req = req.query("hashes", hash_list(&filter.hashes)?);
        }
        if let Some(category) = &filter.category {
            req = req.query("category", category.clone());
        }
        if let Some(tag) = &filter.tag {
            req = req.query("tag", tag.clone());
        }
        answer(outbound::read(req)?)?.json()
    }

    /// Adds torrents (execute class). An answer of "nothing added" (the
    /// torrent is already there, or qBittorrent rejected it) is a conflict.
    pub fn add(&self, add: &AddTorrent) -> Result<(), HostError> {
        let (content_type, body) = self.add_body(add)?;
        let resp = self.post_body("/api/v2/torrents/add", content_type, body)?;
        if resp.status == 415 {
            return Err(HostError::Invalid("qBittorrent says the torrent file is not valid".into()));
        }
        let resp = answer(resp)?;
        // Up to 5.1 a refusal is a 200 whose body says so.
        if resp.text().trim() == "Fails." {
            return Err(HostError::Conflict(
                "qBittorrent added nothing: the torrent is already present or was rejected".into(),
            ));
        }
        Ok(())
    }

    /// Verifies the data of torrents on disk again (execute class).
    ///
    /// Ask only once [`TorrentState::is_checking`] is false: a recheck sent
    /// while qBittorrent is still loading a torrent can leave it checking
    /// for good. A torrent that was `missingFiles` also needs [`Self::resume`]
    /// before the check runs.
    pub fn recheck(&self, hashes: &[&str]) -> Result<(), HostError> {
        self.command("/api/v2/torrents/recheck", hashes)
    }

    /// Starts torrents: `torrents/start` on 5.x, `torrents/resume` on 4.x
    /// (execute class).
    pub fn resume(&self, hashes: &[&str]) -> Result<(), HostError> {
        self.command(self.version.resume_endpoint(), hashes)
    }

    /// Stops torrents: `torrents/stop` on 5.x, `torrents/pause` on 4.x
    /// (execute class).
    pub fn pause(&self, hashes: &[&str]) -> Result<(), HostError> {
        self.command(self.version.pause_endpoint(), hashes)
    }

    /// Removes torrents from qBittorrent, keeping their data on disk
    /// (`torrents/delete` with `deleteFiles=false`; execute class). A hash
    /// qBittorrent does not hold is no error.
    pub fn remove_keeping_data(&self, hashes: &[&str]) -> Result<(), HostError> {
        let hashes: Vec<String> = hashes.iter().map(|h| h.to_string()).collect();
        let (content_type, body) = form::urlencoded(&[("hashes", &hash_list(&hashes)?), ("deleteFiles", "false")]);
        answer(self.post_body("/api/v2/torrents/delete", content_type, body)?).map(drop)
    }

    fn command(&self, path: &str, hashes: &[&str]) -> Result<(), HostError> {
        let hashes: Vec<String> = hashes.iter().map(|h| h.to_string()).collect();
        let (content_type, body) = form::urlencoded(&[("hashes", &hash_list(&hashes)?)]);
        answer(self.post_body(path, content_type, body)?).map(drop)
    }

    fn post_body(&self, path: &str, content_type: String, body: Vec<u8>) -> Result<Response, HostError> {
        outbound::write(Request {
            service: SERVICE.into(),
            method: "POST".into(),
            path: path.into(),
            headers: vec![("Content-Type".into(), content_type)],
            body: Some(body),
            ..Request::default()
        })
    }

    fn add_body(&self, add: &AddTorrent) -> Result<(String, Vec<u8>), HostError> {
        use form::Part;
        if add.urls.is_empty() && add.torrent_files.is_empty() {
            return Err(HostError::Invalid("nothing to add: give a URL or a torrent file".into()));
        }
        if add.urls.iter().any(|u| u.trim().is_empty() || u.contains(['\r', '\n'])) {
            // qBittorrent splits the field on line breaks.
            return Err(HostError::Invalid("a URL is empty or contains a line break".into()));
        }
        if add.tags.iter().any(|t| t.trim().is_empty() || t.contains(',')) {
            return Err(HostError::Invalid("a tag is empty or contains a comma".into()));
        }
        let text = |name: &str, value: String| Part::Text { name: name.into(), value };
        let mut parts = Vec::new();
        if !add.urls.is_empty() {
            parts.push(text("urls", add.urls.join("\n")));
        }
        for file in &add.torrent_files {
            parts.push(Part::File {
                name: "torrents".into(),
                file_name: file.file_name.clone(),
                content_type: "application/x-bittorrent".into(),
                bytes: file.bytes.clone(),
            });
        }
        if let Some(save_path) = &add.save_path {
            parts.push(text("savepath", save_path.clone()));
        }
        if let Some(category) = &add.category {
            parts.push(text("category", category.clone()));
        }
        if !add.tags.is_empty() {
            parts.push(text("tags", add.tags.join(",")));
        }
        parts.push(text(self.version.add_paused_field(), add.paused.to_string()));
        if add.skip_checking {
            parts.push(text("skip_checking", "true".into()));
        }
        Ok(form::multipart(&parts))
    }
}

/// Validates an infohash: 40 (v1) or 64 (v2) hex digits, lowercased. Anything
/// else is refused before sending, because qBittorrent reads `all` and
/// `|`-joined lists in the same field and a bad value could touch every
/// torrent.
fn infohash(hash: &str) -> Result<String, HostError> {
    let hash = hash.trim();
    if !matches!(hash.len(), 40 | 64) || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(HostError::Invalid(format!("{hash:?} is not a torrent infohash (40 or 64 hex digits)")));
    }
    Ok(hash.to_ascii_lowercase())
}

fn hash_list(hashes: &[String]) -> Result<String, HostError> {
    if hashes.is_empty() {
        return Err(HostError::Invalid("no torrent hashes given".into()));
    }
    Ok(hashes.iter().map(|h| infohash(h)).collect::<Result<Vec<_>, _>>()?.join("|"))
}

/// Turns an unsuccessful HTTP answer into the host error a capability
/// reports; a successful one is returned as is.
fn answer(resp: Response) -> Result<Response, HostError> {
    let status = resp.status;
    if (200..300).contains(&status) {
        return Ok(resp);
    }
    // Enough of the body to explain, not a whole error page.
    let body: String = resp.text().chars().take(200).collect();
    let said = format!("qBittorrent answered {status}: {}", body.trim());
    Err(match status {
        401 | 403 => HostError::Denied(format!(
            "{said} (the host's login to service {SERVICE} failed, or this address is banned after failed logins)"
        )),
        404 => HostError::NotFound(said),
        409 => HostError::Conflict(said),
        400 | 405 | 415 => HostError::Invalid(said),
        _ => HostError::Unavailable(said),
    })
}
