//! Runs the `capstan` binary built for this test run.

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
