//! Auto-recover against a real qbittorrent-nox, on both backends, with a
//! scripted model: a finished download whose files went missing (and came
//! back) opens `download_failed`; without a grant the run only
//! investigates and the decision says recovery was degraded; within a grant
//! for `download.recheck` the run rechecks it, a try to change the source
//! is refused, and the system closes the decision only once qBittorrent
//! shows the download complete again (`verified: true`); a recovery run
//! that runs out of tool calls before acting hands the decision back at
//! once; the same root cause past `agent.investigate_max_attempts` (2)
//! goes straight to a human without a model call.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capstan::domain::Decision;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use serde_json::json;

use super::download::{Env, serve_torrent_files, start_with_qbittorrent_on, torrents, wait_for_status};
use super::trouble::{submit, sync_until, worker};

const RECOVERING: &str = r#"{"scripts": [{
  "match": ["investigate"],
  "steps": [
    {"text": "Looking.", "tools": [{"name": "task.inspect", "input": {}}, {"name": "download.status", "input": {}}]},
    {"tools": [
      {"name": "download.plan", "input": {"sourceReleaseId": "another", "slotId": "any"}},
      {"name": "download.recheck", "input": {"downloadTaskId": "{{download.status.downloads.0.downloadTaskId}}", "action": "recheck"}}
    ]}
  ],
  "finalText": "The files were back on disk; a recheck should bring the download home."
}]}"#;

async fn settings(env: &Env, pairs: serde_json::Value) {
    env.app.settings().update(pairs.as_object().unwrap()).await.unwrap();
}

/// The files go while qBittorrent is down and come back after it has
/// flagged them missing (or forgotten it had them): only a recheck mends
/// that.
async fn lose_and_restore(env: &Env, qbt: &mut QBittorrent, task: &str, file: &std::path::Path, contents: &[u8]) {
    qbt.stop().await;
    std::fs::remove_file(file).unwrap();
    qbt.start_again().await;
    wait_for_status(env, task, "seen without its files", |d| {
        d["status"] == "missing" || (d["status"] == "stalled" && d["progress"] == 0.0)
    })
    .await;
    std::fs::write(file, contents).unwrap();
}

/// Waits until decision `id` satisfies `wanted`.
async fn until(env: &Env, id: &str, what: &str, wanted: impl Fn(&Decision) -> bool) -> Decision {
    let started = Instant::now();
    loop {
        let d = env.domain().decision(id).await.unwrap();
        if wanted(&d) {
            return d;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "decision {id} never {what}: {d:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn a_download_that_lost_its_files_is_recovered_within_a_grant_and_verified(backend: Backend) {
    let mut qbt = QBittorrent::start().await;
    let contents = torrent::payload(70_000, 51);
    let dune = torrent::single_file(&qbt.downloads(), "Dune.2021.1080p.WEB-DL.x264.mkv", &contents);
    let indexer = serve_torrent_files(BTreeMap::from([("dune.torrent".to_string(), dune.bytes.clone())])).await;
    let env = start_with_qbittorrent_on(backend, &qbt, &indexer).await;
    settings(
        &env,
        json!({"model.script": RECOVERING, "agent.auto_investigate": true, "agent.auto_investigate_mode": "recover",
               "agent.recover_verify_sec": 60, "agent.goal_poll_sec": 1}),
    )
    .await;
    worker(&env);
    let task = submit(&env, &dune.name, &dune.info_hash, format!("{indexer}/download/dune.torrent")).await;
    wait_for_status(&env, &task, "completed", |d| d["status"] == "completed").await;
    let root = format!("download_failed:{task}");
    sync_until(&env, &root, "the download recorded completed", |_| true).await;
    let plans = env.domain().plans(None, None, 100).await.unwrap().len();

    // No grant: the run only investigates, and the decision says why.
    lose_and_restore(&env, &mut qbt, &task, &dune.files[0], &contents).await;
    let first = sync_until(&env, &root, "a download_failed decision", |d| !d.is_empty()).await.remove(0);
    let first =
        until(&env, &first.id, "came back to a human", |d| d.status == capstan::domain::DecisionStatus::AwaitingUser)
            .await;
    assert_eq!(first.evidence["autoRecover"]["degraded"], true, "{:?}", first.evidence);
    assert!(first.evidence["autoRecover"]["suggestion"].as_str().unwrap().contains("grant"));
    assert!(first.evidence["agentInvestigation"]["conclusion"].is_string());
    assert_eq!(first.options[0]["label"], "Force recheck", "a human can still fix it");
    let run = first.evidence["agentInvestigation"]["runId"].as_str().unwrap();
    let calls = capstan::ledger::for_run(&env.svc.db, run).await.unwrap();
    assert!(calls.is_empty(), "the investigation wrote nothing: {calls:?}");
    let status = wait_for_status(&env, &task, "read", |_| true).await;
    assert_ne!(status["status"], "completed", "nothing was rechecked without a grant: {status}");

    // A human fixes that one; then, within a grant, the next occurrence is
    // recovered by itself and verified from qBittorrent.
    let answered = capstan::domain::Answer::Resolve { option_id: "recheck" };
    env.domain().answer_decision(&first.id, &answered, "admin:alice").await.unwrap();
    wait_for_status(&env, &task, "completed by the human's recheck", |d| d["status"] == "completed").await;
    sync_until(&env, &root, "the download recorded completed again", |_| true).await;
    let grant = capstan_tests::grants::for_an_hour("download.recheck");
    env.svc.authz.create_grant(&grant, "admin:alice").await.unwrap();
    lose_and_restore(&env, &mut qbt, &task, &dune.files[0], &contents).await;
    let second = sync_until(&env, &root, "a second occurrence", |d| d.len() == 2).await.remove(1);
    let second = until(&env, &second.id, "was closed", |d| d.status == capstan::domain::DecisionStatus::Resolved).await;
    assert_eq!(second.resolved_by.as_deref(), Some("system:auto-recover"));
    let execution = &second.resolution.as_ref().unwrap()["execution"];
    assert_eq!((execution["kind"].as_str(), execution["verified"].as_bool()), (Some("agent_recover"), Some(true)));
    // Verified as soon as qBittorrent has the download going again
    // (checking counts as queued); it goes on to complete.
    let seen = execution["facts"]["client"]["status"].as_str().unwrap_or_default();
    assert!(["queued", "downloading", "completed"].contains(&seen), "{execution}");
    wait_for_status(&env, &task, "completed after the recovery", |d| d["status"] == "completed").await;
    assert_eq!(second.evidence["autoRecover"]["attempt"], 1);
    let run = second.evidence["agentInvestigation"]["runId"].as_str().unwrap();
    let calls = capstan::ledger::for_run(&env.svc.db, run).await.unwrap();
    let made: Vec<&str> = calls.iter().map(|c| c.capability_id.as_str()).collect();
    assert_eq!(made, ["download.recheck"], "the recheck, and no change of source, was made");
    let events = env.app.agent().runs().run_events(run, 0, 1000).await.unwrap();
    let ended = |name: &str| {
        events
            .iter()
            .find(|e| e.kind == "agent.tool_call" && e.payload["name"] == name && e.payload["phase"] != "started")
            .map(|e| e.payload["phase"].as_str().unwrap().to_string())
    };
    assert_eq!(ended("task.inspect").as_deref(), Some("finished"), "it looked at the tasks first");
    assert_eq!(ended("download.plan").as_deref(), Some("rejected"), "the change of source was tool_call_rejected");
    let recovered = env.app.agent().runs().get(run).await.unwrap();
    let allowed = recovered.capability_allowlist.clone().unwrap_or_default();
    assert!(allowed.iter().any(|a| a == "download.recheck"), "{allowed:?}");
    assert!(
        !allowed.iter().any(|a| a == "download.replace"),
        "giving the release up needs a grant naming download.replace: {allowed:?}"
    );
    let said = recovered.final_text.unwrap();
    // It says what it verified, when it verified it.
    let verified = format!("Recovered (verified): qBittorrent shows the download {seen}.");
    assert!(said.starts_with(&verified), "{said}");
    assert!(said.contains("The model said (unverified): The files were back on disk"), "{said}");
    let report = env.domain().artifact(&recovered.report_id.unwrap()).await.unwrap();
    assert_eq!(report.body["recovery"]["verified"], true);
    assert_eq!(report.body["modelFinalText"]["verified"], false);
    assert_eq!(env.domain().plans(None, None, 100).await.unwrap().len(), plans, "the source was never changed");
    assert_eq!(torrents(&qbt, None).await.len(), 1);

    // The second attempt (agent.investigate_max_attempts is 2 by default)
    // runs out of tool calls before its recheck: nothing was recovered,
    // and a human is asked at once, not after the verification window.
    wait_for_status(&env, &task, "completed after the recovery", |d| d["status"] == "completed").await;
    sync_until(&env, &root, "the recovery recorded", |_| true).await;
    assert_eq!(env.domain().download(&task).await.unwrap().status, capstan::domain::DownloadStatus::Completed);
    settings(&env, json!({"agent.investigate_max_tool_calls": 1})).await;
    lose_and_restore(&env, &mut qbt, &task, &dune.files[0], &contents).await;
    let third = sync_until(&env, &root, "a third occurrence", |d| d.len() == 3).await.remove(2);
    let third =
        until(&env, &third.id, "came back to a human", |d| d.status == capstan::domain::DecisionStatus::AwaitingUser)
            .await;
    let recover = &third.evidence["autoRecover"];
    assert_eq!(recover["attempt"], 2, "{:?}", third.evidence);
    assert!(recover["outcome"].as_str().unwrap().contains("budget_exceeded"), "{recover}");
    let run = third.evidence["agentInvestigation"]["runId"].as_str().unwrap();
    assert!(capstan::ledger::for_run(&env.svc.db, run).await.unwrap().is_empty(), "it rechecked nothing");
    let unrecovered = env.app.agent().runs().get(run).await.unwrap();
    assert_eq!(unrecovered.status.as_str(), "budget_exceeded");
    let said = unrecovered.final_text.unwrap_or_default();
    assert!(said.starts_with("Not recovered: the run ended budget_exceeded without a recovery call"), "{said}");

    // A human rechecks; past the attempts allowed, the next occurrence goes
    // to a human and no model is called.
    env.domain().answer_decision(&third.id, &answered, "admin:alice").await.unwrap();
    wait_for_status(&env, &task, "completed by the human's recheck", |d| d["status"] == "completed").await;
    sync_until(&env, &root, "the download recorded completed again", |_| true).await;
    assert_eq!(env.domain().download(&task).await.unwrap().status, capstan::domain::DownloadStatus::Completed);
    lose_and_restore(&env, &mut qbt, &task, &dune.files[0], &contents).await;
    let fourth = sync_until(&env, &root, "a fourth occurrence", |d| d.len() == 4).await.remove(3);
    let fourth =
        until(&env, &fourth.id, "came back to a human", |d| d.status == capstan::domain::DecisionStatus::AwaitingUser)
            .await;
    assert_eq!(fourth.evidence["autoRecover"]["skipped"], "attempts_exhausted", "{:?}", fourth.evidence);
    let runs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agent_run WHERE decision_id = $1")
        .bind(&fourth.id)
        .fetch_one(&env.svc.db.pool)
        .await
        .unwrap();
    assert_eq!(runs, 0);
}

both_backends!(a_download_that_lost_its_files_is_recovered_within_a_grant_and_verified);
