//! Notifications, on both backends, with a real qBittorrent and loopback
//! targets that answer as a webhook and an ntfy server do: once connected,
//! a target is told what happens from then on (not the history); a movie
//! imported by the pipeline is one message to each, the webhook's a JSON
//! body at its path, ntfy's a JSON publish to its topic with its token
//! added by the host; several decisions waiting make one message; a target
//! that fails (ntfy's rate limit) is told again on the next run, the
//! pipeline meanwhile going on, and a target no grant covers is not called
//! and says so. Telegram's Bot API and a Discord webhook, each with its
//! secret in the URL's path, are told a grab, an import and an agent run
//! that finished, in one message each; Discord's rate limit is waited out.

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
    let token = Auth::Header {
        name: "Authorization".into(),
        value: SecretRef("tk_notify".into()),
        prefix: "Bearer ".into(),
        suffix: String::new(),
    };
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

/// Runs an agent run with `goal` to its end (the scripted model answers
/// at once), as a worker beside the pipeline's would.
async fn finish_a_run(env: &Env, goal: &str) {
    use capstan::agent::providers::scripted::Scripted;
    use capstan::agent::runs::{NewRun, RunMode};
    let model = Scripted::from_json(r#"{"scripts": [{"finalText": "Nothing needed doing."}]}"#).unwrap();
    let agent = std::sync::Arc::new(env.app.new_agent().with_provider(std::sync::Arc::new(model)));
    let config = capstan::tasks::WorkerConfig { poll: std::time::Duration::from_millis(50), ..Default::default() };
    let mut worker =
        capstan::tasks::Worker::new(capstan::tasks::Tasks::new(env.svc.db.clone()), "agent-test".into(), config);
    capstan::agent::task::register(&mut worker, &agent);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(std::sync::Arc::new(worker).run(async {
        let _ = stopped.await;
    }));
    let new = NewRun {
        goal: goal.into(),
        mode: RunMode::PlanOnly,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let run = agent.start(new).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !agent.runs().get(&run.id).await.unwrap().status.is_final() {
        assert!(std::time::Instant::now() < deadline, "the run did not end");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let _ = stop.send(());
    running.await.unwrap();
}

async fn telegram_and_discord_are_told_through_the_secret_in_their_url(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 52));
    let indexer = MockTorznab::offering_dune("indexer-key", "Loopback indexer", &dune).await;
    let (bot, chat) = ("123456789:AAH-loopback_bot_token", "-1001234567890");
    let (hook_id, hook_token) = ("112233445566778899", "hook-token_AbCdEf0123456789");
    let telegram = MockNotify::telegram(bot, chat).await;
    let discord = MockNotify::discord(hook_id, hook_token).await;
    let mut host = TestHost::new();
    let in_path = |value: String, prefix: &str| Auth::Path { value: SecretRef(value), prefix: prefix.into() };
    host.config.services.insert("telegram".into(), service(telegram.base_url(), in_path(bot.into(), "bot")));
    let hook = in_path(format!("{hook_id}/{hook_token}"), "");
    host.config.services.insert("discord".into(), service(format!("{}/api/webhooks", discord.base_url()), hook));
    host.config.capabilities.insert("notify.telegram".into(), settings(&[("chat_id", chat)]));
    let env = start_with(backend, &qbt, indexer, host).await;
    let events =
        serde_json::Map::from_iter([("notifications.events".to_string(), json!("grabbed,imported,run-finished"))]);
    env.app.settings().update(&events).await.unwrap();
    capstan_tests::grants::allow_everything(&env.svc).await;
    let first = notify(&env).await;
    assert_eq!(first["notify.telegram"]["outcome"], "nothing-new", "{first:?}");

    // A movie is grabbed and imported, and an agent run ends: one message each.
    let slot = wanted_movie(&env).await;
    let swept = task_result(&env, EVALUATE_ACQUISITION, json!({"slotId": slot.id})).await;
    let plan = swept["slots"][0]["planId"].as_str().unwrap();
    let download = env.svc.domain.download_for_plan(plan).await.unwrap().unwrap();
    await_import(&env, &download.id).await;
    finish_a_run(&env, "Check the library").await;
    discord.answer(&[429]);
    let told = notify(&env).await;
    assert_eq!(
        (told["notify.telegram"]["outcome"].as_str(), told["notify.telegram"]["events"].as_i64()),
        (Some("sent"), Some(3))
    );
    assert_eq!(told["notify.discord"]["outcome"], "failed", "{told:?}");
    assert!(told["notify.discord"]["reason"].as_str().unwrap().contains("rate limiting"), "{told:?}");
    let sent = telegram.received().pop().unwrap();
    assert_eq!(sent.path, format!("/bot{bot}/sendMessage"), "the host put the token in the path");
    assert_eq!(sent.body["chat_id"], chat);
    let text = sent.body["text"].as_str().unwrap();
    assert!(text.starts_with("Capstan: 1 grabbed, 1 imported, 1 agent run finished\n\n"), "{text}");
    for line in [
        "Grabbed: Dune: Part Two (2024)",
        "Imported: Dune: Part Two (2024) (1 file)",
        "Agent run finished: Check the library",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }

    // Discord is told on the next run, the same message, Telegram not again.
    let told = notify(&env).await;
    assert_eq!(told["notify.discord"]["outcome"], "sent", "{told:?}");
    assert_eq!(telegram.received().len(), 1);
    let posted = discord.received().pop().unwrap();
    assert_eq!(posted.path, format!("/api/webhooks/{hook_id}/{hook_token}"));
    assert_eq!(posted.body["embeds"][0]["title"], "Capstan: 1 grabbed, 1 imported, 1 agent run finished");
    assert_eq!(posted.body["allowed_mentions"], json!({"parse": []}));
    // What the ledger and the audit log keep of the sends holds no secret.
    let kept: Vec<String> = sqlx::query_scalar(
        "SELECT COALESCE(result, '') || COALESCE(error, '') FROM capability_invocation \
         WHERE capability_id IN ('notify.telegram', 'notify.discord') \
         UNION ALL SELECT COALESCE(input_summary, '') || COALESCE(detail, '') FROM audit_event",
    )
    .fetch_all(&env.svc.db.pool)
    .await
    .unwrap();
    assert!(kept.iter().any(|k| k.contains("messageId")), "the sends are in the ledger: {kept:?}");
    assert!(kept.iter().all(|k| !k.contains(hook_token) && !k.contains("loopback_bot_token")), "{kept:?}");
}

both_backends!(telegram_and_discord_are_told_through_the_secret_in_their_url);
