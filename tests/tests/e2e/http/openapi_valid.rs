//! The served OpenAPI document against a third-party validator:
//! `openapi-spec-validator` (from PyPI, installed by `scripts/setup.sh
//! --tests` into `target/test-tools/openapi-spec-validator`), which checks it
//! against the OpenAPI 3.1 schema and its rules (every path parameter
//! declared and required, operation ids unique, schemas valid JSON Schema).
//! It must report nothing; a failure shows what it reported.

use std::process::Stdio;

use capstan_tests::api::serve;
use capstan_tests::db::Backend;

use crate::storage::ledger::env;

#[tokio::test(flavor = "multi_thread")]
async fn a_third_party_validator_finds_the_openapi_document_valid() {
    let validator =
        capstan_tests::host::target_dir().join("test-tools/openapi-spec-validator/bin/openapi-spec-validator");
    assert!(validator.exists(), "{} is missing: run scripts/setup.sh --tests", validator.display());
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let resp = reqwest::get(format!("{base}/openapi.json")).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let doc = resp.bytes().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &doc).unwrap();

    let out = tokio::process::Command::new(&validator)
        .args(["--validation-errors", "all", "--subschema-errors", "all"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(out.status.success(), "openapi-spec-validator found problems with the served document:\n{text}");
    assert!(text.trim_end().ends_with(": OK"), "openapi-spec-validator said something unexpected:\n{text}");
}

/// The suites' client holds every answer to the document
/// (`capstan_tests::openapi`); here it is shown to catch what it should.
#[tokio::test(flavor = "multi_thread")]
async fn answers_the_document_does_not_describe_are_caught() {
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let origin = base.trim_end_matches("/api/v1");
    let doc = capstan_tests::openapi::Document::of(origin).await;
    let page = serde_json::json!({"decisions": [], "next": null});
    assert_eq!(doc.mismatch("GET", "/api/v1/decisions", 200, &page), None);
    let wrong = serde_json::json!({"decisions": "none", "next": null});
    let caught = doc.mismatch("GET", "/api/v1/decisions", 200, &wrong).expect("a wrong body is caught");
    assert!(caught.contains("/api/v1/decisions") && caught.contains("decisions"), "{caught}");
    let status = serde_json::json!({"status": "pondering"});
    let decision =
        doc.mismatch("GET", "/api/v1/decisions", 200, &serde_json::json!({"decisions": [status], "next": null}));
    assert!(decision.is_some(), "a decision with an unknown status is caught");
    let unlisted = doc.mismatch("GET", "/api/v1/decisions", 418, &serde_json::Value::Null).expect("418 is not listed");
    assert!(unlisted.contains("does not list"), "{unlisted}");
    // A parameter segment matches any id; a route the document lacks is
    // not the document's to judge.
    assert!(doc.mismatch("GET", "/api/v1/decisions/d1", 418, &serde_json::Value::Null).is_some());
    assert_eq!(doc.mismatch("GET", "/api/v1/no-such-route", 404, &serde_json::Value::Null), None);
}
