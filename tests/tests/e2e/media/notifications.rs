//! Notifications, on both backends, with a real qBittorrent and loopback
//! targets that answer as a webhook and an ntfy server do: once connected,
//! a target is told what happens from then on (not the history); a movie
//! imported by the pipeline is one message to each, the webhook's a JSON
//! body at its path, ntfy's a JSON publish to its topic with its token
//! added by the host; several decisions waiting make one message; a target
//! that fails (ntfy's rate limit) is told again on the next run, the
//! pipeline meanwhile going on, and a target no grant covers is not called
//! and says so.

use std::collections::BTreeMap;

use capstan::acquisition::EVALUATE_ACQUISITION;
use capstan::config::{Auth, CapabilityConfig, SecretRef, ServiceConfig};
use capstan::notify::SEND_NOTIFICATIONS;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::host::TestHost;
use capstan_tests::mock_notify::MockNotify;
use capstan_tests::mock_torznab::MockTorznab;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use serde_json::{Value, json};

use super::pipeline::{Env, await_import, start_with, wanted_movie};
use super::series_env::task_result;

const RELEASE: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX.mkv";

fn service(base_url: String, auth: Auth) -> ServiceConfig {
    ServiceConfig { base_url, auth, operations: Vec::new(), timeout_ms: 10_000, response_cap_bytes: 1 << 20 }
}

fn settings(pairs: &[(&str, &str)]) -> CapabilityConfig {
    let settings: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    CapabilityConfig { settings, ..Default::default() }
}

/// One run of the notifier: each target's outcome, by capability.
async fn notify(env: &Env) -> BTreeMap<String, Value> {
    let told = task_result(env, SEND_NOTIFICATIONS, json!({})).await;
    told["targets"].as_array().unwrap().iter().map(|t| (t["target"].as_str().unwrap().to_string(), t.clone())).collect()
}

async fn open_decision(env: &Env, subject: &str) {
    let options = json!([{"id": "leave", "label": "Leave it", "action": "dismiss"}]);
    let evidence = json!({"problem": "a test"});
    let key = format!("identity_ambiguous:{subject}");
    env.svc.domain.open_decision("identity_ambiguous", Some(subject), &options, &evidence, &key).await.unwrap();
}

async fn targets_are_told_what_happened_once_each_and_again_when_they_failed(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 51));
    let indexer = MockTorznab::offering_dune("indexer-key", "Loopback indexer", &dune).await;
    let (webhook, ntfy) = (MockNotify::webhook().await, MockNotify::ntfy().await);
    let mut host = TestHost::new();
    host.config.services.insert("webhook".into(), service(webhook.base_url(), Auth::None));
    let token =
        Auth::Header { name: "Authorization".into(), value: SecretRef("tk_notify".into()), prefix: "Bearer ".into() };
    host.config.services.insert("ntfy".into(), service(ntfy.base_url(), token));
    host.config.capabilities.insert("notify.webhook".into(), settings(&[("path", "/hooks/capstan")]));
    host.config.capabilities.insert("notify.ntfy".into(), settings(&[("topic", "capstan-home")]));
    let env = start_with(backend, &qbt, indexer, host).await;

    // Without a grant the targets are not called, and say what they need.
    open_decision(&env, "before-grant").await;
    let first = notify(&env).await;
    assert_eq!(first["notify.webhook"]["outcome"], "nothing-new", "a new target starts now: {first:?}");
    open_decision(&env, "no-grant").await;
    let refused = notify(&env).await;
    assert_eq!(refused["notify.webhook"]["outcome"], "failed", "{refused:?}");
    assert!(refused["notify.ntfy"]["reason"].as_str().unwrap().contains("grant"), "{refused:?}");
    assert!(webhook.received().is_empty() && ntfy.received().is_empty());
    capstan_tests::grants::allow_everything(&env.svc).await;
    let told = notify(&env).await;
    assert_eq!(told["notify.webhook"]["outcome"], "sent", "once granted, what waited is told: {told:?}");
    assert_eq!(webhook.received().len(), 1);
    assert_eq!(ntfy.received().len(), 1);

    // A movie goes through the pipeline: one message about its import.
    let slot = wanted_movie(&env).await;
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    let plan = swept["slots"][0]["planId"].as_str().unwrap();
    let download = env.svc.domain.download_for_plan(plan).await.unwrap().unwrap();
    await_import(&env, &download.id).await;
    let told = notify(&env).await;
    assert_eq!(
        (told["notify.webhook"]["outcome"].as_str(), told["notify.webhook"]["events"].as_i64()),
        (Some("sent"), Some(1))
    );
    let hook = webhook.received().pop().unwrap();
    assert_eq!(hook.path, "/hooks/capstan");
    assert_eq!(hook.body["title"], "Capstan: 1 imported", "grabbed is not among the events chosen by default");
    assert_eq!(hook.body["message"], "Imported: Dune: Part Two (2024) (1 file)");
    assert_eq!(hook.body["events"][0]["kind"], "imported");
    let published = ntfy.received().pop().unwrap();
    assert_eq!((published.path.as_str(), published.header("authorization")), ("/", Some("Bearer tk_notify")));
    assert_eq!(
        (published.body["topic"].as_str(), published.body["tags"].clone()),
        (Some("capstan-home"), json!(["inbox_tray"]))
    );

    // ntfy rate limits the next one: the webhook is told, ntfy is told on
    // the next run, both decisions in one message.
    ntfy.answer(&[429]);
    open_decision(&env, "one").await;
    open_decision(&env, "two").await;
    let told = notify(&env).await;
    assert_eq!(told["notify.webhook"]["outcome"], "sent");
    assert_eq!(told["notify.ntfy"]["outcome"], "failed", "{told:?}");
    assert!(told["notify.ntfy"]["reason"].as_str().unwrap().contains("30 s"), "{told:?}");
    let waiting = webhook.received().pop().unwrap();
    assert_eq!(waiting.body["title"], "Capstan: 2 decisions waiting");
    let lines = waiting.body["message"].as_str().unwrap();
    assert_eq!(lines, "Waiting for you: identity ambiguous (a test)\nWaiting for you: identity ambiguous (a test)");
    let state = capstan::notify::targets_of(&env.svc.db).await.unwrap();
    let ntfy_state = state.iter().find(|t| t.capability_id == "notify.ntfy").unwrap();
    assert_eq!(ntfy_state.failures, 1);
    assert!(ntfy_state.last_error.as_deref().unwrap().contains("rate limiting"), "{ntfy_state:?}");
    let sent_before = webhook.received().len();
    let told = notify(&env).await;
    assert_eq!(told["notify.ntfy"]["outcome"], "sent", "{told:?}");
    assert_ne!(told["notify.webhook"]["outcome"], "sent", "the webhook is not told twice: {told:?}");
    assert_eq!(webhook.received().len(), sent_before);
    let retried = ntfy.received().pop().unwrap();
    assert_eq!(retried.body["title"], "Capstan: 2 decisions waiting");
    assert_eq!(retried.body["priority"], 4);
}

both_backends!(targets_are_told_what_happened_once_each_and_again_when_they_failed);
