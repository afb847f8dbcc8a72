//! A typed Transmission RPC client for capabilities, over the host's
//! outbound helpers and the operator's service named `transmission`.
//!
//! Every call is a POST of `{"method", "arguments"}` to
//! `/transmission/rpc`. Transmission answers the first one with 409 and
//! the session id to send (`X-Transmission-Session-Id`, its guard against
//! cross-site requests); the client sends it and tries once more, and
//! keeps it for the calls after. A user and password, when set, are the
//! host's (basic auth). Reads (`torrent-get`, `session-get`) go through
//! `outbound-read` — the service's operation table classes them by RPC
//! method — and everything else is a write.
//!
//! Torrents come back as the same [`Torrent`] record qBittorrent's do,
//! Transmission's status read into the state names that record carries,
//! so a capability handles either client's torrents alike. Tags are
//! Transmission's labels (3.00 and later).

use std::cell::RefCell;

use serde_json::{Value, json};

use crate::host::{HostError, Request, Response, outbound};
use crate::qbittorrent::{AddTorrent, Torrent};

/// The service name operators configure for Transmission.
pub const SERVICE: &str = "transmission";
/// Where Transmission takes RPC calls (its default `rpc-url` plus `rpc`).
pub const RPC_PATH: &str = "/transmission/rpc";
/// The header carrying Transmission's session id.
const SESSION_HEADER: &str = "X-Transmission-Session-Id";

/// The fields read of each torrent.
const FIELDS: [&str; 18] = [
    "hashString",
    "name",
    "status",
    "error",
    "errorString",
    "percentDone",
    "sizeWhenDone",
    "totalSize",
    "leftUntilDone",
    "downloadDir",
    "labels",
    "addedDate",
    "doneDate",
    "eta",
    "rateDownload",
    "rateUpload",
    "peersSendingToUs",
    "uploadRatio",
];

/// A client; it keeps the session id Transmission gave for its calls.
#[derive(Debug, Default)]
pub struct Client {
    session: RefCell<Option<String>>,
}

impl Client {
    /// A client with no session yet (the first call gets one).
    pub fn new() -> Client {
        Client::default()
    }

    /// Opens a session: asks Transmission its session (read class), which
    /// also says whether the service is set up and the credential taken.
    pub fn session(&self) -> Result<(), HostError> {
        self.call("session-get", json!({ "fields": ["version"] }), outbound::read).map(drop)
    }

    /// The torrent with infohash `hash`, if Transmission has it (read class).
    pub fn torrent(&self, hash: &str) -> Result<Option<Torrent>, HostError> {
        let hash = infohash(hash)?;
        Ok(self.torrents(std::slice::from_ref(&hash))?.into_iter().find(|t| t.hash == hash))
    }

    /// The torrents with these infohashes; every torrent when none are given
    /// (read class).
    pub fn torrents(&self, hashes: &[String]) -> Result<Vec<Torrent>, HostError> {
        let mut arguments = json!({ "fields": FIELDS });
        if !hashes.is_empty() {
            let ids = hashes.iter().map(|h| infohash(h)).collect::<Result<Vec<_>, _>>()?;
            arguments["ids"] = json!(ids);
        }
        let answer = self.call("torrent-get", arguments, outbound::read)?;
        let listed = answer["torrents"].as_array().cloned().unwrap_or_default();
        Ok(listed.iter().map(torrent_of).collect())
    }

    /// Adds a torrent (execute class) and labels it with `add.tags` and
    /// `add.category`. One already there is a conflict, as qBittorrent's
    /// "nothing added" is. Returns the infohash Transmission gave it.
    pub fn add(&self, add: &AddTorrent) -> Result<String, HostError> {
        use base64::Engine;
        let mut arguments = match (add.torrent_files.as_slice(), add.urls.as_slice()) {
            ([file], []) => {
                json!({ "metainfo": base64::engine::general_purpose::STANDARD.encode(&file.bytes) })
            }
            ([], [url]) if !url.trim().is_empty() && !url.contains(['\r', '\n']) => json!({ "filename": url }),
            _ => return Err(HostError::Invalid("give Transmission one torrent: a URL or a file".into())),
        };
        if let Some(dir) = &add.save_path {
            arguments["download-dir"] = json!(dir);
        }
        arguments["paused"] = json!(add.paused);
        let answer = self.call("torrent-add", arguments, outbound::write)?;
        if let Some(duplicate) = answer.get("torrent-duplicate") {
            let hash = duplicate["hashString"].as_str().unwrap_or_default();
            return Err(HostError::Conflict(format!("Transmission already has this torrent ({hash})")));
        }
        let hash = answer["torrent-added"]["hashString"]
            .as_str()
            .ok_or_else(|| HostError::Unavailable("Transmission said nothing of the torrent it added".into()))?
            .to_ascii_lowercase();
        let labels: Vec<&String> = add.tags.iter().chain(add.category.iter()).collect();
        if !labels.is_empty() {
            self.call("torrent-set", json!({ "ids": [hash], "labels": labels }), outbound::write)?;
        }
        Ok(hash)
    }

    /// Verifies the torrents' data on disk again (execute class).
    pub fn recheck(&self, hashes: &[&str]) -> Result<(), HostError> {
        self.command("torrent-verify", hashes)
    }

    /// Starts torrents (execute class).
    pub fn resume(&self, hashes: &[&str]) -> Result<(), HostError> {
        self.command("torrent-start", hashes)
    }

    /// Stops torrents (execute class).
    pub fn pause(&self, hashes: &[&str]) -> Result<(), HostError> {
        self.command("torrent-stop", hashes)
    }

    /// Removes torrents from Transmission, keeping their data on disk
    /// (execute class). A hash it does not hold is no error.
    pub fn remove_keeping_data(&self, hashes: &[&str]) -> Result<(), HostError> {
        let ids = ids(hashes)?;
        self.call("torrent-remove", json!({ "ids": ids, "delete-local-data": false }), outbound::write).map(drop)
    }

    fn command(&self, method: &str, hashes: &[&str]) -> Result<(), HostError> {
        self.call(method, json!({ "ids": ids(hashes)? }), outbound::write).map(drop)
    }

    /// One RPC call sent with `send` (`outbound::read` for a read, so a
    /// read-only capability links no write import); its `arguments` when
    /// Transmission says `success`.
    fn call(
        &self,
        method: &str,
        arguments: Value,
        send: impl Fn(Request) -> Result<Response, HostError>,
    ) -> Result<Value, HostError> {
        let body = json!({ "method": method, "arguments": arguments }).to_string().into_bytes();
        for _ in 0..2 {
            let mut headers = vec![("Content-Type".to_string(), "application/json".to_string())];
            if let Some(session) = self.session.borrow().clone() {
                headers.push((SESSION_HEADER.into(), session));
            }
            let req = Request {
                service: SERVICE.into(),
                method: "POST".into(),
                path: RPC_PATH.into(),
                headers,
                body: Some(body.clone()),
                ..Request::default()
            };
            let resp = send(req)?;
            if resp.status == 409
                && let Some(session) = header(&resp, SESSION_HEADER)
            {
                *self.session.borrow_mut() = Some(session);
                continue;
            }
            return answered(method, resp);
        }
        Err(HostError::Unavailable("Transmission kept refusing the session id it gave".into()))
    }
}

fn header(resp: &Response, name: &str) -> Option<String> {
    resp.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
}

/// What Transmission's answer to `method` means.
fn answered(method: &str, resp: Response) -> Result<Value, HostError> {
    let said: String = resp.text().chars().take(200).collect();
    match resp.status {
        200 => {}
        401 | 403 => {
            return Err(HostError::Denied(format!(
                "Transmission refused the user and password ({}): check them under Services",
                resp.status
            )));
        }
        409 => return Err(HostError::Unavailable("Transmission gave no session id with its 409".into())),
        status => return Err(HostError::Unavailable(format!("Transmission answered {status}: {}", said.trim()))),
    }
    let answer: Value = resp.json()?;
    match answer["result"].as_str() {
        Some("success") => Ok(answer["arguments"].clone()),
        Some(result) => Err(HostError::Invalid(format!("Transmission refused {method}: {result}"))),
        None => Err(HostError::Unavailable(format!("Transmission's answer to {method} says no result"))),
    }
}

/// A 40 or 64 hex-digit infohash, lowercased.
fn infohash(hash: &str) -> Result<String, HostError> {
    let hash = hash.trim();
    if !matches!(hash.len(), 40 | 64) || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(HostError::Invalid(format!("{hash:?} is not a torrent infohash (40 or 64 hex digits)")));
    }
    Ok(hash.to_ascii_lowercase())
}

/// Infohashes as Transmission's `ids`; none is refused, since Transmission
/// reads a call without `ids` as every torrent.
fn ids(hashes: &[&str]) -> Result<Vec<String>, HostError> {
    if hashes.is_empty() {
        return Err(HostError::Invalid("no torrent hashes given".into()));
    }
    hashes.iter().map(|h| infohash(h)).collect()
}

/// Transmission's torrent status, in the state names [`Torrent`] carries.
fn state_name(t: &Value) -> &'static str {
    let done = t["percentDone"].as_f64().unwrap_or(0.0) >= 1.0;
    // 3 is a local error (1 and 2 are the tracker's, which the swarm
    // outlives); "No data found" is Transmission's word for missing files.
    let missing = t["errorString"].as_str().is_some_and(|e| e.contains("No data found"));
    match (t["error"].as_i64().unwrap_or(0), t["status"].as_i64().unwrap_or(-1)) {
        (3, _) if missing => "missingFiles",
        (3, _) => "error",
        (_, 0) if done => "stoppedUP",
        (_, 0) => "stoppedDL",
        (_, 1 | 2) if done => "checkingUP",
        (_, 1 | 2) => "checkingDL",
        (_, 3) => "queuedDL",
        (_, 4) if t["peersSendingToUs"].as_i64().unwrap_or(0) == 0 && t["rateDownload"].as_i64().unwrap_or(0) == 0 => {
            "stalledDL"
        }
        (_, 4) => "downloading",
        (_, 5) => "queuedUP",
        (_, 6) => "uploading",
        _ => "unknown",
    }
}

fn torrent_of(t: &Value) -> Torrent {
    let int = |k: &str| t[k].as_i64().unwrap_or(0);
    let labels: Vec<String> = t["labels"]
        .as_array()
        .map(|ls| ls.iter().filter_map(|l| l.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let name = t["name"].as_str().unwrap_or_default().to_string();
    let dir = t["downloadDir"].as_str().unwrap_or_default().trim_end_matches('/').to_string();
    Torrent {
        hash: t["hashString"].as_str().unwrap_or_default().to_ascii_lowercase(),
        content_path: if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") },
        name,
        raw_state: state_name(t).to_string(),
        progress: t["percentDone"].as_f64().unwrap_or(0.0),
        size: int("sizeWhenDone"),
        total_size: int("totalSize"),
        amount_left: int("leftUntilDone"),
        save_path: dir,
        category: String::new(),
        tags: labels,
        added_on: int("addedDate"),
        completion_on: int("doneDate"),
        eta: int("eta"),
        dlspeed: int("rateDownload"),
        upspeed: int("rateUpload"),
        ratio: t["uploadRatio"].as_f64().unwrap_or(0.0),
        num_seeds: int("peersSendingToUs"),
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
