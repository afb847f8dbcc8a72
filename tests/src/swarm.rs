//! A real BitTorrent swarm: Debian's `opentracker` (built with a
//! whitelist, so only the torrents made here are tracked) on a free port of
//! loopback or of the machine's own network address, `.torrent` files made
//! by `mktorrent` that announce to it, and a second client seeding the
//! data (qbittorrent-nox on loopback, transmission-daemon on the network
//! address). A client given the torrent downloads it for real, piece by
//! piece from the seeder, with DHT, LSD and PeX off: the tracker is the
//! only way the two meet. Everything stops when the
//! swarm is dropped. Fails the test, never skips it, when a program is
//! missing (`scripts/setup.sh --tests` installs them).

use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};
use tempfile::TempDir;

use crate::qbittorrent::QBittorrent;
use crate::torrent::BuiltTorrent;
use crate::transmission::Transmission;

const INSTALL_HINT: &str =
    "install it with `apt-get install opentracker mktorrent` (scripts/setup.sh --tests does this)";

/// How long the seeder may take to check its data and announce it.
const SEEDING_DEADLINE: Duration = Duration::from_secs(60);

/// One torrent the seeder shares: a single file `name`, or a folder `name`
/// holding `files`.
pub struct Seed<'a> {
    pub name: &'a str,
    pub folder: bool,
    pub files: Vec<(&'a str, Vec<u8>)>,
}

impl<'a> Seed<'a> {
    /// A torrent of one file.
    pub fn file(name: &'a str, contents: &[u8]) -> Seed<'a> {
        Seed { name, folder: false, files: vec![(name, contents.to_vec())] }
    }
}

/// The client seeding a swarm: qBittorrent on loopback. On the network
/// address it is Transmission, which listens on that address itself: each
/// listener libtorrent opens is bound to its device, and a connection from
/// this machine to its own network address arrives through the loopback
/// device, where a listener bound to the network device never sees it.
enum Seeder {
    QBittorrent(QBittorrent),
    Transmission(Transmission),
}

impl Seeder {
    async fn start(address: IpAddr) -> Seeder {
        if address.is_loopback() {
            Seeder::QBittorrent(QBittorrent::start().await)
        } else {
            Seeder::Transmission(Transmission::start_on(address).await)
        }
    }

    fn downloads(&self) -> PathBuf {
        match self {
            Seeder::QBittorrent(client) => client.downloads(),
            Seeder::Transmission(client) => client.downloads(),
        }
    }

    /// Gives the client `torrent` over the data already in its folder.
    async fn add(&self, torrent: &BuiltTorrent) {
        match self {
            Seeder::QBittorrent(client) => {
                let login = client.login().await;
                let part = reqwest::multipart::Part::bytes(torrent.bytes.clone()).file_name("seed.torrent");
                let form = reqwest::multipart::Form::new()
                    .part("torrents", part)
                    .text("savepath", client.downloads().display().to_string());
                let added = login.post(format!("{}/api/v2/torrents/add", client.base_url())).multipart(form).send();
                let added = added.await.unwrap();
                assert!(added.status().is_success(), "the seeder refused {}: {}", torrent.name, added.status());
            }
            Seeder::Transmission(client) => {
                use base64::Engine;
                let metainfo = base64::engine::general_purpose::STANDARD.encode(&torrent.bytes);
                let arguments = serde_json::json!({"metainfo": metainfo, "download-dir": client.downloads()});
                let added = client.rpc("torrent-add", arguments).await;
                assert_eq!(added["result"], "success", "the seeder refused {}: {added}", torrent.name);
            }
        }
    }
}

/// A tracker, the torrents it tracks, and a client seeding them.
pub struct Swarm {
    seeder: Seeder,
    /// The `.torrent` files mktorrent made, in the order they were asked
    /// for, each with its infohash and magnet.
    pub torrents: Vec<BuiltTorrent>,
    tracker: Child,
    address: IpAddr,
    port: u16,
    _files: TempDir,
}

impl Swarm {
    /// Writes `contents` as `name` into a new seeder's downloads folder,
    /// makes its torrent announcing to a new tracker on loopback, and waits
    /// until the tracker lists the seeder as a complete peer.
    pub async fn seeding(name: &str, contents: &[u8]) -> Swarm {
        Swarm::start(IpAddr::V4(Ipv4Addr::LOCALHOST), &[Seed::file(name, contents)]).await
    }

    /// As [`Swarm::seeding`], for a folder `name` holding `files` (a
    /// season pack): one torrent of several files.
    pub async fn seeding_folder(name: &str, files: &[(&str, Vec<u8>)]) -> Swarm {
        let seed = Seed { name, folder: true, files: files.to_vec() };
        Swarm::start(IpAddr::V4(Ipv4Addr::LOCALHOST), &[seed]).await
    }

    /// Several torrents on one tracker and one seeder (a release and its
    /// upgrade), on loopback.
    pub async fn seeding_all(seeds: &[Seed<'_>]) -> Swarm {
        Swarm::start(IpAddr::V4(Ipv4Addr::LOCALHOST), seeds).await
    }

    /// As [`Swarm::seeding`], with the tracker and the seeder on the
    /// machine's own network address instead of loopback.
    /// Transmission drops every peer a tracker names in 127.0.0.0/8 as
    /// unroutable, so a swarm it joins must not be on loopback.
    pub async fn seeding_on_the_network(name: &str, contents: &[u8]) -> Swarm {
        Swarm::start(network_address(), &[Seed::file(name, contents)]).await
    }

    async fn start(address: IpAddr, seeds: &[Seed<'_>]) -> Swarm {
        let files = tempfile::Builder::new().prefix("capstan-swarm-").tempdir().unwrap();
        // opentracker drops to `nobody` when started as root: it must still
        // read its whitelist.
        set_mode(files.path(), 0o755);
        let port = free_port_on(address);
        let seeder = Seeder::start(address).await;
        let announce = format!("http://{}/announce", host_port(address, port));
        let mut torrents = Vec::new();
        for seed in seeds {
            let data = seeder.downloads().join(seed.name);
            if seed.folder {
                std::fs::create_dir_all(&data).unwrap();
            }
            for (file, bytes) in &seed.files {
                let at = if seed.folder { data.join(file) } else { data.clone() };
                std::fs::write(at, bytes).unwrap();
            }
            torrents.push(make_torrent(&data, &announce, files.path()));
        }
        let whitelist = files.path().join("whitelist");
        let hashes: String = torrents.iter().map(|t| format!("{}\n", t.info_hash)).collect();
        std::fs::write(&whitelist, hashes).unwrap();
        set_mode(&whitelist, 0o644);
        let tracker = start_tracker(address, port, &whitelist, files.path());
        let swarm = Swarm { seeder, torrents, tracker, address, port, _files: files };
        swarm.seed().await;
        swarm
    }

    /// The first (often the only) torrent.
    pub fn torrent(&self) -> &BuiltTorrent {
        &self.torrents[0]
    }

    /// `http://<address>:<port>/announce`.
    pub fn announce_url(&self) -> String {
        format!("http://{}/announce", host_port(self.address, self.port))
    }

    /// Gives the seeder each torrent over its data and waits until the
    /// tracker counts every one complete.
    async fn seed(&self) {
        for torrent in &self.torrents {
            self.seeder.add(torrent).await;
        }
        let deadline = Instant::now() + SEEDING_DEADLINE;
        for torrent in &self.torrents {
            while self.complete_peers_of(&torrent.info_hash).await == 0 {
                let log = std::fs::read_to_string(self._files.path().join("opentracker.log")).unwrap_or_default();
                assert!(Instant::now() < deadline, "the tracker never listed the seeder of {}: {log}", torrent.name);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    /// How many complete peers the tracker lists for the first torrent.
    pub async fn complete_peers(&self) -> u64 {
        self.complete_peers_of(&self.torrents[0].info_hash).await
    }

    /// How many complete peers the tracker lists for `info_hash`.
    pub async fn complete_peers_of(&self, info_hash: &str) -> u64 {
        let hash = hex::decode(info_hash).unwrap();
        let escaped: String = percent_encoding::percent_encode(&hash, percent_encoding::NON_ALPHANUMERIC).to_string();
        let url = format!("http://{}/scrape?info_hash={escaped}", host_port(self.address, self.port));
        let Ok(answer) = reqwest::get(&url).await else { return 0 };
        let body = answer.bytes().await.unwrap_or_default();
        scraped_complete(&body).unwrap_or(0)
    }
}

/// The machine's own IPv4 address: the source address of its default
/// route, as the kernel picks it. Connecting a UDP socket sends nothing.
fn network_address() -> IpAddr {
    let picked = UdpSocket::bind("0.0.0.0:0").and_then(|socket| {
        // TEST-NET-2: routed by the default route, never answered.
        socket.connect("198.51.100.1:9")?;
        socket.local_addr()
    });
    match picked {
        Ok(at) if !at.ip().is_loopback() && !at.ip().is_unspecified() => at.ip(),
        other => panic!(
            "this test needs a network address besides loopback (Transmission refuses loopback peers), \
             and the machine has no default route to take one from: {other:?}"
        ),
    }
}

fn host_port(address: IpAddr, port: u16) -> String {
    std::net::SocketAddr::new(address, port).to_string()
}

fn free_port_on(address: IpAddr) -> u16 {
    std::net::TcpListener::bind((address, 0)).unwrap().local_addr().unwrap().port()
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

/// Starts opentracker on `address`, tracking only what `whitelist` lists.
/// `-d /` keeps it from changing root into the working folder.
fn start_tracker(address: IpAddr, port: u16, whitelist: &Path, dir: &Path) -> Child {
    let log = std::fs::File::create(dir.join("opentracker.log")).unwrap();
    let mut child = Command::new("opentracker")
        .args(["-i", &address.to_string(), "-p", &port.to_string(), "-P", &port.to_string(), "-d", "/", "-w"])
        .arg(whitelist)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start opentracker: {e}; {INSTALL_HINT}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect((address, port)).is_err() {
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
