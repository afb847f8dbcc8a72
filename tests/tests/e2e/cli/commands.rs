//! The `capstan` command line as an operator uses it, including
//! docs/writing-a-capability.md's steps with the example plugin: check it, drop it
//! into a running server's directory, call it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capstan_tests::binary::{capstan_bin, run, stderr, stdout};
use capstan_tests::components;
use capstan_tests::host::shared_cache;
use serde_json::Value;

/// A temporary data directory with the shared compile cache configured.
struct Setup {
    _dir: tempfile::TempDir,
    data: String,
    config: String,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let config = dir.path().join("capstan.toml");
    std::fs::write(&config, format!("cache_dir = {:?}\n", shared_cache().display().to_string())).unwrap();
    Setup { data, config: config.display().to_string(), _dir: dir }
}

impl Setup {
    fn run(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["--data-dir", &self.data, "--config", &self.config];
        all.extend_from_slice(args);
        run(&all)
    }
}

#[test]
fn invoke_prints_the_result_and_exits_by_status() {
    let s = setup();
    let ok =
        s.run(&["invoke", "release.inspect", "--input", r#"{"name":"The.Expanse.S02E05.1080p.WEB-DL.x264-GRP.mkv"}"#]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let text = stdout(&ok);
    assert!(text.starts_with("status: succeeded"), "{text}");
    assert!(text.contains("\"season\": 2") && text.contains("\"release_group\": \"GRP\""), "{text}");

    let bad_field = s.run(&["invoke", "release.inspect", "--input", r#"{"title":"x"}"#]);
    assert_eq!(bad_field.status.code(), Some(1));
    assert!(stdout(&bad_field).contains("invalid-input"));

    let bad_json = s.run(&["invoke", "release.inspect", "--input", "{nope"]);
    assert_eq!(bad_json.status.code(), Some(2));
    assert!(stderr(&bad_json).contains("input is not valid JSON"));

    let unknown = s.run(&["invoke", "no.such", "--input", "{}"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("no capability with id no.such"));

    let json = s.run(&["invoke", "release.inspect", "--input", r#"{"name":"Alien.1979.mkv"}"#, "--json"]);
    let report: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["status"], "succeeded");
    assert_eq!(report["output"]["year"], 1979);
}

#[test]
fn list_shows_digest_class_and_source() {
    let s = setup();
    let out = s.run(&["capabilities", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let inspect = list["capabilities"].as_array().unwrap().iter().find(|c| c["id"] == "release.inspect").unwrap();
    assert_eq!(inspect["label"], "read");
    assert_eq!(inspect["effect_class"], "read");
    assert_eq!(inspect["source"], "built-in");
    assert_eq!(inspect["status"], "active");
    assert_eq!(inspect["digest"].as_str().unwrap().len(), 64);
    let table = stdout(&s.run(&["capabilities", "list"]));
    assert!(table.lines().any(|l| l.starts_with("release.inspect")), "{table}");
}

#[test]
fn check_refuses_a_lying_component_and_bad_config_is_reported() {
    let s = setup();
    let out = s.run(&["capabilities", "check", components::LABEL_LIE]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("exceed its label"), "{}", stderr(&out));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[limits]\ndeadline_ms = 0\nfuel = 1\nmemory_bytes = 1\noutput_bytes = 1\n").unwrap();
    let out = run(&["--config", bad.to_str().unwrap(), "capabilities", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("deadline_ms"), "{}", stderr(&out));
    std::fs::write(&bad, "surprise = true\n").unwrap();
    let out = run(&["--config", bad.to_str().unwrap(), "capabilities", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown field"), "{}", stderr(&out));
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Polls the running server's capability list until `id` shows up.
fn wait_for_capability(base: &str, key: &str, id: &str, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(resp) = plain_http::get(&format!("{base}/api/v1/capabilities"), key)
            && resp.contains(&format!("\"id\":\"{id}\""))
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

mod plain_http {
    //! A tiny blocking GET over std, enough for polling the local server.
    use std::io::{Read, Write};

    pub fn get(url: &str, key: &str) -> std::io::Result<String> {
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let mut stream = std::net::TcpStream::connect(host)?;
        write!(stream, "GET /{path} HTTP/1.0\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n\r\n")?;
        let mut body = String::new();
        stream.read_to_string(&mut body)?;
        Ok(body)
    }
}

#[test]
fn the_example_plugin_follows_the_writing_a_capability_steps() {
    let s = setup();
    // Step: check the built component.
    let out = s.run(&["capabilities", "check", components::WORD_COUNT]);
    assert!(out.status.success(), "{}", stderr(&out));
    let checked: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(checked["descriptor"]["id"], "example.word-count");
    assert_eq!(checked["effect_class"], "read");

    // Step: drop it into the directory of a running server.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let child = Command::new(capstan_bin())
        .args(["--data-dir", &s.data, "--config", &s.config, "serve", "--listen", &listen])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Server(child);
    let base = format!("http://{listen}");
    let key = s.run(&["admin", "create-key", "--name", "readme", "--scope", "read"]);
    assert!(key.status.success(), "{}", stderr(&key));
    let key = stdout(&key).trim().to_string();
    assert!(key.starts_with("cap_"), "{key}");
    assert!(wait_for_capability(&base, &key, "release.inspect", Duration::from_secs(60)), "server did not come up");
    let plugins = std::path::Path::new(&s.data).join("capabilities");
    std::fs::copy(components::WORD_COUNT, plugins.join("word-count.wasm")).unwrap();
    assert!(wait_for_capability(&base, &key, "example.word-count", Duration::from_secs(5)), "plugin was not picked up");

    // Step: call it.
    let out = s.run(&["invoke", "example.word-count", "--input", r#"{"text":"one two three"}"#, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["output"]["words"], 3);

    // The key is listed, revoked from the command line, and the running
    // server refuses it within its second of caching.
    let id = key.strip_prefix("cap_").and_then(|rest| rest.split('_').next()).unwrap();
    let listed = stdout(&s.run(&["admin", "list-keys"]));
    assert!(listed.lines().any(|l| l.starts_with(id) && l.ends_with("active")), "{listed}");
    let revoked = s.run(&["admin", "revoke-key", id]);
    assert!(revoked.status.success(), "{}", stderr(&revoked));
    let refused = |limit: Duration| {
        let started = Instant::now();
        while started.elapsed() < limit {
            if plain_http::get(&format!("{base}/api/v1/capabilities"), &key).is_ok_and(|r| r.contains(" 401 ")) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    };
    assert!(refused(Duration::from_secs(10)), "the revoked key still works");
    assert!(stdout(&s.run(&["admin", "list-keys"])).lines().any(|l| l.starts_with(id) && l.ends_with("revoked")));
    assert_eq!(s.run(&["admin", "revoke-key", id]).status.code(), Some(2), "nothing left to revoke");
}

#[test]
fn accept_lets_a_held_replacement_take_effect() {
    let s = setup();
    let plugins = std::path::Path::new(&s.data).join("capabilities");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(components::PROBE_LITE, plugins.join("probe.wasm")).unwrap();
    // The first version is recorded once it has loaded. A list gives up
    // waiting for a compile after two seconds (and records nothing), so the
    // code is compiled into the cache first, as an operator would with
    // `check`, and the list asked until it shows the version active.
    let checked = s.run(&["capabilities", "check", plugins.join("probe.wasm").to_str().unwrap()]);
    assert!(checked.status.success(), "{}", stderr(&checked));
    let started = std::time::Instant::now();
    loop {
        let first = s.run(&["capabilities", "list", "--json"]);
        assert!(first.status.success(), "{}", stderr(&first));
        let listed: Value = serde_json::from_str(&stdout(&first)).unwrap();
        let active = listed["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == "test.probe" && r["status"] == "active");
        if active {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(240), "the first version never loaded: {listed}");
    }

    std::fs::copy(components::PROBE, plugins.join("probe.wasm")).unwrap();
    let listed: Value = serde_json::from_str(&stdout(&s.run(&["capabilities", "list", "--json"]))).unwrap();
    let rows = listed["capabilities"].as_array().unwrap();
    let probe_rows: Vec<&Value> = rows.iter().filter(|r| r["id"] == "test.probe").collect();
    assert_eq!(probe_rows.len(), 2, "the active old version and the held new one: {rows:?}");
    assert!(probe_rows.iter().any(|r| r["status"] == "active" && r["label"] == "read"));
    assert!(probe_rows.iter().any(|r| r["status"].as_str().unwrap().starts_with("held:") && r["label"] == "execute"));

    let nothing = s.run(&["capabilities", "accept", "release.inspect"]);
    assert_eq!(nothing.status.code(), Some(1));
    assert!(stderr(&nothing).contains("no replacement for release.inspect is waiting"), "{}", stderr(&nothing));

    let accepted = s.run(&["capabilities", "accept", "test.probe"]);
    assert!(accepted.status.success(), "{}", stderr(&accepted));
    let listed: Value = serde_json::from_str(&stdout(&s.run(&["capabilities", "list", "--json"]))).unwrap();
    let probe: Vec<&Value> =
        listed["capabilities"].as_array().unwrap().iter().filter(|r| r["id"] == "test.probe").collect();
    assert_eq!(probe.len(), 1);
    assert_eq!(probe[0]["label"], "execute");
    assert_eq!(probe[0]["status"], "active");
}

#[tokio::test(flavor = "multi_thread")]
async fn audit_verify_names_the_first_altered_event() {
    let s = setup();
    for name in ["Heat.1995.mkv", "Ronin.1998.mkv"] {
        let out = s.run(&["invoke", "release.inspect", "--input", &format!(r#"{{"name":"{name}"}}"#)]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let ok = s.run(&["audit", "verify"]);
    assert!(ok.status.success(), "{}", stdout(&ok));
    assert!(stdout(&ok).starts_with("audit chain intact"), "{}", stdout(&ok));

    let url = capstan::store::Db::default_url(std::path::Path::new(&s.data));
    let db = capstan::store::Db::connect(&url).await.unwrap();
    let seq: i64 = sqlx::query_scalar("SELECT MAX(seq) FROM audit_event WHERE action = 'capability.invoke'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE audit_event SET principal = 'someone else' WHERE seq = $1")
        .bind(seq)
        .execute(&db.pool)
        .await
        .unwrap();
    db.pool.close().await;
    let broken = s.run(&["audit", "verify"]);
    assert_eq!(broken.status.code(), Some(1));
    assert!(stdout(&broken).contains(&format!("broken at event {seq}")), "{}", stdout(&broken));
}

#[test]
fn set_password_reads_standard_input_and_refuses_short_ones() {
    use std::io::Write;
    let s = setup();
    let run_with_stdin = |password: &str| {
        let mut child = Command::new(capstan_bin())
            .args(["--data-dir", &s.data, "--config", &s.config, "admin", "set-password", "--name", "admin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
        child.wait_with_output().unwrap()
    };
    let short = run_with_stdin("short");
    assert_eq!(short.status.code(), Some(2));
    assert!(stderr(&short).contains("at least 10 characters"), "{}", stderr(&short));
    let ok = run_with_stdin("a long enough passphrase");
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("password set for admin"));
}

/// `--help` says what a newcomer needs without reading the docs: the
/// defaults (data folder, listen address, administrator name) and that
/// `admin set-password` reads the password from standard input.
#[test]
fn help_shows_the_defaults_and_how_a_password_is_given() {
    let said = |args: &[&str]| {
        let out = run(args);
        assert!(out.status.success(), "capstan {args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let top = said(&["--help"]);
    assert!(top.contains("default ./data") && top.contains("serve"), "{top}");
    let serve = said(&["serve", "--help"]);
    assert!(serve.contains("127.0.0.1:4380"), "{serve}");
    let password = said(&["admin", "set-password", "--help"]);
    assert!(password.contains("standard input") && password.contains("[default: admin]"), "{password}");
}
