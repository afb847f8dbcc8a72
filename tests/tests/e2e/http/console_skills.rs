//! The Skills tab in a real Chromium, as an operator meets it: the
//! built-in skills listed and one read whole, a broken folder shown with
//! its reason, a skill written from the template — refused with the
//! reason beside the text while it names a tool that is not loaded, with
//! nothing stored — then saved into the skills folder, listed, and kept
//! from being overwritten unless replacing is asked for.

use capstan::store::Db;
use capstan_tests::browser::Browser;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;

const WRITTEN: &str = "---\nname: check-space\ndescription: \"Is the library's disk full?\"\ntools: [inventory.query, files.erase]\n---\n# Check the space\n\n1. Look at the inventory.\n";

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_reads_and_writes_skills_in_the_console() {
    let host = TestHost::new();
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let skills_dir = host.config.skills_dir();
    std::fs::create_dir_all(skills_dir.join("broken")).unwrap();
    std::fs::write(skills_dir.join("broken/SKILL.md"), "no front matter here").unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let base = capstan_tests::api::serve(app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    capstan::http::session::set_password(&db, "operator", "correct horse battery").await.unwrap();

    let browser = Browser::start().await;
    browser.sign_in(&root, "operator", "correct horse battery").await;
    browser.click("nav button[data-tab=skills]").await;
    let listed = browser.wait_text("#skills", "listed the built-ins", |t| t.contains("stuck-download")).await;
    for name in ["download-not-in-library", "failed-import", "wanted-not-fetched"] {
        assert!(listed.contains(name), "{listed}");
    }
    let refused = browser.wait_text("#skills-refused", "showed the broken folder", |t| t.contains("broken")).await;
    assert!(refused.contains("front matter"), "{refused}");

    // One skill whole.
    browser.click("tr[data-skill='failed-import'] button").await;
    let view = browser.wait_text("#skill-view", "showed the skill", |t| t.contains("A failed import")).await;
    assert!(view.contains("playbook for import_failed") && view.contains("built in"), "{view}");

    // Written with a tool that is not loaded: refused, said beside the
    // text, nothing stored.
    browser.click("#skill-new").await;
    browser.fill("#skill-name", "check-space").await;
    browser.fill("#skill-text", WRITTEN).await;
    browser.click("#skill-save").await;
    let said = browser.wait_text(".field-error", "said why it was refused", |t| !t.is_empty()).await;
    assert!(said.contains("not loaded: files.erase"), "{said}");
    assert!(!skills_dir.join("check-space").exists(), "nothing was stored");

    // Fixed and saved: stored in the skills folder and listed.
    browser.fill("#skill-text", &WRITTEN.replace(", files.erase", "")).await;
    browser.click("#skill-save").await;
    browser.wait_text("#skill-saved", "said it was saved", |t| t.contains("Saved as a new skill: check-space")).await;
    browser.wait_text("#skills", "listed the new skill", |t| t.contains("check-space")).await;
    let stored = std::fs::read_to_string(skills_dir.join("check-space/SKILL.md")).unwrap();
    assert!(stored.contains("# Check the space") && !stored.contains("files.erase"), "{stored}");

    // The same name again, without asking to replace: kept as it was.
    browser.click("#skill-new").await;
    browser.fill("#skill-name", "check-space").await;
    browser.fill("#skill-text", &WRITTEN.replace(", files.erase", "").replace("# Check", "# Another")).await;
    browser.click("#skill-save").await;
    let said = browser.wait_text(".field-error", "said the name is taken", |t| !t.is_empty()).await;
    assert!(said.contains("exists; ask to replace it"), "{said}");
    assert_eq!(std::fs::read_to_string(skills_dir.join("check-space/SKILL.md")).unwrap(), stored);
    let audit = app.audit().list(0, 1000).await.unwrap();
    assert!(audit.iter().any(|r| r.event.action == "skill.create" && r.event.subject == "check-space"));
    browser.close().await;
}
