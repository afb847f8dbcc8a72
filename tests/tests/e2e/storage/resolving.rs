//! A decision's option is carried out once even when the worker carrying
//! it out is killed mid-call: `capstan worker` is SIGKILLed while the
//! service holds the option's write unanswered, and the next worker finds
//! the write's outcome unknown, asks the capability to verify it, and
//! records the decision carried out — the service saw one write. On SQLite
//! and on PostgreSQL.

use std::time::{Duration, Instant};

use capstan::domain::{Answer, Domain};
use capstan::events::Events;
use capstan::store::Db;
use capstan_tests::both_backends;
use capstan_tests::components;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::{TestHost, shared_cache};
use capstan_tests::mock_service::MockService;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;

use super::tasks::start_worker;

async fn until<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "{what} never happened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_worker_killed_mid_option_leaves_it_carried_out_once(backend: Backend) {
    let host = TestHost::new();
    host.drop_plugin(components::COUNTER_VERIFY, "verify.wasm");
    let mock = MockService::start().await;
    let url = fresh_url(backend, host.dir.path()).await;
    let config = host.dir.path().join("capstan.toml");
    let toml = format!(
        "data_dir = {:?}\ncache_dir = {:?}\ndatabase_url = {:?}\n[tasks]\nlease_ms = 2000\n\
         [services.counter]\nbase_url = {:?}\n",
        host.config.data_dir().display().to_string(),
        shared_cache().display().to_string(),
        url,
        mock.base_url(),
    );
    std::fs::write(&config, toml).unwrap();
    // The operator accepts the plugin, as `capstan capabilities accept` would.
    let runtime = host.start().await.unwrap();
    host.accept(&runtime, "test.counter-verify").await;
    drop(runtime);

    let db = Db::open(&url).await.unwrap();
    let domain = Domain::with_events(db.clone(), Events::new(db.clone()));
    let options = json!([{"id": "count", "label": "Count once", "capabilityId": "test.counter-verify", "input": {"label": "once"}}]);
    let (decision, _) =
        domain.open_decision("download_failed", Some("d1"), &options, &json!({}), "download_failed:d1").await.unwrap();
    domain.answer_decision(&decision.id, &Answer::Resolve { option_id: "count" }, "admin:alice").await.unwrap();

    mock.counters.hold_answers.store(true, Ordering::SeqCst);
    let first = start_worker(&config);
    until("the option's write reaching the service", async || (mock.writes() == 1).then_some(())).await;
    drop(first); // SIGKILL, with the write made and its answer not yet read
    mock.counters.hold_answers.store(false, Ordering::SeqCst);
    // Time passes: the killed process's heartbeat goes stale.
    sqlx::query("UPDATE process_heartbeat SET heartbeat_at = 0").execute(&db.pool).await.unwrap();

    let _second = start_worker(&config);
    let done = until("the decision being carried out", async || {
        let d = domain.decision(&decision.id).await.unwrap();
        d.resolution.and_then(|r| r.get("execution").cloned())
    })
    .await;
    assert_eq!((done["status"].as_str(), done["by"].as_str()), (Some("succeeded"), Some("admin:alice")), "{done}");
    // The task is marked succeeded once its handler has returned.
    let row: (String, i64) = until("the task succeeding", async || {
        let row: (String, i64) =
            sqlx::query_as("SELECT status, attempts FROM task WHERE kind = 'resolveDecision' AND subject = $1")
                .bind(&decision.id)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        (row.0 == "succeeded").then_some(row)
    })
    .await;
    assert_eq!(row.1, 2, "the second worker finished what the first began");
    assert_eq!(mock.writes(), 1, "the write was verified, not made again");
    let outcome: Value = done["output"].clone();
    assert!(!outcome.is_null(), "the verified outcome is recorded: {done}");
}

both_backends!(a_worker_killed_mid_option_leaves_it_carried_out_once);
