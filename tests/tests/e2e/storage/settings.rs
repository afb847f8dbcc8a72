//! Settings over HTTP: values with defaults, changes only from a console
//! session, all-or-nothing validation, and secrets that are write-only,
//! encrypted at rest under a master key kept 0600 in the data directory (or
//! given in `CAPSTAN_MASTER_KEY`), and never shown again. A change may be
//! the nested document, TMDB's connection (`metadata`) included, in the
//! same all-or-nothing change, every refusal naming the field as written.

use std::process::Command;

use capstan::runtime::EffectClass;
use capstan::settings::{MasterKey, Settings};
use capstan_tests::api::{Api, serve};
use capstan_tests::binary::capstan_bin;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::mock_tmdb::{Catalog, MockTmdb};
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
    assert!(env.svc.authz.switches().await.unwrap().automation_enabled);

    // One bad entry refuses the whole change; a bad value names its field.
    for (bad, field) in [
        (json!({"model.provider": "anthropic", "model.temperature": 1}), Some("model.temperature")),
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
    assert_eq!(
        read["groups"],
        json!(["Model", "Agent", "Budgets", "Automation", "Downloads", "Library", "Notifications", "Data"])
    );
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
    assert!(!env.svc.authz.switches().await.unwrap().automation_enabled);
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

const TMDB_KEY: &str = "tmdb-v3-key-settings-61aa";

/// What TMDB's stored connection is: its entry's body and ciphertext.
async fn tmdb_row(db: &capstan::store::Db) -> Option<(String, Option<String>)> {
    sqlx::query_as("SELECT body, secret FROM setup_entry WHERE section = 'service' AND name = 'tmdb'")
        .fetch_optional(&db.pool)
        .await
        .unwrap()
}

async fn the_nested_document_changes_settings_and_tmdb_together(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let api = Api::new(&base);
    let keyed = api.with_key(&capstan::http::keys::create(&env.db, "k", &[EffectClass::Read], "test").await.unwrap());
    let admin = api.signed_in(&env.db, "admin").await;
    let patch = |body: Value| {
        let admin = admin.clone();
        async move { admin.send(reqwest::Method::PATCH, "/settings", body).await }
    };
    let tmdb = MockTmdb::start(TMDB_KEY, Catalog::sample()).await;

    // A base URL alone sets nothing up while there is no key anywhere.
    let (status, answer) =
        patch(json!({"budget": {"agentMaxRunsPerDay": 3}, "metadata": {"tmdbBaseUrl": tmdb.base_url()}})).await;
    assert_eq!((status, answer["error"]["field"].as_str()), (422, Some("metadata.tmdbBaseUrl")), "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("TMDB_API_KEY"), "{answer}");
    assert_eq!(tmdb_row(&env.db).await, None);

    // The whole document, onto the registry; `fake` is the scripted model.
    let document = json!({
        "pi": {"provider": "fake", "baseUrl": "http://127.0.0.1:9/v1", "model": "m1", "thinkingLevel": "low",
               "contextBudget": 64000, "compaction": {"enabled": false, "thresholdRatio": 0.5}, "apiKey": API_KEY},
        "agent": {"maxToolCalls": 12, "maxDurationSec": 120, "autoInvestigateMode": "recover"},
        "budget": {"agentMaxRunsPerDay": 7, "agentMaxCostUsdPerDay": 2.5},
        "metadata": {"tmdbApiKey": TMDB_KEY, "tmdbBaseUrl": tmdb.base_url()},
    });
    let (status, after) = patch(document).await;
    assert_eq!(status, 200, "{after}");
    assert!(!after.to_string().contains(API_KEY) && !after.to_string().contains(TMDB_KEY), "{after}");
    let settings = keyed.json("/settings").await["settings"].clone();
    for (key, value) in [
        ("model.provider", json!("scripted")),
        ("model.base_url", json!("http://127.0.0.1:9/v1")),
        ("model.model", json!("m1")),
        ("model.thinking_level", json!("low")),
        ("model.context_budget", json!(64000)),
        ("model.compaction.enabled", json!(false)),
        ("model.compaction.threshold_ratio", json!(0.5)),
        ("model.api_key", json!({"set": true})),
        ("agent.max_tool_calls", json!(12)),
        ("agent.max_duration_sec", json!(120)),
        ("agent.auto_investigate_mode", json!("recover")),
        ("budget.max_runs_per_day", json!(7)),
        ("budget.max_cost_usd_per_day", json!(2.5)),
    ] {
        assert_eq!(settings[key], value, "{key}");
    }
    assert_eq!(env.app.settings().secret("model.api_key").await.unwrap().as_deref(), Some(API_KEY));
    // TMDB's connection is the Services page's, encrypted, in effect at once.
    let (body, secret) = tmdb_row(&env.db).await.expect("TMDB is set up");
    assert!(secret.as_deref().is_some_and(|s| s.starts_with("enc:v1:") && !s.contains(TMDB_KEY)), "{secret:?}");
    assert!(body.contains("apiKey"), "{body}");
    let (status, found) = admin.post("/setup/services/tmdb/test", Value::Null).await;
    assert_eq!((status, found["ok"].as_bool()), (200, Some(true)), "{found}");
    assert!(tmdb.received().iter().all(|r| r.query.get("api_key").map(String::as_str) == Some(TMDB_KEY)));

    // One bad name or value, anywhere, and nothing changes; the refusal
    // names the field as it was written.
    let stored = tmdb_row(&env.db).await;
    let mirror = "http://127.0.0.1:9/3";
    let fine = json!({"agentMaxRunsPerDay": 1});
    for (bad, field) in [
        (json!({"agent": {"maxToolCals": 5}, "budget": fine}), "agent.maxToolCals"),
        (json!({"agent": {"maxToolCalls": 0}, "budget": fine}), "agent.maxToolCalls"),
        (json!({"pi": {"compaction": {"thresholdRatio": 2}}, "budget": fine}), "pi.compaction.thresholdRatio"),
        (json!({"pi": {"provider": "skynet"}, "budget": fine}), "pi.provider"),
        (json!({"pi": {"script": "{\"scripts\": []}"}, "budget": fine}), "pi.script"),
        (json!({"model.provider": "anthropic", "pi": {"provider": "fake"}}), "pi.provider"),
        (json!({"model": {"provider": "fake"}, "budget": fine}), "model"),
        (json!({"budget": {"maxRunsPerDay": 1}}), "budget.maxRunsPerDay"),
        (json!({"budget": fine, "metadata": {"tmdbBaseUrl": "ftp://127.0.0.1/3"}}), "metadata.tmdbBaseUrl"),
        (json!({"budget": fine, "metadata": {"tmdbBaseUrl": mirror, "tmdbKey": "x"}}), "metadata.tmdbKey"),
        (json!({"budget": fine, "metadata": {"tmdbApiKey": "  "}}), "metadata.tmdbApiKey"),
        // A key is sent as typed, never read from the host's environment.
        (json!({"budget": fine, "metadata": {"tmdbApiKey": "env:CAPSTAN_MASTER_KEY"}}), "metadata.tmdbApiKey"),
        (json!({"agent": {"maxToolCalls": 3}, "metadata": {}}), "metadata"),
    ] {
        let (status, answer) = patch(bad.clone()).await;
        assert_eq!(status, 422, "{bad}: {answer}");
        assert_eq!(answer["error"]["field"].as_str(), Some(field), "{bad}: {answer}");
        let code = answer["error"]["code"].as_str().unwrap_or_default();
        assert!(matches!(code, "invalid_body" | "invalid_setting"), "{answer}");
    }
    assert_eq!(keyed.json("/settings").await["settings"], settings, "a refused change changed a setting");
    assert_eq!(tmdb_row(&env.db).await, stored, "a refused change changed TMDB");

    // A base URL alone keeps the stored key; `fake` is taken flat too.
    let (status, _) = patch(json!({"model.provider": "fake", "metadata": {"tmdbBaseUrl": mirror}})).await;
    assert_eq!(status, 200);
    let (body, secret) = tmdb_row(&env.db).await.unwrap();
    assert!(body.contains(mirror) && secret == stored.as_ref().unwrap().1, "{body}");
    assert_eq!(keyed.json("/settings").await["settings"]["model.provider"], "scripted");
}

async fn tmdb_set_in_the_configuration_file_is_the_files(backend: Backend) {
    let env = crate::media::titles::env(backend).await;
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.db, "admin").await;
    let change = json!({"budget": {"agentMaxRunsPerDay": 3}, "metadata": {"tmdbApiKey": "another-key"}});
    let (status, answer) = admin.send(reqwest::Method::PATCH, "/settings", change).await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["error"]["field"], "metadata.tmdbApiKey", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("capstan.toml"), "{answer}");
    assert_eq!(env.app.settings().get("budget.max_runs_per_day").await.unwrap(), json!(100), "nothing changed");
}

/// With TMDB's key in the environment, `metadata` may store the base URL
/// alone: the stored URL and the environment's key are what TMDB gets.
async fn a_stored_base_url_goes_with_the_environments_key(backend: Backend) {
    use capstan::config::TmdbEnvironment;
    let tmdb = MockTmdb::start(TMDB_KEY, Catalog::sample()).await;
    let mut host = capstan_tests::host::TestHost::new();
    host.config.tmdb_environment = TmdbEnvironment::from_lookup(|name| (name == "TMDB_API_KEY").then(|| "x".into()));
    let db = capstan::store::Db::open(&capstan_tests::db::fresh_url(backend, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let admin = Api::new(&serve(app.clone()).await).signed_in(&db, "admin").await;
    let (status, answer) =
        admin.send(reqwest::Method::PATCH, "/settings", json!({"metadata": {"tmdbBaseUrl": tmdb.base_url()}})).await;
    assert_eq!(status, 200, "{answer}");
    let (body, secret) = tmdb_row(&db).await.unwrap();
    assert!(body.contains(&tmdb.base_url()) && secret.is_none(), "{body}");
    let view = admin.json("/setup").await;
    let tmdb_view = view["services"].as_array().unwrap().iter().find(|s| s["name"] == "tmdb").unwrap().clone();
    assert_eq!(
        (tmdb_view["source"].as_str(), tmdb_view["fromEnvironment"].clone()),
        (Some("console"), json!(["TMDB_API_KEY"]))
    );
    let effective = app.setup().effective(app.caps().runtime().config()).await.unwrap();
    let service = &effective.services["tmdb"];
    assert_eq!(service.base_url, tmdb.base_url());
    assert!(matches!(&service.auth, capstan::config::Auth::Query { value, .. } if value.0 == "env:TMDB_API_KEY"));
}

both_backends!(
    the_nested_document_changes_settings_and_tmdb_together,
    tmdb_set_in_the_configuration_file_is_the_files,
    a_stored_base_url_goes_with_the_environments_key
);

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
