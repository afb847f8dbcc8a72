//! The console's forms in a real Chromium refuse nonsense where it is
//! typed. Settings are grouped by area under labels, each number field
//! carrying the server's bounds; a non-number, a fraction or a value out of
//! range is an error next to its field and nothing is sent; a refusal only
//! the server can make (a URL that is not http) is shown next to its field
//! too; errors clear once fixed; Default puts the default in; a set secret
//! can be cleared. The grants form offers only execute capabilities and
//! policy actions and holds budgets and expiry to the server's bounds.

use capstan_tests::browser::Browser;
use capstan_tests::db::Backend;
use fantoccini::Locator;
use serde_json::json;

use crate::media::titles::env;

const CALLS: &str = "input[name='agent.max_tool_calls']";
const RATIO: &str = "input[name='model.compaction.threshold_ratio']";
const BASE_URL: &str = "input[name='model.base_url']";
const API_KEY: &str = "input[name='model.api_key']";

/// The texts of every field error shown now.
async fn field_errors(browser: &Browser) -> Vec<String> {
    let mut texts = Vec::new();
    for element in browser.client.find_all(Locator::Css(".field-error")).await.unwrap() {
        texts.push(element.text().await.unwrap());
    }
    texts
}

/// Saves the settings form and waits for the error next to `field`.
async fn refused_next_to(browser: &Browser, field: &str) -> String {
    browser.click("#settings-save").await;
    browser.wait_text(&format!("{field} + .field-error"), "said why next to the field", |t| !t.is_empty()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn forms_refuse_nonsense_where_it_is_typed() {
    let env = env(Backend::Sqlite).await;
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    capstan::http::session::set_password(&env.db, "operator", "correct horse battery").await.unwrap();
    let browser = Browser::start().await;
    browser.sign_in(&root, "operator", "correct horse battery").await;

    // Grouped by area, labelled, bounded as the server bounds them.
    browser.click("nav button[data-tab=settings]").await;
    browser.wait_text("#settings", "listed the settings", |t| t.contains("Tool calls per run")).await;
    let mut areas = Vec::new();
    for legend in browser.client.find_all(Locator::Css("#settings legend")).await.unwrap() {
        areas.push(legend.text().await.unwrap());
    }
    assert_eq!(areas, ["Model", "Agent", "Budgets", "Automation", "Downloads", "Library", "Notifications", "Data"]);
    assert_eq!(browser.text("label[for='setting-agent.max_tool_calls']").await, "Tool calls per run");
    let bounds =
        (browser.attr(CALLS, "min").await, browser.attr(CALLS, "max").await, browser.attr(CALLS, "step").await);
    assert_eq!(bounds, (Some("1".into()), Some("10000".into()), Some("1".into())));
    let before = env.app.settings().all().await.unwrap();

    // Not a number, a fraction, too small, too large: each said next to the
    // field, and nothing is sent — not even the secret typed alongside.
    browser.fill(API_KEY, "sk-forms-test").await;
    for (typed, said) in [
        ("1e", "not a number"),
        ("2.5", "must be a whole number"),
        ("0", "must be at least 1"),
        ("10001", "must be at most 10000"),
    ] {
        browser.fill(CALLS, typed).await;
        assert_eq!(refused_next_to(&browser, CALLS).await, said, "typed {typed:?}");
        let general = browser.text("#settings-error").await;
        assert!(general.contains("nothing was changed"), "{general}");
        assert_eq!(field_errors(&browser).await.len(), 1, "old errors are gone");
    }
    assert_eq!(env.app.settings().all().await.unwrap(), before, "nothing was saved");

    // Fixed, its error goes; another field's bound is said next to it, and
    // Default puts that field's default back.
    browser.fill(CALLS, "12").await;
    browser.fill(RATIO, "0.99").await;
    assert_eq!(refused_next_to(&browser, RATIO).await, "must be at most 0.95");
    assert_eq!(field_errors(&browser).await.len(), 1, "the fixed field's error went");
    browser.click(".setting[data-key='model.compaction.threshold_ratio'] .to-default").await;
    assert_eq!(browser.prop(RATIO, "value").await.as_deref(), Some("0.8"));
    assert!(field_errors(&browser).await.is_empty(), "Default cleared the error");

    // What only the server can check is said next to its field too.
    browser.fill(BASE_URL, "ftp://example.com").await;
    let said = refused_next_to(&browser, BASE_URL).await;
    assert!(said.contains("http or https"), "{said}");
    assert_eq!(env.app.settings().all().await.unwrap(), before, "all or none");

    browser.fill(BASE_URL, "").await;
    browser.click("#settings-save").await;
    browser.wait_text("#settings-saved", "saved", |t| t.starts_with("Saved")).await;
    assert!(field_errors(&browser).await.is_empty());
    let saved = env.app.settings().all().await.unwrap();
    assert_eq!((saved["agent.max_tool_calls"].as_i64(), &saved["model.api_key"]), (Some(12), &json!({"set": true})));
    assert_eq!(saved["model.compaction.threshold_ratio"], 0.8);

    // A set secret can be cleared.
    browser.click(".clear-secret[data-for='model.api_key']").await;
    browser.click("#settings-save").await;
    browser.wait_text("#settings-saved", "cleared the key", |t| t.contains("model.api_key")).await;
    assert_eq!(env.app.settings().all().await.unwrap()["model.api_key"], json!({"set": false}));
    assert_eq!(browser.attr(API_KEY, "placeholder").await.as_deref(), Some("not set"));

    // Grants: only what a grant can name, within the server's bounds.
    browser.click("nav button[data-tab=grants]").await;
    let offered = browser.wait_text("#grant-action", "offered choices", |t| t.contains("library.want")).await;
    assert!(offered.contains("download.submit") && offered.contains("policy.acquisition"), "{offered}");
    for read in ["catalog.lookup", "release.inspect", "inventory.query"] {
        assert!(!offered.contains(read), "{read} needs no grant and is not offered: {offered}");
    }
    browser.wait_attr("#grant-days", "max", "365").await;
    assert_eq!(browser.attr("#grant-calls", "max").await.as_deref(), Some("100000"));
    browser.select("#grant-action", "library.want").await;
    browser.fill("#grant-calls", "0").await;
    browser.fill("#grant-days", "400").await;
    browser.click("#grant-create").await;
    let calls = browser.wait_text("#grant-calls + .field-error", "said why", |t| !t.is_empty()).await;
    assert_eq!(calls, "must be at least 1");
    assert_eq!(browser.text("#grant-days + .field-error").await, "must be at most 365");
    assert!(env.svc.authz.grants().await.unwrap().is_empty(), "nothing was granted");

    browser.fill("#grant-calls", "3").await;
    browser.fill("#grant-days", "7").await;
    browser.click("#grant-create").await;
    browser.wait_text("#grants", "listed the grant", |t| t.contains("library.want")).await;
    assert!(field_errors(&browser).await.is_empty());
    let grants = env.svc.authz.grants().await.unwrap();
    assert_eq!((grants.len(), grants[0].action.as_str(), grants[0].daily_invocations), (1, "library.want", 3));
    let week = 7 * 86_400_000;
    let ahead = grants[0].expires_at - capstan::store::now_ms();
    assert!(ahead > week - 600_000 && ahead <= week, "expires in a week: {ahead} ms");
    browser.close().await;
}
