//! Settings over HTTP: values with defaults, changes only from a console
//! session, all-or-nothing validation, and secrets that are write-only,
//! encrypted at rest under a master key kept 0600 in the data directory (or
//! given in `CAPSTAN_MASTER_KEY`), and never shown again.

use std::process::Command;

use capstan::runtime::EffectClass;
use capstan::settings::{MasterKey, Settings};
use capstan_tests::api::{Api, serve};
use capstan_tests::binary::capstan_bin;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::ledger::env;

const API_KEY: &str = "sk-ant-test-0123456789abcdef";

async fn secrets_are_write_only_and_encrypted_at_rest(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let api = Api::new(&base);
    let keyed =
        api.with_key(&capstan::http::keys::create(&env.db, "k", &[EffectClass::Execute], "test").await.unwrap());
    let admin = api.signed_in(&env.db, "admin").await;
    let patch = |body: Value| {
        let admin = admin.clone();
        async move { admin.send(reqwest::Method::PATCH, "/settings", body).await }
    };

    let read = keyed.json("/settings").await;
    assert_eq!(read["settings"]["model.provider"], "scripted");
    assert_eq!(read["settings"]["automation.enabled"], true);
    assert_eq!(read["settings"]["model.api_key"], json!({"set": false}));
    assert_eq!(read["schema"]["model.api_key"]["schema"]["writeOnly"], true);

    // Keys cannot change settings.
    let change = json!({"automation.enabled": false});
    assert_eq!(keyed.send(reqwest::Method::PATCH, "/settings", change).await.0, 403);
    assert!(env.caps.authz().switches().await.unwrap().automation_enabled);

    // One bad entry refuses the whole change; a bad value names its field.
    for (bad, field) in [
        (json!({"model.provider": "anthropic", "model.temperature": 1}), None),
        (json!({"model.provider": "anthropic", "agent.max_tool_calls": "ten"}), Some("agent.max_tool_calls")),
        (json!({"model.provider": "anthropic", "agent.max_tool_calls": 2.5}), Some("agent.max_tool_calls")),
        (
            json!({"model.provider": "anthropic", "model.compaction.threshold_ratio": 1.5}),
            Some("model.compaction.threshold_ratio"),
        ),
        (json!({"model.provider": "skynet"}), Some("model.provider")),
        (json!({"model.base_url": "ftp://example.com"}), Some("model.base_url")),
        (json!({}), None),
    ] {
        let (status, body) = patch(bad.clone()).await;
        assert_eq!(status, 422, "{bad}");
        // The document's schema refuses most; the registry what it cannot say.
        let code = body["error"]["code"].as_str().unwrap_or_default();
        assert!(matches!(code, "invalid_body" | "invalid_setting"), "{body}");
        assert_eq!(body["error"]["field"].as_str(), field, "{bad}: {body}");
    }
    // What a form needs: each setting's label, area and bounds.
    let described = &read["schema"]["agent.max_tool_calls"];
    assert_eq!((described["label"].as_str(), described["group"].as_str()), (Some("Tool calls per run"), Some("Agent")));
    assert_eq!(
        (described["schema"]["minimum"].as_i64(), described["schema"]["maximum"].as_i64()),
        (Some(1), Some(10_000))
    );
    assert_eq!(read["groups"], json!(["Model", "Agent", "Budgets", "Automation", "Downloads", "Data"]));
    assert_eq!(patch(json!(["not", "an", "object"])).await.0, 422);
    let unchanged = keyed.json("/settings").await;
    assert_eq!(unchanged["settings"]["model.provider"], "scripted");

    let (status, after) =
        patch(json!({"model.provider": "anthropic", "model.api_key": API_KEY, "automation.enabled": false})).await;
    assert_eq!(status, 200);
    assert!(!after.to_string().contains(API_KEY), "the answer shows the secret: {after}");
    assert_eq!(after["settings"]["model.api_key"], json!({"set": true}));
    assert_eq!(after["settings"]["model.provider"], "anthropic");
    // The automation switch is the same setting the invoke path reads.
    assert!(!env.caps.authz().switches().await.unwrap().automation_enabled);
    let listed = keyed.json("/settings").await;
    assert!(!listed.to_string().contains(API_KEY));

    // At rest: ciphertext only, bound to its key, readable with the master key.
    let stored: String = sqlx::query_scalar("SELECT value FROM setting WHERE key = 'model.api_key'")
        .fetch_one(&env.db.pool)
        .await
        .unwrap();
    assert!(stored.starts_with("enc:v1:") && !stored.contains(API_KEY), "{stored}");
    assert_eq!(env.app.settings().secret("model.api_key").await.unwrap().as_deref(), Some(API_KEY));
    let master = env.app.settings().master_key().unwrap();
    assert!(master.decrypt("model.other", &stored).is_err(), "a ciphertext moved to another key must not decrypt");
    let stranger = MasterKey::from_text(&"ab".repeat(32)).unwrap();
    assert!(stranger.decrypt("model.api_key", &stored).is_err());

    // The key file is private, and a second process finds the same key.
    let data_dir = env.caps.runtime().config().data_dir();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data_dir.join("master.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let again = Settings::new(env.db.clone(), data_dir, capstan::agent::providers::scripted::Scripted::check);
    assert_eq!(again.secret("model.api_key").await.unwrap().as_deref(), Some(API_KEY));

    // null clears a secret and resets a value.
    patch(json!({"model.api_key": null, "model.provider": null})).await;
    let cleared = keyed.json("/settings").await;
    assert_eq!(cleared["settings"]["model.api_key"], json!({"set": false}));
    assert_eq!(cleared["settings"]["model.provider"], "scripted");
}

both_backends!(secrets_are_write_only_and_encrypted_at_rest);

#[test]
fn a_malformed_master_key_stops_the_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(capstan_bin())
        .args(["--data-dir", &dir.path().join("data").display().to_string()])
        .args(["invoke", "release.inspect", "--input", r#"{"name":"x"}"#])
        .env("CAPSTAN_MASTER_KEY", "too-short")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CAPSTAN_MASTER_KEY must be 32 bytes"), "{err}");
}
