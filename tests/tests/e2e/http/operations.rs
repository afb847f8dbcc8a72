//! Operations basics through the real HTTP server. The health check says
//! whether the database answers and whether anything will take the ready
//! tasks (503 once the database is gone). `/metrics` is open to this
//! machine, needs a key through a proxy, counts invokes by capability and
//! status, denials by import and requests by route, and reads the ledger,
//! the queue and the runs from the database. The Tasks list folds the
//! background sweeps' own tasks away unless they failed, in the API and in
//! the console, which also has an icon.

use capstan::runtime::EffectClass;
use capstan::tasks::{NewTask, Tasks};
use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::browser::Browser;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::ledger::env;

async fn get(url: &str) -> (u16, Value) {
    let resp = reqwest::get(url).await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

async fn enqueue(db: &capstan::store::Db, kind: &str) -> String {
    let new = NewTask {
        kind: kind.into(),
        subject: None,
        payload: json!({}),
        dedupe_key: None,
        max_attempts: 3,
        created_by: "test".into(),
    };
    Tasks::new(db.clone()).enqueue(&new).await.unwrap().0.id
}

async fn health_says_whether_the_host_can_do_its_work(backend: Backend) {
    let env = env(backend).await;
    let health = format!("{}/health", serve(env.app.clone()).await);
    let (status, body) = get(&health).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")), "{body}");
    let named = if backend == Backend::Sqlite { "sqlite" } else { "postgres" };
    assert_eq!((&body["database"]["ok"], body["database"]["backend"].as_str()), (&json!(true), Some(named)));
    assert_eq!(body["workers"]["liveProcesses"], 1, "{body}");
    assert_eq!(body["tasks"]["ready"], 0);

    // A ready task and no live process to take it.
    enqueue(&env.db, "noop").await;
    sqlx::query("UPDATE process_heartbeat SET heartbeat_at = 0").execute(&env.db.pool).await.unwrap();
    let (status, body) = get(&health).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("degraded")), "{body}");
    assert_eq!((&body["tasks"]["ready"], &body["workers"]["liveProcesses"]), (&json!(1), &json!(0)));
    assert!(body["tasks"]["oldestReadyMs"].as_i64().unwrap() >= 0);
    assert!(body["workers"]["note"].as_str().unwrap().contains("no server or worker"), "{body}");
    env.svc.ledger.heartbeat().await.unwrap();
    assert_eq!(get(&health).await.1["status"], "ok");

    // The database gone: failing, and a load balancer sees 503.
    env.db.pool.close().await;
    let (status, body) = get(&health).await;
    assert_eq!((status, body["status"].as_str(), &body["database"]["ok"]), (503, Some("failing"), &json!(false)));
}

/// The sample line of `text` that starts with `series`, if any.
fn sample<'a>(text: &'a str, series: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(series))
}

async fn metrics_count_what_happened_and_read_the_shared_state(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let metrics = format!("{}/metrics", base.trim_end_matches("/api/v1"));
    let http = reqwest::Client::new();
    let key = capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "test").await.unwrap();

    // Two execute calls by a human, in the ledger; one was denied three imports.
    let admin = Api::new(&base).signed_in(&env.db, "admin").await;
    for (id, input) in
        [("test.probe", json!({"action": "deny-loop", "times": 3})), ("test.counter-safe", json!({"label": "m"}))]
    {
        let (_, answer) = admin.post(&format!("/capabilities/{id}/invoke"), json!({ "input": input })).await;
        assert_eq!(answer["status"], "succeeded", "{id}: {answer}");
    }
    enqueue(&env.db, "noop").await;

    // From this machine, directly: no key needed.
    let resp = http.get(&metrics).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let kind = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let text = resp.text().await.unwrap();
    for (series, value) in [
        (r#"capstan_invocations_total{capability="test.probe",status="succeeded"}"#, "1"),
        (r#"capstan_invocations_total{capability="test.counter-safe",status="succeeded"}"#, "1"),
        (r#"capstan_denials_total{capability="test.probe",import="#, "3"),
        (
            r#"capstan_http_request_duration_seconds_count{method="POST",route="/api/v1/capabilities/{id}/invoke",status="200"}"#,
            "2",
        ),
        (r#"capstan_ledger_invocations{status="succeeded"}"#, "2"),
        (r#"capstan_tasks{kind="noop",status="queued"}"#, "1"),
        ("capstan_task_queue_ready ", "1"),
        ("capstan_live_processes ", "1"),
    ] {
        let line = sample(&text, series).unwrap_or_else(|| panic!("no {series} in:\n{text}"));
        assert!(line.ends_with(&format!(" {value}")), "{line}: expected {value}");
    }
    let none = sample(&text, r#"capstan_agent_runs{status="nothing_done"}"#);
    assert_eq!(none, Some(r#"capstan_agent_runs{status="nothing_done"} 0"#), "every run status is there, 0 when none");
    assert!(text.contains("# TYPE capstan_task_queue_oldest_ready_seconds gauge"));
    assert!(!text.contains("route=\"/api/v1/capabilities/test.probe"), "routes are templates, not paths");

    // Through a proxy, even one on this machine: only with a key.
    let proxied = http.get(&metrics).header("x-forwarded-for", "203.0.113.9").send().await.unwrap();
    assert_eq!(proxied.status().as_u16(), 401);
    assert_eq!(proxied.json::<Value>().await.unwrap()["error"]["code"], "unauthorized");
    let with_key = http.get(&metrics).header("x-forwarded-for", "203.0.113.9").bearer_auth(&key).send().await.unwrap();
    assert_eq!(with_key.status().as_u16(), 200);
}

both_backends!(health_says_whether_the_host_can_do_its_work, metrics_count_what_happened_and_read_the_shared_state);

#[tokio::test(flavor = "multi_thread")]
async fn the_sweeps_own_tasks_are_folded_away_unless_they_failed() {
    let env = env(Backend::Sqlite).await;
    let base = serve(env.app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    let http = reqwest::Client::new();
    let key = capstan::http::keys::create(&env.db, "reader", &[EffectClass::Read], "test").await.unwrap();
    enqueue(&env.db, capstan::acquisition::SYNC_DOWNLOADS).await;
    let failed = enqueue(&env.db, capstan::acquisition::EVALUATE_ACQUISITION).await;
    sqlx::query("UPDATE task SET status = 'dead', last_error = 'TMDB is not set up' WHERE id = $1")
        .bind(&failed)
        .execute(&env.db.pool)
        .await
        .unwrap();
    enqueue(&env.db, "noop").await;
    // Sorted: tasks made in the same millisecond have no order between them.
    let kinds = |body: &Value| -> Vec<String> {
        let mut kinds: Vec<String> =
            body["tasks"].as_array().unwrap().iter().map(|t| t["kind"].as_str().unwrap().to_string()).collect();
        kinds.sort();
        kinds
    };

    let listed: Value = http.get(format!("{base}/tasks")).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    assert_eq!(kinds(&listed), ["evaluateAcquisition", "noop"], "the failed sweep stays in sight: {listed}");
    assert_eq!(listed["foldedSweeps"], 1);
    let all: Value =
        http.get(format!("{base}/tasks?sweeps=true")).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    assert_eq!(kinds(&all).len(), 3);
    assert_eq!(all["foldedSweeps"], 0);

    // The console's icon.
    let icon = http.get(format!("{root}/favicon.ico")).send().await.unwrap();
    assert_eq!(icon.status().as_u16(), 200);
    assert_eq!(icon.headers()["content-type"], "image/svg+xml");
    assert!(icon.text().await.unwrap().starts_with("<svg"));

    // The same in the console.
    capstan::http::session::set_password(&env.db, "operator", "correct horse battery").await.unwrap();
    let browser = Browser::start().await;
    browser.sign_in(&root, "operator", "correct horse battery").await;
    assert_eq!(browser.attr("link[rel=icon]", "href").await.as_deref(), Some("/favicon.svg"));
    browser.click("nav button[data-tab=tasks]").await;
    let shown = browser.wait_text("#tasks", "listed the tasks", |t| t.contains("noop")).await;
    assert!(shown.contains("evaluateAcquisition") && !shown.contains("syncDownloads"), "{shown}");
    let folded = browser.wait_text("#tasks-folded", "said what is folded", |t| !t.is_empty()).await;
    assert!(folded.starts_with("1 of the background sweeps"), "{folded}");
    browser.click("#tasks-sweeps").await;
    browser.wait_text("#tasks", "showed the sweeps", |t| t.contains("syncDownloads")).await;
    browser.close().await;
}
