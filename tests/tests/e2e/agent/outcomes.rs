//! How a run's tool calls and waiting end, as the user sees them: botched
//! tool arguments are a failed result that never runs, a write whose outcome
//! nobody knows is reported `unknown` (never repeated, never a success), a
//! run waiting on a human ends `failed` when the approval it asked for is
//! rejected or revoked, and a waiting run reports where it stands, past
//! `agent.goal_wait_hours` too. On SQLite and on PostgreSQL.

use std::sync::atomic::Ordering;

use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::mock_llm::{MockLlm, Reply, sse};
use serde_json::{Value, json};

use crate::agent::runs::{ended, events_of, report, set, start, use_mock_anthropic};
use crate::storage::ledger::{Env, env};

/// An execute run, created but not yet queued, that drafted a plan for a
/// wanted movie whose release has infohash `hash`.
async fn a_run_with_a_draft(
    env: &Env,
    hash: &str,
) -> (capstan::agent::AgentRuntime, capstan::agent::runs::Run, capstan::domain::Plan) {
    let agent = env.app.new_agent();
    let new = capstan::agent::runs::NewRun {
        goal: "fetch Dune".into(),
        mode: capstan::agent::runs::RunMode::Execute,
        allowlist: None,
        created_by: "admin:test".into(),
        investigation: None,
        skill: None,
    };
    let run = agent.runs().create(&new).await.unwrap();
    let domain = &env.svc.domain;
    let (slot, release) = crate::storage::domain::wanted_movie(domain, hash).await;
    domain
        .match_identity(&release.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let by = capstan::domain::Author {
        principal: format!("agent:{}", run.id),
        run_id: Some(run.id.clone()),
        capability: None,
    };
    let new = capstan::domain::NewPlan { slot_id: slot.id, source_release_id: release.id, note: None };
    let plan = domain.draft_plan(&by, &new).await.unwrap();
    (agent, run, plan)
}

/// Counts with a capability whose effects may never be replayed.
const COUNTING_NEVER: &str = r#"{"scripts": [{
  "match": ["count"],
  "steps": [
    {"tools": [
      {"name": "test.counter-never", "input": {"label": "once"}},
      {"name": "test.counter-never", "input": {"label": "once"}}]}
  ],
  "finalText": "Counted to {{test.counter-never.count}}."
}]}"#;

async fn an_uncertain_write_is_reported_unknown_and_never_repeated(backend: Backend) {
    let env = env(backend).await;
    set(&env.app, &[("model.script", json!(COUNTING_NEVER))]).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let api = start(&env).await;
    // The component traps after the counter server counted.
    env.mock.counters.crash_next.store(true, Ordering::SeqCst);
    let (_, run) = api.post("/agent/runs", json!({"goal": "count once"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = crate::agent::runs::wait_run(&api, &id, "ended", ended).await;
    assert_eq!(env.mock.counters.writes.load(Ordering::SeqCst), 1, "the repeat in the same request did not run");
    let finished: Vec<&str> = events_of(&body, "agent.tool_call")
        .into_iter()
        .filter(|e| e["payload"]["phase"] == "finished")
        .map(|e| e["payload"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(finished, ["unknown", "unknown"], "{body}");
    assert_eq!(body["run"]["status"], "failed", "an unknown outcome is not a success: {body}");
    assert!(body["run"]["error"].as_str().unwrap().contains("unknown"), "{body}");
    let report = report(&body);
    assert_eq!(report["verified"]["unknownWrites"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["verified"]["toolCalls"]["unknown"], 2);
    assert_eq!(report["modelFinalText"]["text"], "Counted to (unknown).", "no count is guessed");
    // What the model was told, from the session log.
    let agent = env.app.new_agent();
    let session = agent.sessions().read(&id).await.unwrap();
    let told: Vec<&String> = session
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            capstan::agent::providers::Block::ToolResult { content, .. } => Some(content),
            _ => None,
        })
        .collect();
    assert_eq!(told.len(), 2);
    assert!(told.iter().all(|t| t.contains("result unknown — verify before retrying")), "{told:?}");
}

/// A waiting run is readable: its report says where each plan stands now.
/// Past `agent.goal_wait_hours` it keeps the state that report gives —
/// waiting, with the reason — rather than ending `failed`; a message is
/// still answered, and what it touched settling finishes it.
async fn a_waiting_run_reports_where_it_stands_and_waits_past_its_window(backend: Backend) {
    let env = env(backend).await;
    let script = r#"{"scripts": [
        {"match": ["how"], "steps": [], "finalText": "Still on its way."},
        {"steps": [], "finalText": "It is on its way."}]}"#;
    set(
        &env.app,
        &[("model.script", json!(script)), ("agent.goal_wait_hours", json!(0)), ("agent.goal_poll_sec", json!(1))],
    )
    .await;
    // The run submitted a plan that nothing will move on.
    let (agent, run, plan) = a_run_with_a_draft(&env, "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC").await;
    env.svc.domain.reserve_plan(&plan.id).await.unwrap();
    let (_, download) =
        env.svc.domain.mark_submitted(&plan.id, "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC").await.unwrap();
    let api = start(&env).await;
    agent.wake(&run.id, "admin:test").await.unwrap();
    let overdue = |r: &Value| r["error"].as_str().is_some_and(|e| e.contains("did not settle within"));
    let body = crate::agent::runs::wait_run(&api, &run.id, "overdue", |r| overdue(r) || ended(r)).await;
    assert_eq!(body["run"]["status"], "waiting", "past its window it still waits: {body}");
    let now = &body["report"];
    assert_eq!(now["current"], true, "{body}");
    assert_eq!(now["body"]["status"], "waiting");
    assert!(now["body"]["reason"].as_str().unwrap().contains("keeps waiting"), "{now}");
    assert_eq!(now["body"]["verified"]["plans"][0]["outcome"], "submitted, not yet in the library", "{now}");
    assert_eq!(now["body"]["modelFinalText"]["text"], "It is on its way.");

    // A message is answered; the run goes back to waiting, still saying why.
    let (status, _) = api.post(&format!("/agent/runs/{}/messages", run.id), json!({"text": "how is it going?"})).await;
    assert_eq!(status, 200);
    let answered = |r: &Value| r["finalText"] == "Still on its way." && overdue(r);
    let body = crate::agent::runs::wait_run(&api, &run.id, "answered", |r| answered(r) || ended(r)).await;
    assert_eq!(body["run"]["status"], "waiting", "{body}");

    // The download fails for good: that settles it, and the run ends.
    env.svc
        .domain
        .update_download(&download.id, capstan::domain::DownloadStatus::Failed, 0.0, None, None)
        .await
        .unwrap();
    let body = crate::agent::runs::wait_run(&api, &run.id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "failed", "{body}");
    assert_eq!(report(&body)["verified"]["plans"][0]["outcome"], "failed", "{body}");
    assert_eq!(body["report"]["current"], Value::Null, "the report it ended with");
    let statuses: Vec<&str> =
        events_of(&body, "agent.run_status").iter().map(|e| e["payload"]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses.first(), Some(&"running"));
    assert_eq!(statuses.iter().filter(|s| **s == "failed").count(), 1, "it ended once, at the end: {statuses:?}");
    assert_eq!(statuses.last(), Some(&"failed"));
}

/// A tool call whose arguments the model botched is answered as failed,
/// with the reason, and never reaches the capability.
async fn botched_tool_arguments_are_a_failed_result_and_never_run(backend: Backend) {
    let env = env(backend).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let answer = |blocks: Vec<(&str, Value)>, stop: &str| {
        let mut events =
            vec![("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 9}}}))];
        events.extend(blocks);
        events.push((
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 4}}),
        ));
        events.push(("message_stop", json!({"type": "message_stop"})));
        Reply::Stream(vec![sse(&events)])
    };
    let botched = answer(
        vec![
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "test_counter-safe", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"label\": \"on"}}),
            ),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        ],
        "tool_use",
    );
    let sorry = answer(
        vec![
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "My arguments were broken."}}),
            ),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        ],
        "end_turn",
    );
    let llm = MockLlm::start(vec![botched, sorry]).await;
    use_mock_anthropic(&env.app, &llm).await;
    let api = start(&env).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "count once"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = crate::agent::runs::wait_run(&api, &id, "ended", ended).await;
    // Its only change never ran: not a success, and the report says why.
    assert_eq!(body["run"]["status"], "failed", "{body}");
    assert!(body["run"]["error"].as_str().unwrap().contains("every change the run tried failed"), "{body}");
    assert!(report(&body)["reasons"][0].as_str().unwrap().contains("not valid JSON"), "{body}");
    assert_eq!(env.mock.counters.writes.load(Ordering::SeqCst), 0, "the capability never ran");
    assert!(capstan::ledger::for_run(&env.db, &id).await.unwrap().is_empty(), "nothing was claimed");
    let finished: Vec<&str> = events_of(&body, "agent.tool_call")
        .into_iter()
        .filter(|e| e["payload"]["phase"] == "finished")
        .map(|e| e["payload"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(finished, ["failed"]);
    let told = &llm.requests()[1].body["messages"][2]["content"][0];
    assert_eq!((told["type"].as_str(), told["is_error"].as_bool()), (Some("tool_result"), Some(true)), "{told}");
    assert!(told["content"].as_str().unwrap().contains("not valid JSON"), "the model is told why: {told}");
}

/// A run refused at `download.submit` asks a human and waits; a rejection
/// ends it `failed`, saying a human rejected the plan.
async fn a_run_asks_a_human_and_a_rejection_ends_it(backend: Backend) {
    let reject =
        |approval: &capstan::authz::Approval| json!({"status": "rejected", "payloadHash": approval.payload_hash});
    a_run_waiting_on_a_human_is_answered(backend, reject).await;
}

/// Revoking the approval a run waits on ends it as a rejection does.
async fn a_revoke_ends_a_waiting_run_as_a_rejection_does(backend: Backend) {
    a_run_waiting_on_a_human_is_answered(backend, |_| json!({"status": "revoked"})).await;
}

/// A run that asked a human for an approval and waits, answered with
/// `answer` (a PATCH of the approval): it ends `failed`, a human having
/// rejected the plan, and is sent no message.
async fn a_run_waiting_on_a_human_is_answered(backend: Backend, answer: fn(&capstan::authz::Approval) -> Value) {
    let env = env(backend).await;
    let (agent, run, plan) = a_run_with_a_draft(&env, "DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD").await;
    let script = json!({"scripts": [{"steps": [{"tools": [{"name": "download.submit", "input": {"planId": plan.id}}]}],
        "finalText": "Asked for it."}]});
    set(&env.app, &[("model.script", json!(script.to_string())), ("agent.goal_poll_sec", json!(1))]).await;
    let api = start(&env).await;
    agent.wake(&run.id, "admin:test").await.unwrap();
    let body = crate::agent::runs::wait_run(&api, &run.id, "waiting", |r| r["status"] == "waiting" || ended(r)).await;
    assert_eq!(body["run"]["status"], "waiting", "{body}");
    let pending = env.svc.authz.approvals(Some(capstan::authz::ApprovalStatus::Pending)).await.unwrap();
    let approval = pending.iter().find(|a| a.requested_by == format!("agent:{}", run.id)).expect("asked a human");
    let denied = events_of(&body, "agent.tool_call").into_iter().find(|e| e["payload"]["phase"] == "denied").cloned();
    assert!(denied.is_some(), "{body}");

    let alice = api.signed_in(&env.db, "alice").await;
    let url = format!("/approvals/{}", approval.id);
    let (status, answered) = alice.send(reqwest::Method::PATCH, &url, answer(approval)).await;
    assert_eq!(status, 200, "{answered}");
    let body = crate::agent::runs::wait_run(&api, &run.id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "failed", "{body}");
    assert!(body["run"]["error"].as_str().unwrap().contains("a human rejected 1"), "{body}");
    assert_eq!(report(&body)["verified"]["plans"][0]["outcome"], "draft: a human rejected it");
    assert!(agent.runs().messages(&run.id).await.unwrap().len() == 1, "the answer sends no message");
}

both_backends!(
    a_run_asks_a_human_and_a_rejection_ends_it,
    a_revoke_ends_a_waiting_run_as_a_rejection_does,
    botched_tool_arguments_are_a_failed_result_and_never_run,
    a_waiting_run_reports_where_it_stands_and_waits_past_its_window,
    an_uncertain_write_is_reported_unknown_and_never_repeated,
);
