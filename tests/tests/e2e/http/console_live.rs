//! The Agent tab follows a run live, in a real Chromium that reaches the
//! server through a proxy, with no reload. What it proves, by phase:
//!
//! 1. **The stream carries it.** A run started through the API and still
//!    queued (no worker yet) is selected; then every timer the page has is
//!    cleared, so nothing can poll, and a worker starts: the run's status
//!    (queued → succeeded, in the list and the detail) and its transcript
//!    change on screen. Only the event stream can have told the page.
//! 2. **Polling stands in when the stream drops.** The proxy ends the open
//!    stream and answers 502 to new ones, as a proxy that drops long-lived
//!    connections does; the page says updates are interrupted, and a
//!    message sent through the API still shows with the run's answer.
//! 3. **The stream comes back.** The proxy lets streams through again; the
//!    page says it is live, every timer is cleared once more, and the next
//!    message and answer show all the same.
//!
//! Each event is shown once: every line of the transcript appears exactly
//! once at the end.

use capstan::runtime::EffectClass;
use capstan_tests::api::Api;
use capstan_tests::browser::Browser;
use capstan_tests::db::Backend;
use capstan_tests::proxy::Proxy;
use serde_json::json;

use crate::agent::runs::{set, start_worker};
use crate::storage::ledger::env;

const SCRIPT: &str = r#"{"scripts": [
  {"match": ["second"], "steps": [], "finalText": "Answer two."},
  {"match": ["third"], "steps": [], "finalText": "Answer three."},
  {"steps": [], "finalText": "Answer one."}
]}"#;

/// Clears every timer the page has set: whatever the console would do on a
/// timer (polling) stops; what it does on an event goes on.
async fn stop_every_timer(browser: &Browser) {
    let script = "const last = setTimeout(() => {}, 0); \
                  for (let id = 1; id <= last; id++) { clearTimeout(id); clearInterval(id); } \
                  return last;";
    browser.client.execute(script, vec![]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_tab_follows_a_run_live_and_polls_while_the_stream_is_down() {
    let env = env(Backend::Sqlite).await;
    set(&env.app, &[("model.script", json!(SCRIPT))]).await;
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let key = capstan::http::keys::create(&env.db, "runner", &[EffectClass::Execute], "admin:test").await.unwrap();
    let api = Api::new(&base).with_key(&key);
    let proxy = Proxy::start(base.trim_end_matches("/api/v1")).await;
    capstan::http::session::set_password(&env.db, "bob", "correct horse battery").await.unwrap();

    // A run started through the API: queued, since no worker runs yet.
    let (status, run) =
        api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    let item = format!("#runs li[data-run-id='{id}']");

    let browser = Browser::start().await;
    browser.sign_in(&proxy.base_url(), "bob", "correct horse battery").await;
    browser.wait_text(&item, "listed the run", |t| t.contains("queued")).await;
    browser.click(&item).await;
    browser.wait_text("#run-status", "showed the run queued", |t| t == "queued").await;
    browser.wait_text("#live", "said the stream is live", |t| t.ends_with("Live")).await;

    // 1. Nothing can poll; the worker runs the run; the page shows it.
    stop_every_timer(&browser).await;
    start_worker(&env);
    browser.wait_text("#run-text", "showed the answer", |t| t.contains("Answer one.")).await;
    browser.wait_text("#run-status", "showed the run ended", |t| t == "succeeded").await;
    browser.wait_text(&item, "showed the run ended in the list", |t| t.contains("succeeded")).await;

    // 2. The stream is cut and refused: the page says so and polls.
    proxy.refuse("/api/v1/events");
    browser.wait_text("#live", "said updates are interrupted", |t| t.contains("interrupted")).await;
    let (status, _) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "a second look"})).await;
    assert_eq!(status, 200);
    browser.wait_text("#run-text", "showed the message", |t| t.contains("You: a second look")).await;
    browser.wait_text("#run-text", "showed the answer", |t| t.contains("Answer two.")).await;

    // 3. The stream is let through again: live, and nothing polls.
    proxy.admit("/api/v1/events");
    browser.wait_text("#live", "said the stream is live again", |t| t.ends_with("Live")).await;
    stop_every_timer(&browser).await;
    let (status, _) = api.post(&format!("/agent/runs/{id}/messages"), json!({"text": "a third look"})).await;
    assert_eq!(status, 200);
    browser.wait_text("#run-text", "showed the message", |t| t.contains("You: a third look")).await;
    let ended = |t: &str| t.contains("Answer three.") && t.trim_end().ends_with("succeeded");
    let transcript = browser.wait_text("#run-text", "showed the answer and the end", ended).await;
    assert_eq!(browser.text("#run-status").await, "succeeded");

    // Every event once: no line repeated across the three ways it came.
    for line in ["Answer one.", "You: a second look", "Answer two.", "You: a third look", "Answer three."] {
        assert_eq!(transcript.matches(line).count(), 1, "{line:?} shown once: {transcript}");
    }
    browser.close().await;
}
