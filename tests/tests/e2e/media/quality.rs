//! The acquisition sweep follows a slot's quality policy: with no policy the
//! most seeded matching release is planned; a slot whose `profile` names a
//! published `quality.*` policy gets the release that profile prefers among
//! those it accepts (judged as `policy.preview` judges); a slot naming a
//! policy with no published revision is left alone, with the reason.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::acquisition::EVALUATE_ACQUISITION;
use capstan::config::{Auth, SecretRef, ServiceConfig};
use capstan::domain::NewSlot;
use capstan::store::Db;
use capstan::tasks::{NewTask, TaskStatus, Tasks, Worker, WorkerConfig};
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use capstan_tests::mock_torznab::{Indexer, Item, MockTorznab};
use serde_json::{Value, json};

const WEB: &str = "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX";
const BLURAY: &str = "Dune.Part.Two.2024.2160p.BluRay.x265-GRP";

fn item(title: &'static str, seeders: u32, hash: &'static str) -> Item {
    Item {
        title,
        size: 40_000_000_000,
        seeders,
        peers: seeders + 2,
        infohash: Some(hash),
        categories: &[2000, 2045],
        tmdb_id: Some(693134),
        pub_date: "Sat, 02 Mar 2024 09:00:00 +0000",
        ..Item::default()
    }
}

async fn sweep(tasks: &Tasks) -> Vec<Value> {
    let new = NewTask {
        kind: EVALUATE_ACQUISITION.into(),
        subject: None,
        payload: json!({}),
        dedupe_key: None,
        max_attempts: 1,
        created_by: "test".into(),
    };
    let (task, _) = tasks.enqueue(&new).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = tasks.get(&task.id).await.unwrap().unwrap();
        if matches!(now.status, TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Dead) {
            assert_eq!(now.status, TaskStatus::Succeeded, "{:?}", now.last_error);
            return now.result.unwrap()["slots"].as_array().unwrap().clone();
        }
        assert!(Instant::now() < deadline, "the sweep did not finish");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slot_gets_the_release_its_quality_policy_prefers() {
    let indexer = MockTorznab::start(
        "indexer-key",
        Indexer {
            title: "Loopback indexer",
            movie_params: Some("q,imdbid,tmdbid"),
            tv_params: None,
            items: vec![
                item(WEB, 90, "1111111111111111111111111111111111111111"),
                item(BLURAY, 4, "2222222222222222222222222222222222222222"),
            ],
        },
    )
    .await;
    let mut host = TestHost::new();
    host.config.services.insert(
        "torznab".into(),
        ServiceConfig {
            base_url: indexer.base_url(),
            auth: Auth::Query { name: "apikey".into(), value: SecretRef("indexer-key".into()) },
            operations: Vec::new(),
            timeout_ms: 10_000,
            response_cap_bytes: 4 << 20,
        },
    );
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let svc = app.services().clone();
    let config = WorkerConfig { poll: Duration::from_millis(50), ..WorkerConfig::default() };
    let mut worker = Worker::new(Tasks::new(db.clone()), "quality-test".into(), config);
    capstan::acquisition::register(&mut worker, &svc, app.settings());
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    let tasks = Tasks::new(db);
    let domain = &svc.domain;
    let entity = domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    let want = |profile: Option<&str>| NewSlot {
        entity_id: entity.id.clone(),
        season: None,
        quality: "2160p".into(),
        profile: profile.map(str::to_string),
    };
    let planned_title = |outcome: &Value| {
        let domain = domain.clone();
        let plan_id = outcome["planId"].as_str().map(str::to_string);
        async move { domain.plan(&plan_id.expect("a plan")).await.unwrap().payload["title"].as_str().unwrap().to_string() }
    };

    // No policy: the most seeded.
    let plain = domain.want(&want(None)).await.unwrap();
    let slots = sweep(&tasks).await;
    let outcome = slots.iter().find(|s| s["slotId"] == plain.id.as_str()).unwrap();
    assert_eq!(outcome["outcome"], "planned", "{outcome}");
    assert!(planned_title(outcome).await.starts_with(WEB));

    // A slot following a policy with no published revision is left alone.
    let strict = domain.want(&want(Some("quality.movies"))).await.unwrap();
    let slots = sweep(&tasks).await;
    let outcome = slots.iter().find(|s| s["slotId"] == strict.id.as_str()).unwrap();
    assert_eq!(outcome["outcome"], "policy-unusable", "{outcome}");
    assert!(outcome["reason"].as_str().unwrap().contains("no published revision"));

    // Published: only Blu-ray is acceptable (a 2160p BluRay reads as Ultra
    // HD Blu-ray), so the less seeded release wins.
    let body = json!({"preferredResolutions": ["2160p"], "allowedSources": ["Blu-ray", "Ultra HD Blu-ray"], "rejectTerms": ["CAM"]});
    let draft = svc.authz.draft_policy("quality.movies", &body, "admin:test").await.unwrap();
    svc.authz.publish_policy("quality.movies", draft.revision).await.unwrap();
    let slots = sweep(&tasks).await;
    let outcome = slots.iter().find(|s| s["slotId"] == strict.id.as_str()).unwrap();
    assert_eq!(outcome["outcome"], "planned", "{outcome}");
    assert!(planned_title(outcome).await.starts_with(BLURAY), "{outcome}");

    // A profile nothing satisfies plans nothing.
    let body = json!({"preferredResolutions": ["2160p"], "allowedSources": ["HDTV"]});
    let draft = svc.authz.draft_policy("quality.tv", &body, "admin:test").await.unwrap();
    svc.authz.publish_policy("quality.tv", draft.revision).await.unwrap();
    let picky = domain.want(&want(Some("quality.tv"))).await.unwrap();
    let slots = sweep(&tasks).await;
    let outcome = slots.iter().find(|s| s["slotId"] == picky.id.as_str()).unwrap();
    assert_eq!(outcome["outcome"], "none-acceptable", "{outcome}");
}
