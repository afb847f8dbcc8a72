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
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
