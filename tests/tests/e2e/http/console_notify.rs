//! The Services page's notification targets in a real Chromium, against
//! loopback targets that answer as Telegram's Bot API, a Discord webhook
//! and ntfy do: a newcomer connects a Telegram bot (a wrong chat says
//! Telegram's reason; the right one gets a test message, sent with the
//! form's values before anything is saved), pastes a Discord webhook's
//! whole URL, and is refused an ntfy topic ntfy would not take. Saving
//! gives each target a grant, shown by its state line; a send that fails
//! later shows its reason there, and a reload keeps the secrets as set.

use std::sync::Arc;
use std::time::Duration;

use capstan::notify::SEND_NOTIFICATIONS;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::api::Api;
use capstan_tests::console::{self, Walk};
use capstan_tests::host::TestHost;
use capstan_tests::mock_notify::MockNotify;
use reqwest::Method;
use serde_json::{Value, json};

const BOT: &str = "123456789:AAH-console_bot_token";
const CHAT: &str = "-1001234567890";
const HOOK_ID: &str = "112233445566778899";
const HOOK_TOKEN: &str = "console-hook_token_0123456789";

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_connects_telegram_and_discord_and_sees_how_they_stand() {
    let telegram = MockNotify::telegram(BOT, CHAT).await;
    let discord = MockNotify::discord(HOOK_ID, HOOK_TOKEN).await;
    let Walk { host: _host, db, app, base, browser } = console::signed_in(TestHost::new()).await;
    let mut worker = Worker::new(
        Tasks::new(db.clone()),
        "notify-test".into(),
        WorkerConfig { poll: Duration::from_millis(100), ..WorkerConfig::default() },
    );
    capstan::notify::register(&mut worker, app.services(), app.settings());
    tokio::spawn(Arc::new(worker).run(std::future::pending()));

    browser.click("nav button[data-tab=services]").await;
    browser
        .wait_text("#notify-targets", "listed the targets", |t| t.contains("Telegram bot") && t.contains("Discord"))
        .await;

    // Telegram, tried before it is saved: a chat the bot is not in says
    // Telegram's reason; the right chat gets a test message.
    browser.fill("#svc-telegram-url", &telegram.base_url()).await;
    browser.fill("#svc-telegram-secret", BOT).await;
    browser.fill("#svc-telegram-chat", "987654321").await;
    browser.click("#svc-telegram-test").await;
    browser.wait_text("#svc-telegram-result", "said why", |t| t.contains("chat not found")).await;
    browser.fill("#svc-telegram-chat", CHAT).await;
    browser.click("#svc-telegram-test").await;
    let said = browser.wait_text("#svc-telegram-result", "sent a test", |t| t.contains("test message was sent")).await;
    assert!(said.contains("form's values, not saved"), "{said}");
    let test = telegram.received().pop().unwrap();
    assert_eq!(test.path, format!("/bot{BOT}/sendMessage"));
    assert_eq!(test.body["chat_id"], CHAT);
    assert!(test.body["text"].as_str().unwrap().starts_with("Capstan: test"), "{:?}", test.body);
    browser.click("#svc-telegram-save").await;
    browser.wait_text("#svc-telegram-result", "saved with a grant", |t| t.contains("A grant")).await;
    browser
        .wait_text("fieldset[data-service=telegram] .target-state", "its state", |t| t.contains("Nothing told yet"))
        .await;

    // Discord: its whole webhook URL, pasted.
    let hook_url = format!("{}/api/webhooks/{HOOK_ID}/{HOOK_TOKEN}", discord.base_url());
    browser.fill("#svc-discord-secret", &hook_url).await;
    browser.click("#svc-discord-test").await;
    browser.wait_text("#svc-discord-result", "sent a test", |t| t.contains("test message was sent")).await;
    assert_eq!(discord.received().pop().unwrap().path, format!("/api/webhooks/{HOOK_ID}/{HOOK_TOKEN}"));
    browser.click("#svc-discord-save").await;
    browser.wait_text("#svc-discord-result", "saved", |t| t.starts_with("Saved.")).await;

    // ntfy: a topic ntfy would not take is refused with what it takes.
    browser.fill("#svc-ntfy-topic", "no spaces here").await;
    browser.click("#svc-ntfy-save").await;
    browser.wait_text("#svc-ntfy-result", "refused the topic", |t| t.contains("topic must be")).await;

    // The API says the same: both set up and granted, no secret shown.
    let api = Api::new(&base).signed_in(&db, "api-admin").await;
    let (status, stood) = api.send(Method::GET, "/notifications", Value::Null).await;
    assert_eq!(status, 200, "{stood}");
    let target =
        |id: &str| stood["targets"].as_array().unwrap().iter().find(|t| t["capabilityId"] == id).unwrap().clone();
    for id in ["notify.telegram", "notify.discord"] {
        assert_eq!((&target(id)["setUp"], &target(id)["granted"]), (&json!(true), &json!(true)), "{stood}");
    }
    assert_eq!(target("notify.ntfy")["setUp"], false);
    let (_, setup) = api.send(Method::GET, "/setup", Value::Null).await;
    assert!(!setup.to_string().contains(HOOK_TOKEN) && !setup.to_string().contains("console_bot_token"), "{setup}");

    // A send that fails later shows its reason under the target.
    capstan_tests::tasks::run_to_end(&db, SEND_NOTIFICATIONS, json!({})).await;
    let events = serde_json::Map::from_iter([("notifications.events".to_string(), json!("decision-waiting"))]);
    app.settings().update(&events).await.unwrap();
    let options = json!([{"id": "leave", "label": "Leave it", "action": "dismiss"}]);
    let evidence = json!({"problem": "a test"});
    app.services()
        .domain
        .open_decision("identity_ambiguous", Some("x"), &options, &evidence, "console-notify")
        .await
        .unwrap();
    discord.answer(&[500]);
    capstan_tests::tasks::run_to_end(&db, SEND_NOTIFICATIONS, json!({})).await;
    browser.client.refresh().await.unwrap();
    browser.click("nav button[data-tab=services]").await;
    let state = browser
        .wait_text("fieldset[data-service=discord] .target-state", "the failure", |t| t.contains("failed"))
        .await;
    assert!(state.contains("Discord answered 500"), "{state}");
    browser.wait_text("fieldset[data-service=telegram] .target-state", "told", |t| t.contains("Last told")).await;
    assert_eq!(browser.attr("#svc-discord-secret", "placeholder").await.as_deref(), Some("set — leave empty to keep"));
    browser.close().await;

    // Forgetting Telegram takes back the grant saving it made; Discord's stays.
    let (status, forgot) = api.send(Method::DELETE, "/setup/services/telegram", Value::Null).await;
    assert_eq!(status, 200, "{forgot}");
    assert_eq!(forgot["revokedGrants"].as_array().map(Vec::len), Some(1), "{forgot}");
    let (_, stood) = api.send(Method::GET, "/notifications", Value::Null).await;
    let granted = |id: &str| {
        stood["targets"].as_array().unwrap().iter().find(|t| t["capabilityId"] == id).unwrap()["granted"].clone()
    };
    assert_eq!((granted("notify.telegram"), granted("notify.discord")), (json!(false), json!(true)), "{stood}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_connects_jellyfin_and_plex_and_each_says_what_it_found() {
    use capstan_tests::mock_mediaserver::{Kind, MockMediaServer};
    let jellyfin = MockMediaServer::start(Kind::Jellyfin, "jf-console-key", "/unused").await;
    let plex = MockMediaServer::start(Kind::Plex, "plex-console-token", "/data/movies").await;
    let Walk { host: _host, db, app, base, browser } = console::signed_in(TestHost::new()).await;
    browser.click("nav button[data-tab=services]").await;
    browser.wait_text("#media-servers", "listed the servers", |t| t.contains("Jellyfin") && t.contains("Plex")).await;

    // Jellyfin: a wrong key is refused; the right one names the server.
    browser.fill("#svc-jellyfin-url", &jellyfin.base_url()).await;
    browser.fill("#svc-jellyfin-secret", "not-the-key").await;
    browser.click("#svc-jellyfin-test").await;
    browser.wait_text("#svc-jellyfin-result", "refused", |t| t.contains("refused the API key")).await;
    browser.fill("#svc-jellyfin-secret", "jf-console-key").await;
    browser.click("#svc-jellyfin-test").await;
    browser.wait_text("#svc-jellyfin-result", "found it", |t| t.contains("Jellyfin 10.10.3: Loopback")).await;
    browser.fill("#svc-jellyfin-library", "relative/path").await;
    browser.click("#svc-jellyfin-save").await;
    browser.wait_text("#svc-jellyfin-result", "refused the path", |t| t.contains("absolute path")).await;
    browser.fill("#svc-jellyfin-library", "/media/library").await;
    browser.click("#svc-jellyfin-save").await;
    browser.wait_text("#svc-jellyfin-result", "saved with a grant", |t| t.contains("ask it to rescan")).await;
    browser
        .wait_text("fieldset[data-service=jellyfin] .target-state", "its state", |t| {
            t.contains("Nothing rescanned yet")
        })
        .await;
    let settings = app.setup().effective(app.caps().runtime().config()).await.unwrap().settings;
    assert_eq!(settings["mediaserver.refresh"]["jellyfin_library"], "/media/library");

    // Plex: its libraries and their folders.
    browser.fill("#svc-plex-url", &plex.base_url()).await;
    browser.fill("#svc-plex-secret", "plex-console-token").await;
    browser.click("#svc-plex-test").await;
    let said = browser.wait_text("#svc-plex-result", "listed its libraries", |t| t.contains("its libraries")).await;
    assert!(said.contains("Movies (/data/movies)") && said.contains("TV Shows (/data/tv)"), "{said}");
    browser.click("#svc-plex-save").await;
    browser.wait_text("#svc-plex-result", "saved", |t| t.starts_with("Saved.")).await;
    browser.close().await;

    // One grant serves both servers: forgetting Jellyfin keeps it for
    // Plex, forgetting Plex too takes it back.
    let api = Api::new(&base).signed_in(&db, "api-admin").await;
    let granted = |stood: &Value| {
        let targets = stood["targets"].as_array().unwrap().clone();
        targets.iter().filter(|t| t["capabilityId"] == "mediaserver.refresh").all(|t| t["granted"] == true)
    };
    let (status, forgot) = api.send(Method::DELETE, "/setup/services/jellyfin", Value::Null).await;
    assert_eq!(status, 200, "{forgot}");
    assert!(forgot.get("revokedGrants").is_none(), "{forgot}");
    assert!(granted(&api.send(Method::GET, "/notifications", Value::Null).await.1));
    let (status, forgot) = api.send(Method::DELETE, "/setup/services/plex", Value::Null).await;
    assert_eq!(status, 200, "{forgot}");
    assert_eq!(forgot["revokedGrants"].as_array().map(Vec::len), Some(1), "{forgot}");
    let (_, stood) = api.send(Method::GET, "/notifications", Value::Null).await;
    let servers = stood["targets"].as_array().unwrap().iter().filter(|t| t["capabilityId"] == "mediaserver.refresh");
    assert!(servers.clone().count() == 3 && servers.into_iter().all(|t| t["granted"] == false), "{stood}");
}
