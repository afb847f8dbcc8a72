//! An external MCP server set up on the Services page in a real Chromium,
//! against the server built with the MCP Python SDK: the newcomer fills in
//! the "Add an MCP server" card, Tests it and reads which tools the host
//! would offer as what, Saves it and finds it connected with its tools
//! after a reload (the token only as set), then Forgets it and its tools
//! are withdrawn.

use capstan::store::Db;
use capstan_tests::browser::Browser;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;

use crate::agent::external_mcp::{TOKEN, start_server};

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_adds_tests_and_forgets_an_mcp_server_in_the_console() {
    let host = TestHost::new();
    let (_server, url, _calls) = start_server(host.dir.path()).await;
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let runtime = app.caps().runtime().clone();
    let base = capstan_tests::api::serve(app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    capstan::http::session::set_password(&db, "newcomer", "correct horse battery").await.unwrap();

    let browser = Browser::start().await;
    browser.sign_in(&root, "newcomer", "correct horse battery").await;
    browser.click("nav button[data-tab=services]").await;
    browser.wait_text("#mcp-servers", "offered a card to add one", |t| t.contains("Add an MCP server")).await;

    // Tried before it is saved, with what the form holds.
    browser.fill("#mcp-new-name", "notes").await;
    browser.fill("#mcp-new-url", &url).await;
    browser.fill("#mcp-new-token", TOKEN).await;
    browser.fill("#mcp-new-classes", "lookup=read").await;
    browser.click("#mcp-new-test").await;
    let said = browser
        .wait_text("#mcp-new-result", "said what it would offer", |t| t.contains("mcp.notes.lookup (read)"))
        .await;
    assert!(said.contains("mcp.notes.add (execute)") && said.contains("not saved"), "{said}");
    assert!(runtime.snapshot().get("mcp.notes.lookup").is_none(), "a Test links nothing");

    // Saved: linked, and shown connected with its tools after a reload.
    browser.click("#mcp-new-save").await;
    browser.wait_text("#mcp-notes-result", "saved", |t| t.contains("Saved")).await;
    let started = std::time::Instant::now();
    while runtime.snapshot().get("mcp.notes.lookup").is_none() {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the saved server was not linked");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    browser.client.refresh().await.unwrap();
    browser.click("nav button[data-tab=services]").await;
    let card = browser
        .wait_text("fieldset[data-mcp-server='notes']", "showed it connected", |t| t.contains("✓ connected"))
        .await;
    assert!(card.contains("mcp.notes.lookup (read)") && card.contains("mcp.notes.hang (execute)"), "{card}");
    assert_eq!(browser.attr("#mcp-notes-token", "placeholder").await.as_deref(), Some("set — leave empty to keep"));
    assert_eq!(browser.prop("#mcp-notes-classes", "value").await.as_deref(), Some("lookup=read"));

    // Forgotten: the card goes, and so do its tools.
    browser.click("#mcp-notes-forget").await;
    browser.wait_text("#mcp-servers", "dropped its card", |t| !t.contains("notes (MCP)")).await;
    assert!(runtime.snapshot().get("mcp.notes.lookup").is_none(), "a forgotten server's tools are withdrawn");
    browser.close().await;
}
