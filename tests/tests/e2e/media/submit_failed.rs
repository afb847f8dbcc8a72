//! A submit that fails is visible and fixable, against a real
//! qbittorrent-nox and an indexer whose `.torrent` link answers 401 until it
//! is "fixed", on both backends: the plan stays a draft and counts the
//! failure with its reason and a backoff, one `download_submit_failed`
//! decision asks what to do (try again now, pick another release, stop
//! wanting it, leave it), the Library shows the reason and links the
//! decision. Once the cause is gone, "Try again now" hands the torrent over,
//! the count starts again and the decision is cleared. "Pick another
//! release" fails the plan and looks for another; "Stop wanting it" gives
//! the title up; a title can be given up unless the client is working on
//! its download.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan::domain::{Answer, Decision, DomainError};
use capstan::store::now_ms;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;
use serde_json::{Value, json};

use super::download::{Env, operator, start_with_qbittorrent_on, wanted};
use super::trouble::worker;

const DEADLINE: Duration = Duration::from_secs(90);

/// An indexer serving one `.torrent` at `/download/dune.torrent` once its
/// gate is open, and 401 (as for a missing key) until then.
async fn gated_indexer(torrent: Vec<u8>) -> (String, Arc<Mutex<bool>>) {
    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    type Gate = (Arc<Mutex<bool>>, Arc<Vec<u8>>);
    async fn file(State((open, bytes)): State<Gate>) -> impl IntoResponse {
        if !*open.lock().unwrap() {
            return (StatusCode::UNAUTHORIZED, "Invalid API key").into_response();
        }
        (StatusCode::OK, [("content-type", "application/x-bittorrent")], bytes.to_vec()).into_response()
    }
    let open = Arc::new(Mutex::new(false));
    let app = axum::Router::new()
        .route("/download/dune.torrent", axum::routing::get(file))
        .with_state((open.clone(), Arc::new(torrent)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), open)
}

/// Plans `release` for `slot` and submits it as the operator; answers the
/// plan id and the submit's invocation.
async fn plan_and_submit(env: &Env, slot: &str, release: &str) -> (String, capstan::pipeline::Invocation) {
    let planned = env.invoke(&operator(), "download.plan", json!({"sourceReleaseId": release, "slotId": slot})).await;
    let plan = planned.output.expect("a plan")["id"].as_str().unwrap().to_string();
    let submitted = env.invoke(&operator(), "download.submit", json!({"planId": plan})).await;
    (plan, submitted)
}

fn root(plan: &str) -> String {
    format!("submit_failed:{plan}")
}

async fn decisions(env: &Env, plan: &str) -> Vec<Decision> {
    env.domain().decisions_of_root(&root(plan)).await.unwrap()
}

/// Waits until the decision `id` records what carrying its option out came to.
async fn carried_out(env: &Env, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let decision = env.domain().decision(id).await.unwrap();
        if let Some(done) = decision.resolution.as_ref().and_then(|r| r.get("execution")) {
            return done.clone();
        }
        assert!(started.elapsed() < DEADLINE, "the chosen option was never carried out: {decision:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn admin() -> String {
    capstan::principal::admin("admin")
}

async fn a_failed_submit_is_asked_about_tried_again_and_cleared(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), "Dune.2021.1080p.BluRay.x264.mkv", &torrent::payload(70_000, 5));
    let (indexer, gate) = gated_indexer(dune.bytes.clone()).await;
    let env = start_with_qbittorrent_on(backend, &qbt, &indexer).await;
    worker(&env);
    let link = Some(format!("{indexer}/download/dune.torrent"));
    let (slot, release) = wanted(env.domain(), &dune.name, Some(&dune.info_hash), link).await;

    let (plan_id, submitted) = plan_and_submit(&env, &slot.id, &release.id).await;
    assert_eq!(submitted.status, capstan::runtime::Status::Failed, "{submitted:?}");
    let said = &submitted.error.as_ref().unwrap().message;
    assert!(said.contains("401"), "the caller is told why: {said}");

    let plan = env.domain().plan(&plan_id).await.unwrap();
    assert_eq!((plan.status.as_str(), plan.submit_failures), ("draft", 1), "nothing was reserved: {plan:?}");
    assert!(plan.last_failure.as_deref().is_some_and(|r| r.contains("401")), "{plan:?}");
    let first_wait = plan.retry_at.expect("a backoff") - now_ms();
    assert!((4 * 60_000..=5 * 60_000).contains(&first_wait), "about five minutes, not {first_wait} ms");
    assert_eq!(env.domain().slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Wanted);

    let asked = decisions(&env, &plan_id).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    let decision = &asked[0];
    assert_eq!((decision.kind.as_str(), decision.status.as_str()), ("download_submit_failed", "open"));
    let problem = decision.evidence["problem"].as_str().unwrap();
    assert!(problem.starts_with("Dune (2021): Dune.2021.1080p.BluRay.x264.mkv could not be handed"), "{problem}");
    assert!(problem.contains("401"), "{problem}");
    let offered: Vec<&str> = decision.options.as_array().unwrap().iter().filter_map(|o| o["label"].as_str()).collect();
    assert_eq!(
        offered,
        ["Try again now", "Pick another release", "Stop wanting it", "Leave it: keep trying now and then"]
    );

    // The Library says what happened and where to decide.
    let shown = env.domain().slot_with_activity(&env.domain().slot(&slot.id).await.unwrap()).await.unwrap();
    let shown = serde_json::to_value(shown).unwrap();
    let failure = &shown["waitingPlan"]["submitFailure"];
    assert_eq!((failure["failures"].as_i64(), failure["decisionId"].as_str()), (Some(1), Some(decision.id.as_str())));
    assert!(failure["reason"].as_str().unwrap().contains("401"), "{shown}");

    // Failing again counts, waits longer, and asks nothing new.
    let (_, again) = plan_and_submit(&env, &slot.id, &release.id).await;
    assert_eq!(again.status, capstan::runtime::Status::Failed);
    let plan = env.domain().plan(&plan_id).await.unwrap();
    assert_eq!(plan.submit_failures, 2);
    assert!(plan.retry_at.unwrap() - now_ms() > 9 * 60_000, "the wait doubles: {plan:?}");
    assert_eq!(decisions(&env, &plan_id).await.len(), 1);

    // A change that may have fixed it lets the sweep try at once.
    assert_eq!(env.domain().retry_submits_now().await.unwrap(), 1);
    assert_eq!(env.domain().plan(&plan_id).await.unwrap().retry_at, None);

    // Fixed: "Try again now" hands the torrent over as the administrator.
    *gate.lock().unwrap() = true;
    env.domain().answer_decision(&decision.id, &Answer::Resolve { option_id: "retry" }, &admin()).await.unwrap();
    let done = carried_out(&env, &decision.id).await;
    assert_eq!((done["capabilityId"].as_str(), done["status"].as_str()), (Some("download.submit"), Some("succeeded")));
    let plan = env.domain().plan(&plan_id).await.unwrap();
    assert_eq!((plan.status.as_str(), plan.submit_failures, plan.last_failure), ("submitted", 0, None));
    let shown = env.domain().slot_with_activity(&env.domain().slot(&slot.id).await.unwrap()).await.unwrap();
    let shown = serde_json::to_value(shown).unwrap();
    assert_eq!(shown["download"]["planId"], plan_id.as_str(), "{shown}");

    // The client is working on it now: giving the title up says what to do.
    let refused = env.domain().unwant_title(&slot.entity_id, None).await.unwrap_err();
    assert!(matches!(&refused, DomainError::Conflict(m) if m.contains("remove the torrent there")), "{refused}");
}

both_backends!(a_failed_submit_is_asked_about_tried_again_and_cleared);

async fn a_failed_submit_can_give_up_its_release_or_the_title(backend: Backend) {
    let qbt = QBittorrent::start().await;
    let (indexer, _closed) = gated_indexer(b"never served".to_vec()).await;
    let env = start_with_qbittorrent_on(backend, &qbt, &indexer).await;
    worker(&env);
    let link = Some(format!("{indexer}/download/dune.torrent"));
    let (slot, first) = wanted(env.domain(), "Dune.2021.1080p.WEB-DL.x264", Some(&"a".repeat(40)), link.clone()).await;
    let (plan_id, _) = plan_and_submit(&env, &slot.id, &first.id).await;
    let decision = decisions(&env, &plan_id).await.remove(0);

    // "Pick another release": this one fails and is not picked again.
    env.domain().answer_decision(&decision.id, &Answer::Resolve { option_id: "another" }, &admin()).await.unwrap();
    let done = carried_out(&env, &decision.id).await;
    assert_eq!((done["kind"].as_str(), done["plan"].as_str()), (Some("another"), Some("failed")), "{done}");
    let plan = env.domain().plan(&plan_id).await.unwrap();
    assert!(plan.reason.as_deref().is_some_and(|r| r.contains("another release was chosen")), "{plan:?}");
    assert_eq!(env.domain().failed_releases(&slot.id).await.unwrap(), [first.id.as_str()]);
    let queued = sqlx::query_scalar::<_, String>("SELECT subject FROM task WHERE kind = 'evaluateAcquisition'")
        .fetch_all(&env.svc.db.pool)
        .await
        .unwrap();
    assert_eq!(queued, [slot.id.as_str()], "the slot is looked at again");

    // The next release fails too; "Stop wanting it" gives the title up and
    // cancels the plan, which clears nothing else to ask.
    let second = env
        .domain()
        .record_release(&capstan::domain::NewRelease {
            indexer: "torznab".into(),
            title: "Dune.2021.1080p.BluRay.x264".into(),
            parsed: json!({"title": "Dune", "year": 2021}),
            size: Some(70_000),
            infohash: Some("b".repeat(40)),
            download_url: link,
            magnet_url: None,
        })
        .await
        .unwrap();
    env.domain()
        .match_identity(&second.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let (next_plan, _) = plan_and_submit(&env, &slot.id, &second.id).await;
    let asked = decisions(&env, &next_plan).await.remove(0);
    env.domain().answer_decision(&asked.id, &Answer::Resolve { option_id: "unwant" }, &admin()).await.unwrap();
    let done = carried_out(&env, &asked.id).await;
    assert_eq!(done["outcome"], "no longer wanted", "{done}");
    assert_eq!(env.domain().slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Unwanted);
    let plan = env.domain().plan(&next_plan).await.unwrap();
    assert_eq!((plan.status.as_str(), plan.reason.as_deref()), ("cancelled", Some("the title is no longer wanted")));
}

both_backends!(a_failed_submit_can_give_up_its_release_or_the_title);
