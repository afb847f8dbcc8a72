//! Builds guest crates (capabilities, test components) for wasm32-wasip2
//! from a build script. Shared by `crates/builtins/build.rs` and `tests/build.rs`
//! through `#[path]`, so both build guests the same way.
//!
//! The inner cargo gets its own target directory, because the outer build
//! holds the lock on the outer one, and a cleaned environment, because the
//! outer build's flags (target, rustflags, wrappers) are for the host.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const GUEST_TARGET: &str = "wasm32-wasip2";

/// A guest crate found in a folder, by package name.
pub struct Guest {
    pub package: String,
}

impl Guest {
    /// The file name cargo gives the built component.
    pub fn artifact_name(&self) -> String {
        format!("{}.wasm", self.package.replace('-', "_"))
    }
}

/// Every crate directly under `folder` (each subfolder with a Cargo.toml).
pub fn guests_in(folder: &Path) -> Vec<Guest> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else { return found };
    for entry in entries.flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        let package = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = ").map(|v| v.trim_matches('"').to_string()))
            .unwrap_or_else(|| panic!("{} has no package name", manifest.display()));
        found.push(Guest { package });
    }
    found.sort_by(|a, b| a.package.cmp(&b.package));
    found
}

fn ensure_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let installed =
        sysroot.map(|root| Path::new(&root).join("lib/rustlib").join(GUEST_TARGET).exists()).unwrap_or(false);
    if installed {
        return;
    }
    let added =
        Command::new("rustup").args(["target", "add", GUEST_TARGET]).status().map(|s| s.success()).unwrap_or(false);
    if !added {
        panic!(
            "the Rust target {GUEST_TARGET} is missing and could not be installed automatically; \
             run: rustup target add {GUEST_TARGET}"
        );
    }
}

/// Environment variables the inner cargo may keep; everything else the outer
/// build set (CARGO_*, RUSTFLAGS, wrappers, target settings) is dropped.
const KEEP_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "TMPDIR",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_HOME",
    "CARGO_NET_OFFLINE",
    "CARGO_HTTP_TIMEOUT",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// Builds `guests` in release mode for wasm32-wasip2 and returns the path of
/// each built component, in the same order.
pub fn build(workspace: &Path, guests: &[Guest], target_dir: &Path) -> Vec<PathBuf> {
    if guests.is_empty() {
        return Vec::new();
    }
    ensure_target();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.env_clear();
    for key in KEEP_ENV {
        if let Ok(value) = std::env::var(key) {
            cmd.env(key, value);
        }
    }
    // Components are small and called often: whole-program optimisation
    // makes them smaller and faster, and costs seconds at build time only.
    cmd.env("CARGO_PROFILE_RELEASE_LTO", "fat").env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1");
    // The guests' macros run on this machine, apart from the host's build:
    // unoptimised, they build in a fraction of the time (the workspace
    // optimises build scripts only to share them with the binary).
    cmd.env("CARGO_PROFILE_RELEASE_BUILD_OVERRIDE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_BUILD_OVERRIDE_CODEGEN_UNITS", "256");
    cmd.current_dir(workspace).args(["build", "--release", "--target", GUEST_TARGET, "--target-dir"]).arg(target_dir);
    for guest in guests {
        cmd.args(["-p", &guest.package]);
    }
    let output = cmd.output().expect("could not run cargo for the guest crates");
    if !output.status.success() {
        panic!("building guest components for {GUEST_TARGET} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    }
    let out = target_dir.join(GUEST_TARGET).join("release");
    guests.iter().map(|g| out.join(g.artifact_name())).collect()
}

/// Tells cargo to re-run the build script when guest sources or the WIT change.
pub fn rerun_if_changed(workspace: &Path, folders: &[&Path]) {
    for path in [workspace.join("wit"), workspace.join("guest-sdk"), workspace.join("Cargo.lock")] {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    for folder in folders {
        println!("cargo:rerun-if-changed={}", folder.display());
    }
}

/// Where guest builds go: beside the outer target directory, never inside
/// its locked profile folders.
pub fn guest_target_dir(workspace: &Path) -> PathBuf {
    workspace.join("target").join("wasm-guests")
}
