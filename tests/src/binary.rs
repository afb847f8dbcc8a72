//! Runs the `capstan` binary built for this test run: one command, or
//! `capstan serve` on a loopback port ([`Serving`]).

use std::path::PathBuf;
use std::process::{Command, Output};

/// Path of the `capstan` binary next to this test executable's folder.
pub fn capstan_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/e2e-xxxx → target/<profile>/capstan
    let profile_dir = exe.parent().and_then(|p| p.parent()).unwrap();
    let bin = profile_dir.join("capstan");
    assert!(bin.exists(), "{} is missing: build it with `cargo build -p capstan`", bin.display());
    bin
}

/// Runs `capstan` with `args` and returns its output.
pub fn run(args: &[&str]) -> Output {
    Command::new(capstan_bin()).args(args).env("RUST_LOG", "warn").output().unwrap()
}

/// Stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `capstan serve` on a free loopback port, its log kept in a file beside
/// the data; stopped when dropped.
pub struct Serving {
    child: std::process::Child,
    /// `http://127.0.0.1:<port>`
    pub root: String,
    log: PathBuf,
}

/// What the environment may say about Capstan's state or TMDB, which a
/// server a suite starts takes only from the suite.
const OUTSIDE: &[&str] = &[
    "CAPSTAN_DATA_DIR",
    "CAPSTAN_CAPABILITIES_DIR",
    "CAPSTAN_CONFIG",
    "CAPSTAN_DATABASE_URL",
    "CAPSTAN_MASTER_KEY",
    "TMDB_API_KEY",
    "TMDB_ACCESS_TOKEN",
    "TMDB_BASE_URL",
];

impl Serving {
    /// Starts `capstan serve` in `cwd` over `data_dir`, with `env` added
    /// to an environment cleared of [`OUTSIDE`]'s variables, and waits until
    /// it answers `/api/v1/health` (failing with its log if it exits).
    pub async fn start(cwd: &std::path::Path, data_dir: &std::path::Path, env: &[(&str, &str)]) -> Serving {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let listen = format!("127.0.0.1:{port}");
        let log = data_dir.with_file_name("serve.log");
        let mut command = Command::new(capstan_bin());
        command.current_dir(cwd).args(["serve", "--listen", &listen]);
        for name in OUTSIDE {
            command.env_remove(name);
        }
        command
            .env("CAPSTAN_DATA_DIR", data_dir)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        let mut served = Serving { child: command.spawn().unwrap(), root: format!("http://{listen}"), log };
        let started = std::time::Instant::now();
        loop {
            if served.child.try_wait().unwrap().is_some() {
                panic!("serve exited before answering:\n{}", served.log());
            }
            if let Ok(resp) = reqwest::get(format!("{}/api/v1/health", served.root)).await
                && resp.status().is_success()
            {
                return served;
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(180), "serve did not answer:\n{}", served.log());
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// `http://127.0.0.1:<port>/api/v1`
    pub fn base(&self) -> String {
        format!("{}/api/v1", self.root)
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the server SIGTERM, as a service manager stops it.
    pub fn terminate(&self) {
        let sent = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(sent.success(), "SIGTERM did not reach the server");
    }

    /// Waits up to `limit` for the server to exit; its status if it did.
    pub async fn exited_within(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let started = std::time::Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        None
    }

    /// Starts the server's `VmHWM` again from what is resident now, so a
    /// peak measured afterwards is the peak of what came after.
    pub fn reset_peak_memory(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5").unwrap();
    }

    /// A figure from `/proc/<pid>/status` in KiB: `VmRSS` (resident now)
    /// or `VmHWM` (the most it has been resident).
    pub fn memory_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with(&format!("{field}:"))).unwrap_or_else(|| panic!("no {field}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

/// Sets administrator `name`'s password with `capstan admin set-password`
/// over `data_dir`, as an operator does.
pub fn set_password(data_dir: &std::path::Path, name: &str, password: &str) {
    use std::io::Write;
    let mut child = Command::new(capstan_bin())
        .args(["admin", "set-password", "--name", name])
        .env("CAPSTAN_DATA_DIR", data_dir)
        .env_remove("CAPSTAN_CONFIG")
        .env_remove("CAPSTAN_DATABASE_URL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{password}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "set-password failed: {}", String::from_utf8_lossy(&out.stderr));
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
