//! A command starts with none of the host's descriptors above stderr: the
//! `capstan` binary is started with a file open on descriptor 7 that is not
//! closed on exec, as a parent process may leave one, and the command it
//! runs lists the descriptors it holds.

use std::process::Command;

use capstan_tests::binary::{capstan_bin, stderr, stdout};
use serde_json::Value;

use crate::cli::paths::workdir;

#[test]
fn a_commands_process_holds_no_descriptor_the_host_inherited() {
    let dir = workdir();
    let data = dir.path().join("data");
    let config = dir.path().join("capstan.toml");
    // The shell lists its own descriptors from a child, whose listing of
    // its own would show the folder it reads.
    std::fs::write(&config, "[commands.fds]\nprogram = \"/bin/sh\"\nargs = [\"-c\", \"ls /proc/$$/fd\"]\n").unwrap();
    let inherited = dir.path().join("inherited");
    let out = Command::new("/bin/sh")
        .args(["-c", "exec 7>\"$0\"; exec \"$@\""])
        .arg(&inherited)
        .arg(capstan_bin())
        .arg("--data-dir")
        .arg(&data)
        .arg("--config")
        .arg(&config)
        .args(["invoke", "system.command", "--grant", "execute", "--json"])
        .args(["--input", r#"{"action": "run", "command": "fds"}"#])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(inherited.exists(), "the host was started with the file open");
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["output"]["output"], "0\n1\n2\n", "{report}");
}
