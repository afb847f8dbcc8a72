//! The README's run command as a newcomer types it: the real binary run
//! from a working directory with the default data folder (`./data`) and
//! with a relative `--data-dir`, for `serve`, `invoke`, `capabilities list`
//! and `admin` alike, all finding the same state.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use capstan_tests::binary::{capstan_bin, stderr, stdout};
use capstan_tests::host::shared_cache;
use serde_json::Value;

/// `capstan` with `args` in `cwd`, logging at `log`, with no data-folder
/// setting from the outside.
fn capstan_in(cwd: &Path, args: &[&str], log: &str) -> Command {
    let mut command = Command::new(capstan_bin());
    command
        .current_dir(cwd)
        .args(args)
        .env("RUST_LOG", log)
        .env_remove("CAPSTAN_DATA_DIR")
        .env_remove("CAPSTAN_CAPABILITIES_DIR")
        .env_remove("CAPSTAN_CONFIG")
        .env_remove("CAPSTAN_DATABASE_URL");
    command
}

/// Runs `capstan` in `cwd` with no data-folder setting from the outside.
fn run_in(cwd: &Path, args: &[&str]) -> Output {
    capstan_in(cwd, args, "warn").output().unwrap()
}

/// A working directory whose default cache folder (`data/cache`) is the
/// suites' shared compile cache, so the built-ins compile once per machine
/// while the path the host resolves is still the relative default.
pub(crate) fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::create_dir_all(shared_cache()).unwrap();
    std::os::unix::fs::symlink(shared_cache(), dir.path().join("data/cache")).unwrap();
    dir
}

pub(crate) struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `serve` answers, failing with what it printed if it exits.
pub(crate) async fn wait_for_health(base: &str, server: &mut Child) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        if server.try_wait().unwrap().is_some() {
            let mut printed = String::new();
            std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut printed).unwrap();
            panic!("serve exited before answering: {printed}");
        }
        if let Ok(resp) = reqwest::get(format!("{base}/api/v1/health")).await
            && resp.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the server at {base} did not come up");
}

#[test]
fn list_and_invoke_work_with_the_default_data_folder() {
    let dir = workdir();
    let list = run_in(dir.path(), &["capabilities", "list", "--json"]);
    assert!(list.status.success(), "{}", stderr(&list));
    let listed: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert!(listed["capabilities"].as_array().unwrap().iter().any(|c| c["id"] == "release.inspect"), "{listed}");

    let out = run_in(dir.path(), &["invoke", "release.inspect", "--input", r#"{"name":"Heat.1995.1080p.mkv"}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("status: succeeded"), "{}", stdout(&out));
    // The state went where the README says: ./data.
    assert!(dir.path().join("data/capstan.db").is_file());
    assert!(dir.path().join("data/capabilities").is_dir());
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_admin_and_invoke_share_a_relative_data_dir() {
    let dir = workdir();
    let cwd = dir.path();
    // A key made with `--data-dir data` ...
    let key = run_in(cwd, &["--data-dir", "data", "admin", "create-key", "--name", "newcomer", "--scope", "read"]);
    assert!(key.status.success(), "{}", stderr(&key));
    let key = stdout(&key).trim().to_string();
    assert!(key.starts_with("cap_"), "{key}");

    // ... is known to a server started the way scripts/run.sh starts it.
    let listen =
        format!("127.0.0.1:{}", std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
    let child = capstan_in(cwd, &["--data-dir", "data", "serve", "--listen", &listen], "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Server(child);
    let base = format!("http://{listen}");
    wait_for_health(&base, &mut server.0).await;
    let client = reqwest::Client::new();
    let caps: Value =
        client.get(format!("{base}/api/v1/capabilities")).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    assert!(caps.to_string().contains("\"release.inspect\""), "{caps}");
    let resp = client
        .post(format!("{base}/api/v1/capabilities/release.inspect/invoke"))
        .bearer_auth(&key)
        .json(&serde_json::json!({"input": {"name": "Ronin.1998.720p.mkv"}}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let report: Value = resp.json().await.unwrap();
    assert_eq!(report["output"]["year"], 1998, "{report}");

    // The command line, run from the same folder with `./data` spelled
    // another way, sees the server's invocation in the same audit chain.
    let verify = run_in(cwd, &["--data-dir", "./data", "audit", "verify"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
    let listed = run_in(cwd, &["capabilities", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    // A config file naming relative folders resolves them against the
    // working directory too.
    std::fs::write(cwd.join("capstan.toml"), "data_dir = \"data\"\n").unwrap();
    let via_config = run_in(
        cwd,
        &["--config", "capstan.toml", "invoke", "release.inspect", "--input", r#"{"name":"Alien.1979.mkv"}"#],
    );
    assert!(via_config.status.success(), "{}", stderr(&via_config));
    assert!(!cwd.join("data/data").exists(), "a relative path was resolved twice");
}

/// A fresh data folder loads the built-ins from the code compiled with the
/// binary: nothing is compiled, and the start says where they came from.
#[test]
fn a_fresh_data_folder_loads_the_built_ins_compiled_with_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let out = capstan_in(dir.path(), &["capabilities", "list"], "info").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(!log.contains("compiling built-in components"), "{log}");
    let said = log
        .lines()
        .find(|l| l.contains("built-in components compiled with the binary"))
        .unwrap_or_else(|| panic!("{log}"));
    let count = capstan::BUILT_INS.components.len();
    assert!(said.contains(&format!("count={count}")), "{said}");
    assert!(stdout(&out).contains("release.inspect"), "{}", stdout(&out));
    // No snapshot was made on this machine.
    assert!(!dir.path().join("data/cache/preinit").exists(), "a built-in was pre-initialised at start");
}

/// A start that compiles the built-ins itself (here because the config
/// asks; also when the binary's code does not fit the machine) says so
/// first, with a count, then how far it got, and keeps each in the cache.
#[test]
fn a_start_with_built_ins_to_compile_says_how_many_and_how_far() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("capstan.toml"), "compile_builtins = true\n").unwrap();
    let mut child = capstan_in(dir.path(), &["--config", "capstan.toml", "capabilities", "list"], "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let count = capstan::BUILT_INS.components.len();
    let mut log = Vec::new();
    // Compiling all of them would take the suite a minute: the first one
    // done is enough.
    for line in lines {
        let line = line.unwrap();
        let done = line.contains("compiled a built-in component");
        log.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let log = log.join("\n");
    let said = log.lines().find(|l| l.contains("compiling built-in components")).unwrap_or_else(|| panic!("{log}"));
    assert!(said.contains(&format!("count={count}")), "{said}");
    assert!(
        log.lines().any(|l| l.contains("compiled a built-in component") && l.contains(&format!("done=1 of={count}"))),
        "{log}"
    );
    let (_, first, _) = capstan::BUILT_INS.components[0];
    let kept = dir.path().join("data/cache/preinit").join(format!("{}.wasm", capstan::runtime::loader::digest(first)));
    assert!(kept.exists(), "compiled into the cache for next time");
}
