//! `capstan capabilities test`: one component run in a throwaway host, as a
//! plugin author in any language runs it, reporting its result, every host
//! import it called and the files it changed, while the author's folders
//! stay as they were.

use std::process::Output;

use capstan_tests::binary::{run, stderr, stdout};
use capstan_tests::components;
use capstan_tests::languages::{self, Example};
use capstan_tests::mock_service::MockService;
use serde_json::{Value, json};

fn report(out: &Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(out), stderr(out)))
}

fn calls_of<'a>(report: &'a Value, interface: &str) -> Vec<&'a Value> {
    report["host_calls"].as_array().unwrap().iter().filter(|c| c["interface"] == interface).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_runs_against_copies_of_the_authors_files_and_every_host_call_is_shown() {
    let fixtures = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(fixtures.path().join("downloads")).unwrap();
    std::fs::write(fixtures.path().join("downloads/a.txt"), "hello").unwrap();
    let files = fixtures.path().to_str().unwrap();
    let input = json!({"action": "copy", "root": "downloads", "from": "a.txt", "to": "b.txt"}).to_string();
    let out = run(&["capabilities", "test", components::PROBE, "--files", files, "--input", &input]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let copied = report(&out);
    assert_eq!(copied["status"], "succeeded", "{copied}");
    assert_eq!(copied["files"]["created"], json!(["downloads:b.txt"]), "{copied}");
    let copy = calls_of(&copied, "capstan:host/files-write");
    assert_eq!(copy.len(), 1, "{copied}");
    assert_eq!(
        (&copy[0]["function"], &copy[0]["args"]),
        (&json!("copy"), &json!("downloads:a.txt -> downloads:b.txt"))
    );
    assert_eq!(copy[0]["answer"], "ok: 5 bytes");
    assert!(!fixtures.path().join("downloads/b.txt").exists(), "the author's folder was changed");

    // A request to the service the author names: shown as sent, with the
    // status the real server answered.
    let mock = MockService::start().await;
    let service = format!("echo={}", mock.base_url());
    let input = json!({"action": "read", "service": "echo", "path": "/echo", "query": [["q", "dune"]]}).to_string();
    let out = run(&["capabilities", "test", components::PROBE, "--service", &service, "--input", &input]);
    let read = report(&out);
    let sent = calls_of(&read, "capstan:host/outbound-read");
    assert_eq!(sent.len(), 1, "{read}");
    assert_eq!(sent[0]["args"], "echo GET /echo?q=dune (0 body bytes)", "{read}");
    assert!(sent[0]["answer"].as_str().unwrap().starts_with("ok: status 200"), "{read}");

    // An undeclared file root is the host's refusal, shown as answered.
    let input = json!({"action": "stat", "root": "library", "path": "x"}).to_string();
    let out = run(&["capabilities", "test", components::PROBE, "--input", &input]);
    let stat = report(&out);
    let answer = calls_of(&stat, "capstan:host/files-read")[0]["answer"].as_str().unwrap().to_string();
    assert!(answer.starts_with("invalid: no file root named \"library\""), "{stat}");

    // Bad usage changes nothing and says why.
    let out = run(&["capabilities", "test", components::PROBE, "--service", "echo", "--input", "{}"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--service NAME=URL expected"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn python_and_javascript_authors_test_with_the_same_command() {
    // An operator's data directory: its cache keeps the compiled component
    // between runs (a Python one compiles for seconds).
    let data = tempfile::tempdir().unwrap();
    let data = data.path().to_str().unwrap();
    for example in [Example::Python, Example::JavaScript] {
        let file = languages::build(example, "read-capability");
        let file = file.to_str().unwrap();
        let test = |setting: &str, input: &str| {
            run(&["--data-dir", data, "capabilities", "test", file, "--setting", setting, "--input", input])
        };
        let out = test("min_length=3", r#"{"text": "a bb ccc dddd"}"#);
        let ran = report(&out);
        assert_eq!(ran["outcome"]["output"], json!({"words": 2, "called_by": "cli"}), "{example:?}: {ran}");
        let logged = calls_of(&ran, "capstan:host/log");
        assert_eq!(logged.len(), 1, "{example:?}: {ran}");
        assert_eq!(logged[0]["args"], "debug: counted 2 words", "{example:?}");
        let settings = calls_of(&ran, "capstan:host/invocation");
        assert!(settings.iter().any(|c| c["function"] == "setting" && c["answer"] == "ok: Some(\"3\")"), "{ran}");

        let out = test("min_length=x", r#"{"text": "a"}"#);
        assert_eq!(out.status.code(), Some(1));
        let failed = report(&out);
        assert_eq!(failed["outcome"]["failure"]["kind"], "invalid-input", "{example:?}: {failed}");
    }
}
