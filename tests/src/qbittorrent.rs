//! A real `qbittorrent-nox` (Debian package) for end-to-end tests: its own
//! profile folder, WebUI on a free loopback port behind a known username
//! and password, no peer discovery (DHT, LSD and PeX off: peers come only
//! from a tracker), several connections from one address allowed (every
//! peer on loopback shares 127.0.0.1), downloads into a temporary folder.
//! Stopped when dropped. It fails the test, never skips it, when the
//! program is not installed.
//!
//! The WebUI keeps password login on (a PBKDF2 hash written into
//! `qBittorrent.conf`) rather than `WebUI\LocalHostAuth=false`: that is how
//! operators run it, and it makes the suites go through the same form login
//! and session cookie the host's outbound layer uses.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use capstan::pipeline::{Origin, Services};
use capstan::runtime::EffectClass;
use tempfile::TempDir;

/// The program and how to get it, for the failure message.
const PROGRAM: &str = "qbittorrent-nox";
const INSTALL_HINT: &str = "install it with `apt-get install qbittorrent-nox` (scripts/setup.sh does this)";

/// How long a cold start may take on a loaded CI machine.
const START_DEADLINE: Duration = Duration::from_secs(45);

/// A running qbittorrent-nox.
pub struct QBittorrent {
    child: Option<Child>,
    profile: TempDir,
    webui_port: u16,
    username: String,
    password: String,
    /// `qBittorrent v4.5.2` → (4, 5, 2).
    program_version: (u32, u32, u32),
    app_version: String,
    webapi_version: String,
}

impl QBittorrent {
    /// Starts a fresh instance and waits until its WebUI answers.
    pub async fn start() -> QBittorrent {
        let program_version = installed_version();
        let profile = tempfile::Builder::new().prefix("capstan-qbt-").tempdir().unwrap();
        let mut qbt = QBittorrent {
            child: None,
            webui_port: free_port(),
            username: "capstan".into(),
            password: format!("pw-{}", uuid::Uuid::new_v4().simple()),
            program_version,
            app_version: String::new(),
            webapi_version: String::new(),
            profile,
        };
        std::fs::create_dir_all(qbt.downloads()).unwrap();
        let listen_port = free_port();
        qbt.write_config(listen_port);
        // A port found free can be taken by another process before
        // qBittorrent binds it: start again on other ports, a few times.
        for _ in 0..3 {
            match qbt.spawn_and_wait().await {
                Ok(()) => break,
                Err(log) if log.contains("already in use") => {
                    qbt.webui_port = free_port();
                    qbt.write_config(free_port());
                }
                Err(log) => panic!("{PROGRAM} exited during startup:\n{log}"),
            }
        }
        assert!(qbt.child.is_some(), "{PROGRAM} found no free port:\n{}", qbt.log_tail());
        qbt.connect().await;
        qbt
    }

    /// `http://127.0.0.1:<port>`, the WebUI's base URL.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.webui_port)
    }

    pub fn username(&self) -> &str {
        &self.username
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// What `GET /api/v2/app/webapiVersion` answered, e.g. `2.8.19`.
    pub fn webapi_version(&self) -> &str {
        &self.webapi_version
    }

    /// What `GET /api/v2/app/version` answered, e.g. `v4.5.2`.
    pub fn app_version(&self) -> &str {
        &self.app_version
    }

    /// The default save path, an empty temporary folder.
    pub fn downloads(&self) -> PathBuf {
        self.profile.path().join("downloads")
    }

    /// A client that has logged in and holds the session cookie.
    pub async fn login(&self) -> reqwest::Client {
        let client = reqwest::Client::builder().cookie_store(true).build().unwrap();
        let resp = client
            .post(format!("{}/api/v2/auth/login", self.base_url()))
            .form(&[("username", self.username()), ("password", self.password())])
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let body = resp.text().await.unwrap();
        // Up to 5.1 a bad password is a 200 with body "Fails.".
        assert!(status.is_success() && body.trim() != "Fails.", "qBittorrent refused the login: {status} {body}");
        client
    }

    /// Stops qBittorrent cleanly (so it saves its torrents' resume data) and
    /// starts it again on the same profile and ports, as after a reboot.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.start_again().await;
    }

    /// Stops qBittorrent cleanly: it saves its torrents' resume data on the
    /// way out, which a loaded machine may take a while to do.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGTERM lets it save resume data; std only offers SIGKILL.
            let asked = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            if !asked.is_ok_and(|s| s.success()) {
                let _ = child.kill();
            }
            let deadline = Instant::now() + Duration::from_secs(60);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let _ = child.wait();
        }
    }

    /// Starts a stopped qBittorrent on the same profile and ports.
    pub async fn start_again(&mut self) {
        assert!(self.child.is_none(), "qBittorrent is still running");
        self.launch().await;
    }

    fn config_path(&self) -> PathBuf {
        self.profile.path().join("qBittorrent/config/qBittorrent.conf")
    }

    fn log_path(&self) -> PathBuf {
        self.profile.path().join("qbittorrent-nox.log")
    }

    /// Writes the settings before the first start; qBittorrent reads them
    /// once at startup (and rewrites the file on exit).
    fn write_config(&self, listen_port: u16) {
        let config = format!(
            "[LegalNotice]\n\
             Accepted=true\n\
             \n\
             [BitTorrent]\n\
             Session\\DHTEnabled=false\n\
             Session\\PeXEnabled=false\n\
             Session\\LSDEnabled=false\n\
             Session\\Port={listen_port}\n\
             Session\\DefaultSavePath={downloads}\n\
             Session\\TempPathEnabled=false\n\
             Session\\QueueingSystemEnabled=false\n\
             Session\\MultiConnectionsPerIp=true\n\
             \n\
             [Network]\n\
             PortForwardingEnabled=false\n\
             \n\
             [Preferences]\n\
             Connection\\UPnP=false\n\
             WebUI\\Address=127.0.0.1\n\
             WebUI\\Port={webui_port}\n\
             WebUI\\UseUPnP=false\n\
             WebUI\\LocalHostAuth=true\n\
             WebUI\\Username={username}\n\
             WebUI\\Password_PBKDF2=\"{hash}\"\n",
            downloads = self.downloads().display(),
            webui_port = self.webui_port,
            username = self.username,
            hash = password_hash(&self.password, uuid::Uuid::new_v4().as_bytes()),
        );
        let path = self.config_path();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, config).unwrap();
    }

    async fn launch(&mut self) {
        if let Err(log) = self.spawn_and_wait().await {
            panic!("{PROGRAM} exited during startup:\n{log}");
        }
        self.connect().await;
    }

    /// Starts qBittorrent and waits until its WebUI answers; its output's
    /// tail when it exits first.
    async fn spawn_and_wait(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log_path()).unwrap();
        let mut command = Command::new(PROGRAM);
        command
            .arg(format!("--profile={}", self.profile.path().display()))
            .arg(format!("--webui-port={}", self.webui_port))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // 5.x asks on the terminal unless told; 4.x reads LegalNotice\Accepted
        // and rejects the unknown flag.
        if self.program_version.0 >= 5 {
            command.arg("--confirm-legal-notice");
        }
        self.child = Some(command.spawn().unwrap_or_else(|e| panic!("cannot start {PROGRAM}: {e}; {INSTALL_HINT}")));
        self.wait_until_answering().await
    }

    /// Logs in and reads the versions.
    async fn connect(&mut self) {
        let client = self.login().await;
        let base = self.base_url();
        let get = |path: &'static str| {
            let request = client.get(format!("{base}{path}"));
            async move { request.send().await.unwrap().error_for_status().unwrap().text().await.unwrap() }
        };
        self.webapi_version = get("/api/v2/app/webapiVersion").await.trim().to_string();
        self.app_version = get("/api/v2/app/version").await.trim().to_string();
    }

    /// Polls until the WebUI answers anything (403 before login counts: it
    /// is up). Answers qBittorrent's own output if it exits (and forgets
    /// the child); fails if it never answers.
    async fn wait_until_answering(&mut self) -> Result<(), String> {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
        let url = format!("{}/api/v2/app/webapiVersion", self.base_url());
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return Err(format!("({status}) {}", self.log_tail()));
            }
            if client.get(&url).send().await.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                panic!("{PROGRAM} did not answer on {url} within {START_DEADLINE:?}:\n{}", self.log_tail());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for QBittorrent {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The installed program's version; fails the test when it is missing.
fn installed_version() -> (u32, u32, u32) {
    let output = match Command::new(PROGRAM).arg("--version").stdin(Stdio::null()).output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("{PROGRAM} is not installed, and the qBittorrent suites need it: {INSTALL_HINT}")
        }
        Err(e) => panic!("cannot run {PROGRAM} --version: {e}"),
    };
    let text = String::from_utf8_lossy(&output.stdout);
    parse_program_version(&text).unwrap_or_else(|| panic!("unexpected `{PROGRAM} --version` output: {text:?}"))
}

/// `qBittorrent v4.5.2` → (4, 5, 2); suffixes like `beta1` are ignored.
fn parse_program_version(text: &str) -> Option<(u32, u32, u32)> {
    let version = text.split_whitespace().find_map(|word| word.strip_prefix('v'))?;
    let mut numbers = version.split('.').map(|part| {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    Some((numbers.next()??, numbers.next()??, numbers.next().flatten().unwrap_or(0)))
}

/// qBittorrent's stored password: `@ByteArray(<salt>:<key>)`, base64 of a
/// 16-byte salt and of the 64-byte PBKDF2-HMAC-SHA512 key (100 000 rounds).
pub fn password_hash(password: &str, salt: &[u8; 16]) -> String {
    let mut key = [0u8; 64];
    pbkdf2::pbkdf2_hmac::<sha2::Sha512>(password.as_bytes(), salt, 100_000, &mut key);
    format!("@ByteArray({}:{})", BASE64.encode(salt), BASE64.encode(key))
}

/// A loopback port free right now. Another process could take it before
/// qBittorrent binds it; startup then fails loudly rather than flakily
/// talking to a stranger, because the login would not succeed.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Stands in for the peers of a real download: once qBittorrent has a
/// download's torrent, `download.recheck` has it check the data already on
/// disk (once per download), every half second until aborted. With
/// `sync`, it also queues the `syncDownloads` sweep each time, as the
/// schedule of `capstan serve` would.
pub fn deliver_the_data(svc: Services, sync: bool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let tasks = svc.domain.tasks().clone();
        let sweep = capstan::acquisition::SYNC_DOWNLOADS;
        let mut rechecked = std::collections::HashSet::new();
        loop {
            if sync {
                let _ = capstan::acquisition::enqueue(&tasks, sweep, None, serde_json::json!({}), sweep).await;
            }
            for download in svc.domain.downloads(None, 50).await.unwrap_or_default() {
                if download.status != capstan::domain::DownloadStatus::Queued && !rechecked.contains(&download.id) {
                    let input = serde_json::json!({"downloadTaskId": download.id});
                    let inv = svc.caps.invoke(&Origin::cli(EffectClass::Execute), "download.recheck", &input).await;
                    if inv.is_ok_and(|i| i.error.is_none()) {
                        rechecked.insert(download.id);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_versions_are_read_from_the_banner() {
        assert_eq!(parse_program_version("qBittorrent v4.5.2\n"), Some((4, 5, 2)));
        assert_eq!(parse_program_version("qBittorrent v5.1.0beta1"), Some((5, 1, 0)));
        assert_eq!(parse_program_version("qBittorrent v5.0"), Some((5, 0, 0)));
        assert_eq!(parse_program_version("something else"), None);
    }

    #[test]
    fn the_password_hash_matches_a_known_pbkdf2_sha512_value() {
        // Salt 0..16 and "adminadmin", checked against an independent
        // PBKDF2-HMAC-SHA512 implementation.
        let salt: [u8; 16] = core::array::from_fn(|i| i as u8);
        let hash = password_hash("adminadmin", &salt);
        assert_eq!(
            hash,
            "@ByteArray(AAECAwQFBgcICQoLDA0ODw==:UC4grCR8uxnR4Gzyoule02IP9X8mRb7SaEfCylvs19kyzc76Vdb/0xQlSKu43sz2Dl4vz2SIZymUO3PvTxIfVQ==)"
        );
    }
}
