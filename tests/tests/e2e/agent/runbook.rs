//! The runbook's scripted fetch as `docs/runbook.md` writes it: the script
//! read from the page, set as `agent.fakeScript` in JSON through the
//! console's settings document, and a run started by an API key reads the
//! inventory, notes a plan and hands the drafted plan to a real
//! qBittorrent, ending `succeeded` once the import puts the title in the
//! library.

use std::time::Duration;

use capstan::pipeline::Origin;
use capstan::runtime::EffectClass;
use capstan_tests::api::Api;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use serde_json::{Value, json};

use super::media::{RELEASE, in_process_worker, start, torrents, wait_run};

/// The script between `cat > capstan-fetch.json <<'EOF'` and `EOF` on the
/// runbook's page, as a reader copies it.
fn runbook_script() -> Value {
    let page = include_str!("../../../../docs/runbook.md");
    let opening = "cat > capstan-fetch.json <<'EOF'\n";
    let start = page.find(opening).expect("the runbook writes capstan-fetch.json") + opening.len();
    let end = start + page[start..].find("\nEOF\n").expect("the script ends with EOF");
    serde_json::from_str(&page[start..end]).expect("the runbook's script is JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_runbooks_scripted_fetch_runs_as_written() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 41));
    let env = start(&qbt.base_url(), &qbt, &dune).await;
    // The plan the sweep would have drafted for the wanted title.
    let drafting = json!({"sourceReleaseId": env.release, "slotId": env.slot});
    let drafted = env.caps.invoke(&Origin::cli(EffectClass::Propose), "download.plan", &drafting).await.unwrap();
    assert!(drafted.output.is_some(), "{drafted:?}");

    // The settings as the runbook changes them.
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let console = Api::new(&base).signed_in(&env.svc.db, "admin").await;
    let document = json!({"pi": {"provider": "fake"}, "agent": {"fakeScript": runbook_script()}});
    let (status, body) = console.send(reqwest::Method::PATCH, "/settings", document).await;
    assert_eq!((status, &body["settings"]["model.provider"]), (200, &json!("scripted")), "{body}");

    capstan_tests::grants::allow_everything(&env.svc).await;
    let _moving = capstan_tests::qbittorrent::deliver_the_data(env.svc.clone(), true);
    in_process_worker(&env);
    let key = capstan::http::keys::create(&env.svc.db, "runbook", &[EffectClass::Execute], "admin:test").await.unwrap();
    let (status, run) = Api::new(&base)
        .with_key(&key)
        .post("/agent/runs", json!({"goal": "fetch what is wanted", "mode": "execute"}))
        .await;
    assert_eq!(status, 201, "{run}");
    let run = wait_run(&env, run["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    let said = run.final_text.clone().unwrap();
    assert!(said.starts_with("Handed Dune: Part Two to qBittorrent as download "), "{said}");
    assert!(!said.contains("(unknown)"), "every figure was filled from a result: {said}");
    let plan = serde_json::to_value(run.plan.unwrap()).unwrap();
    assert_eq!(plan["goal"], "Fetch Dune: Part Two");
    assert_eq!(torrents(&qbt).await.len(), 1, "one torrent handed over");
}
