//! The HTTP API against Schemathesis (from PyPI, installed by
//! `scripts/setup.sh --tests` into `target/test-tools/schemathesis`): every
//! operation of the served OpenAPI document, with positive and negative
//! data and the links Schemathesis infers between operations, with an API
//! key and a console session, with every check on (`tests/fuzz/
//! schemathesis.toml` says where an answer depends on more than the
//! request, and why). It must find nothing: no 5xx, no status the document
//! does not list, no request its schema allows refused, none it forbids
//! taken, no answer that is not JSON. Logging out is run last, alone, so
//! the session lasts the main run.
//!
//! `CAPSTAN_FUZZ_EXAMPLES` (default 30 per operation and mode) and
//! `CAPSTAN_FUZZ_SEED` (default a fixed one, so a failure can be replayed)
//! change the run.

use std::path::PathBuf;
use std::process::Stdio;

use capstan::runtime::EffectClass;
use capstan_tests::api::{login, serve};
use capstan_tests::db::Backend;

use crate::media::titles::env;

fn schemathesis_bin() -> PathBuf {
    let bin = capstan_tests::host::target_dir().join("test-tools/schemathesis/bin/schemathesis");
    assert!(bin.exists(), "{} is missing: run scripts/setup.sh --tests", bin.display());
    bin
}

/// Runs `schemathesis run` against `root` with `args`; its output (also
/// kept in `target/<report>`), and whether it found nothing.
async fn run(report: &str, root: &str, ids: &Seeded, args: &[&str]) -> (bool, String) {
    let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/schemathesis.toml");
    let examples = std::env::var("CAPSTAN_FUZZ_EXAMPLES").unwrap_or_else(|_| "30".into());
    let seed = std::env::var("CAPSTAN_FUZZ_SEED").unwrap_or_else(|_| "20261201".into());
    let reports = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(schemathesis_bin())
        .arg("--config-file")
        .arg(&config)
        .arg("--no-color")
        .arg("run")
        .arg(format!("{root}/api/v1/openapi.json"))
        .args(["--url", root, "--max-examples", &examples, "--seed", &seed])
        .args(args)
        .current_dir(reports.path())
        .env("CAPSTAN_KEY", &ids.key)
        .env("CAPSTAN_SESSION", &ids.session)
        .env("CAPSTAN_CSRF", &ids.csrf)
        .env("CAPSTAN_DECISION", &ids.decision)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // The whole report, warnings and all, where a reader can find it.
    let report = capstan_tests::host::target_dir().join(report);
    let _ = std::fs::write(&report, &text);
    println!("the full report: {}", report.display());
    (out.status.success(), text)
}

/// The callers Schemathesis is, and the records it is pointed at.
struct Seeded {
    key: String,
    session: String,
    csrf: String,
    /// An open decision, for the operations on one.
    decision: String,
}

/// Records for the operations that take an id to find: a wanted movie, a
/// plan-only run and its task, an open decision; and a grant letting the
/// key want titles. Answers the decision's id.
async fn seed(
    svc: &capstan::pipeline::Services,
    http: &reqwest::Client,
    base: &str,
    cookie: &str,
    csrf: &str,
) -> String {
    svc.authz.create_grant(&capstan_tests::grants::for_an_hour("library.want"), "admin:test").await.unwrap();
    for (path, body) in [
        ("/library/titles", serde_json::json!({"tmdbId": 693134, "kind": "movie", "quality": "2160p"})),
        ("/agent/runs", serde_json::json!({"goal": "What is in my library?", "mode": "plan_only"})),
    ] {
        let resp = http
            .post(format!("{base}{path}"))
            .header("cookie", cookie)
            .header("x-csrf-token", csrf)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 201, "{path}: {}", resp.text().await.unwrap());
    }
    let options = serde_json::json!([
        {"id": "again", "label": "Look again", "action": "reevaluate"},
        {"id": "leave", "label": "Leave it", "action": "dismiss"}
    ]);
    let evidence = serde_json::json!({"why": "seeded"});
    let opened = svc.domain.open_decision("download_stalled", Some("d1"), &options, &evidence, "download_stalled:d1");
    opened.await.unwrap().0.id
}

/// How many operations the served document lists.
async fn env_operations(http: &reqwest::Client, base: &str) -> usize {
    let doc: serde_json::Value = http.get(format!("{base}/openapi.json")).send().await.unwrap().json().await.unwrap();
    doc["paths"].as_object().unwrap().values().map(|item| item.as_object().unwrap().len()).sum()
}

/// The lines of Schemathesis' summary, for the test's own output.
fn summary(text: &str) -> String {
    text.lines().skip_while(|l| !l.contains("SUMMARY")).filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_wrong_with_the_api() {
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    let http = reqwest::Client::new();
    let key = capstan::http::keys::create(&env.db, "fuzz", &[EffectClass::Execute], "test").await.unwrap();
    let (cookie, csrf) = login(&env.db, &http, &base, "admin").await;
    let session = cookie.split_once('=').unwrap().1.to_string();
    let decision = seed(&env.svc, &http, &base, &cookie, &csrf).await;
    let ids = Seeded { key, session, csrf, decision };

    let (clean, text) = run("fuzz-report.txt", &root, &ids, &["--exclude-name", "DELETE /api/v1/session"]).await;
    println!("{}", summary(&text));
    assert!(clean, "Schemathesis found problems:\n{text}");
    // It reached every operation, with many cases.
    let documented = env_operations(&http, &base).await;
    assert_eq!(count_after(&text, "Tested:"), documented - 1, "every operation but logging out was tested");
    let generated = text.lines().find_map(|l| l.trim().split_once(" generated, ")?.0.parse::<usize>().ok());
    assert!(generated.unwrap_or(0) > 20 * documented, "{}", summary(&text));

    let (clean, text) = run("fuzz-report-session.txt", &root, &ids, &["--include-path", "/api/v1/session"]).await;
    println!("{}", summary(&text));
    assert!(clean, "Schemathesis found problems with the session:\n{text}");
}

/// The number after `label` in Schemathesis' summary (`Tested: 44`).
fn count_after(text: &str, label: &str) -> usize {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).find(|n| !n.is_empty())?.parse().ok())
        .unwrap_or(0)
}
