//! A real BitTorrent swarm on loopback: Debian's `opentracker` (built with
//! a whitelist, so only the torrent made here is tracked) on a free port, a
//! `.torrent` made by `mktorrent` that announces to it, and a second
//! qbittorrent-nox seeding the data. A client given the torrent downloads
//! it for real, piece by piece from the seeder, with DHT, LSD and PeX off:
//! the tracker is the only way the two meet. Everything stops when the
//! swarm is dropped. Fails the test, never skips it, when a program is
//! missing (`scripts/setup.sh --tests` installs them).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};
use tempfile::TempDir;

use crate::qbittorrent::{QBittorrent, free_port};
use crate::torrent::BuiltTorrent;

const INSTALL_HINT: &str =
    "install it with `apt-get install opentracker mktorrent` (scripts/setup.sh --tests does this)";

/// How long the seeder may take to check its data and announce it.
const SEEDING_DEADLINE: Duration = Duration::from_secs(60);

/// A tracker, a torrent it tracks, and a client seeding it.
pub struct Swarm {
    /// The seeding client; its downloads folder holds the data.
    pub seeder: QBittorrent,
    /// The `.torrent` mktorrent made, with its infohash and magnet.
    pub torrent: BuiltTorrent,
    tracker: Child,
    port: u16,
    _files: TempDir,
}

impl Swarm {
    /// Writes `contents` as `name` into a new seeder's downloads folder,
    /// makes its torrent announcing to a new tracker, and waits until the
    /// tracker lists the seeder as a complete peer.
    pub async fn seeding(name: &str, contents: &[u8]) -> Swarm {
        Swarm::seeding_files(name, None, &[(name, contents.to_vec())]).await
    }

    /// As [`Swarm::seeding`], for a folder `name` holding `files` (a
    /// season pack): one torrent of several files.
    pub async fn seeding_folder(name: &str, files: &[(&str, Vec<u8>)]) -> Swarm {
        Swarm::seeding_files(name, Some(name), files).await
    }

    async fn seeding_files(name: &str, folder: Option<&str>, contents: &[(&str, Vec<u8>)]) -> Swarm {
        let files = tempfile::Builder::new().prefix("capstan-swarm-").tempdir().unwrap();
        // opentracker drops to `nobody` when started as root: it must still
        // read its whitelist.
        set_mode(files.path(), 0o755);
        let port = free_port();
        let seeder = QBittorrent::start().await;
        let data = seeder.downloads().join(name);
        if folder.is_some() {
            std::fs::create_dir_all(&data).unwrap();
        }
        for (file, bytes) in contents {
            let at = if folder.is_some() { data.join(file) } else { data.clone() };
            std::fs::write(at, bytes).unwrap();
        }
        let torrent = make_torrent(&data, &format!("http://127.0.0.1:{port}/announce"), files.path());
        let whitelist = files.path().join("whitelist");
        std::fs::write(&whitelist, format!("{}\n", torrent.info_hash)).unwrap();
        set_mode(&whitelist, 0o644);
        let tracker = start_tracker(port, &whitelist, files.path());
        let swarm = Swarm { seeder, torrent, tracker, port, _files: files };
        swarm.seed().await;
        swarm
    }

    /// `http://127.0.0.1:<port>/announce`.
    pub fn announce_url(&self) -> String {
        format!("http://127.0.0.1:{}/announce", self.port)
    }

    /// Gives the seeder the torrent over its data and waits until the
    /// tracker counts it complete.
    async fn seed(&self) {
        let client = self.seeder.login().await;
        let part = reqwest::multipart::Part::bytes(self.torrent.bytes.clone()).file_name("seed.torrent");
        let form = reqwest::multipart::Form::new()
            .part("torrents", part)
            .text("savepath", self.seeder.downloads().display().to_string());
        let added = client.post(format!("{}/api/v2/torrents/add", self.seeder.base_url())).multipart(form).send().await;
        let added = added.unwrap();
        assert!(added.status().is_success(), "the seeder refused the torrent: {}", added.status());
        let deadline = Instant::now() + SEEDING_DEADLINE;
        loop {
            if self.complete_peers().await > 0 {
                return;
            }
            assert!(Instant::now() < deadline, "the tracker never listed the seeder as complete");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// How many complete peers the tracker lists for the torrent.
    pub async fn complete_peers(&self) -> u64 {
        let hash = hex::decode(&self.torrent.info_hash).unwrap();
        let escaped: String = percent_encoding::percent_encode(&hash, percent_encoding::NON_ALPHANUMERIC).to_string();
        let url = format!("http://127.0.0.1:{}/scrape?info_hash={escaped}", self.port);
        let Ok(answer) = reqwest::get(&url).await else { return 0 };
        let body = answer.bytes().await.unwrap_or_default();
        scraped_complete(&body).unwrap_or(0)
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        let _ = self.tracker.kill();
        let _ = self.tracker.wait();
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs `mktorrent` on `data` (32 KiB pieces, its smallest, so a small payload still
/// spans many) and reads back what it wrote.
fn make_torrent(data: &Path, announce: &str, into: &Path) -> BuiltTorrent {
    let name = data.file_name().unwrap().to_string_lossy().to_string();
    let out = into.join(format!("{name}.torrent"));
    let made = Command::new("mktorrent")
        .args(["-l", "15", "-a", announce, "-o"])
        .arg(&out)
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run mktorrent: {e}; {INSTALL_HINT}"));
    assert!(made.status.success(), "mktorrent failed: {}", String::from_utf8_lossy(&made.stderr));
    let bytes = std::fs::read(&out).unwrap();
    let info_hash = info_hash(&bytes);
    let magnet = format!("magnet:?xt=urn:btih:{info_hash}&dn={name}&tr={announce}");
    BuiltTorrent {
        bytes,
        info_hash,
        magnet,
        name,
        save_path: data.parent().unwrap().to_path_buf(),
        files: vec![PathBuf::from(data)],
    }
}

/// The v1 infohash: SHA-1 of the bencoded `info` dictionary, which
/// mktorrent writes with its keys sorted, as re-encoding writes them.
fn info_hash(torrent: &[u8]) -> String {
    use serde_bencode::value::Value;
    let Ok(Value::Dict(meta)) = serde_bencode::from_bytes::<Value>(torrent) else {
        panic!("mktorrent wrote something that is not a bencoded dictionary");
    };
    let info = meta.get(&b"info"[..]).expect("a torrent has an info dictionary");
    hex::encode(Sha1::digest(serde_bencode::to_bytes(info).unwrap()))
}

/// `complete` of the one file a scrape answered about.
fn scraped_complete(body: &[u8]) -> Option<u64> {
    use serde_bencode::value::Value;
    let Ok(Value::Dict(answer)) = serde_bencode::from_bytes::<Value>(body) else { return None };
    let Some(Value::Dict(files)) = answer.get(&b"files"[..]) else { return None };
    let Some(Value::Dict(file)) = files.values().next() else { return None };
    match file.get(&b"complete"[..]) {
        Some(Value::Int(n)) => u64::try_from(*n).ok(),
        _ => None,
    }
}

/// Starts opentracker on loopback, tracking only what `whitelist` lists.
/// `-d /` keeps it from changing root into the working folder.
fn start_tracker(port: u16, whitelist: &Path, dir: &Path) -> Child {
    let log = std::fs::File::create(dir.join("opentracker.log")).unwrap();
    let mut child = Command::new("opentracker")
        .args(["-i", "127.0.0.1", "-p", &port.to_string(), "-P", &port.to_string(), "-d", "/", "-w"])
        .arg(whitelist)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start opentracker: {e}; {INSTALL_HINT}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            let said = std::fs::read_to_string(dir.join("opentracker.log")).unwrap_or_default();
            panic!("opentracker exited at start ({status}): {said}");
        }
        assert!(Instant::now() < deadline, "opentracker did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_answer_is_read_for_its_complete_count() {
        let body = b"d5:filesd20:aaaaaaaaaaaaaaaaaaaad8:completei1e10:downloadedi0e10:incompletei0eeee";
        assert_eq!(scraped_complete(body), Some(1));
        assert_eq!(scraped_complete(b"d5:filesdee"), None);
        assert_eq!(scraped_complete(b"<title>Access Denied</title>"), None);
    }
}
