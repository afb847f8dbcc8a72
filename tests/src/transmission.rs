//! A real `transmission-daemon` (Debian package) for end-to-end tests: its
//! own configuration folder, RPC on a free loopback port behind a known
//! user and password, no peer discovery (DHT, LPD and PeX off: peers come
//! only from a tracker), downloads into a temporary folder. Stopped when
//! dropped. It fails the test, never skips it, when the program is not
//! installed.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::qbittorrent::free_port;

const PROGRAM: &str = "transmission-daemon";
const INSTALL_HINT: &str = "install it with `apt-get install transmission-daemon` (scripts/setup.sh does this)";

/// How long a cold start may take on a loaded CI machine.
const START_DEADLINE: Duration = Duration::from_secs(45);

/// A running transmission-daemon.
pub struct Transmission {
    child: Option<Child>,
    /// Where it listens for peers and announces from.
    peers_on: IpAddr,
    profile: TempDir,
    rpc_port: u16,
    username: String,
    password: String,
}

impl Transmission {
    /// Starts a fresh daemon and waits until its RPC answers. It listens
    /// for peers, and announces, on loopback: it reaches a swarm on the
    /// network address but is never a peer the tracker names to others.
    pub async fn start() -> Transmission {
        Transmission::start_on(IpAddr::V4(Ipv4Addr::LOCALHOST)).await
    }

    /// As [`Transmission::start`], listening for peers and announcing on
    /// `peers_on` (a seeder others reach).
    pub async fn start_on(peers_on: IpAddr) -> Transmission {
        let installed = Command::new(PROGRAM).arg("--version").stderr(Stdio::piped()).output();
        assert!(installed.is_ok(), "{PROGRAM} is not installed: {INSTALL_HINT}");
        let profile = tempfile::Builder::new().prefix("capstan-tr-").tempdir().unwrap();
        let mut daemon = Transmission {
            child: None,
            peers_on,
            profile,
            rpc_port: free_port(),
            username: "capstan".into(),
            password: format!("pw-{}", uuid::Uuid::new_v4().simple()),
        };
        std::fs::create_dir_all(daemon.downloads()).unwrap();
        for _ in 0..3 {
            daemon.write_settings(free_port());
            match daemon.spawn_and_wait().await {
                Ok(()) => break,
                Err(log) if log.contains("ouldn't bind") || log.contains("in use") => daemon.rpc_port = free_port(),
                Err(log) => panic!("{PROGRAM} exited during startup:\n{log}"),
            }
        }
        assert!(daemon.child.is_some(), "{PROGRAM} found no free port:\n{}", daemon.log_tail());
        daemon
    }

    /// `http://127.0.0.1:<port>`, the base URL the service is given.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.rpc_port)
    }

    pub fn username(&self) -> &str {
        &self.username
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// The download folder, an empty temporary folder.
    pub fn downloads(&self) -> PathBuf {
        self.profile.path().join("downloads")
    }

    /// One RPC call made as any client makes it (the session-id handshake
    /// included); its answer.
    pub async fn rpc(&self, method: &str, arguments: Value) -> Value {
        let client = reqwest::Client::new();
        let url = format!("{}/transmission/rpc", self.base_url());
        let body = json!({"method": method, "arguments": arguments});
        let mut session = String::new();
        for _ in 0..2 {
            let resp = client
                .post(&url)
                .basic_auth(&self.username, Some(&self.password))
                .header("X-Transmission-Session-Id", &session)
                .json(&body)
                .send()
                .await
                .unwrap();
            if resp.status() == 409 {
                session = resp.headers()["x-transmission-session-id"].to_str().unwrap().to_string();
                continue;
            }
            assert!(resp.status().is_success(), "{method}: {}", resp.status());
            return resp.json().await.unwrap();
        }
        panic!("{method}: Transmission kept answering 409");
    }

    fn log_path(&self) -> PathBuf {
        self.profile.path().join("transmission.log")
    }

    /// The settings the daemon reads at start (and rewrites on exit).
    fn write_settings(&self, peer_port: u16) {
        let settings = json!({
            "dht-enabled": false, "lpd-enabled": false, "pex-enabled": false, "utp-enabled": false,
            "port-forwarding-enabled": false, "bind-address-ipv4": self.peers_on.to_string(), "peer-port": peer_port, "peer-port-random-on-start": false,
            "rpc-enabled": true, "rpc-bind-address": "127.0.0.1", "rpc-port": self.rpc_port,
            "rpc-authentication-required": true, "rpc-username": self.username, "rpc-password": self.password,
            "rpc-whitelist-enabled": true, "rpc-whitelist": "127.0.0.1", "rpc-host-whitelist-enabled": false,
            "download-dir": self.downloads(), "incomplete-dir-enabled": false,
            "download-queue-enabled": false, "seed-queue-enabled": false, "start-added-torrents": true,
            "message-level": 1,
        });
        std::fs::write(self.profile.path().join("settings.json"), settings.to_string()).unwrap();
    }

    async fn spawn_and_wait(&mut self) -> Result<(), String> {
        let child = Command::new(PROGRAM)
            .arg("--foreground")
            .arg("--config-dir")
            .arg(self.profile.path())
            .arg("--logfile")
            .arg(self.log_path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {PROGRAM}: {e} ({INSTALL_HINT})"))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_DEADLINE;
        let url = format!("{}/transmission/rpc", self.base_url());
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return Err(format!("exited with {status}:\n{}", self.log_tail()));
            }
            // Any answer (401 without the password) means it is up.
            if reqwest::Client::new().post(&url).send().await.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("no RPC answer within {START_DEADLINE:?}:\n{}", self.log_tail()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        log.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Transmission {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
