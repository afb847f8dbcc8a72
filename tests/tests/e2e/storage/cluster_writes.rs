//! Writes of several nodes on one PostgreSQL, which no longer take turns
//! on one lock: a node's batch held open does not hold up another node's
//! write; the hot paths of two nodes at once — calls through the invoke
//! path (ledger claims and finishes, their audit rows and events), events
//! published, tasks queued under shared dedupe keys, claimed and finished —
//! never fail each other's writes, and leave the audit chain intact, every
//! event numbered once and in order, and one task per key; an event
//! that commits late is numbered after what a follower already read, never
//! skipped; and appends that follow one another, however close in time,
//! keep their order in the event log and the audit chain.

use std::collections::BTreeSet;
use std::time::Duration;

use capstan::audit::{Audit, NewAuditEntry, Verdict};
use capstan::events::Events;
use capstan::pipeline::Origin;
use capstan::runtime::{EffectClass, Status};
use capstan::store::{Backend as StoreBackend, Db};
use capstan::tasks::NewTask;
use capstan_tests::db::Backend;
use futures_util::future::join_all;
use serde_json::json;

use super::ledger::{another_node, env};

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_held_open_on_one_node_does_not_hold_up_another_nodes_write() {
    let env = env(Backend::Postgres).await;
    let (_b_host, b) = another_node(&env).await;
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = std::sync::Arc::new(tokio::sync::Mutex::new(Some(released)));
    let held = env.db.write(move |tx| {
        let released = released.clone();
        Box::pin(async move {
            sqlx::query("SELECT 1").execute(&mut **tx).await?;
            if let Some(released) = released.lock().await.take() {
                let _ = released.await;
            }
            Ok::<_, sqlx::Error>(())
        })
    });
    let held = tokio::spawn(held);
    // B's hot-path writes commit while A's batch is open.
    let origin = Origin::cli(EffectClass::Execute);
    let call = tokio::time::timeout(Duration::from_secs(60), async {
        b.services().events.publish("test.event", None, &json!({})).await.unwrap();
        b.caps().invoke(&origin, "test.counter-safe", &json!({"label": "b"})).await.unwrap()
    })
    .await
    .expect("B's writes waited on A's open batch");
    assert_eq!(call.status, Status::Succeeded, "{:?}", call.error);
    release.send(()).unwrap();
    held.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn two_nodes_hot_writes_never_fail_each_other_and_keep_every_order() {
    let env = env(Backend::Postgres).await;
    let (_b_host, b) = another_node(&env).await;
    let apps = [env.app.clone(), b];
    let origin = Origin::cli(EffectClass::Execute);
    let writers = (0..8).map(|w| {
        let app = apps[w % 2].clone();
        let origin = origin.clone();
        tokio::spawn(async move {
            let mut failures = Vec::new();
            let tasks = app.tasks().clone();
            for i in 0..25 {
                let label = format!("{w}-{i}");
                match app.caps().invoke(&origin, "test.counter-safe", &json!({ "label": label })).await {
                    Ok(inv) if inv.status == Status::Succeeded => {}
                    Ok(inv) => failures.push(format!("call {label}: {:?}", inv.error)),
                    Err(e) => failures.push(format!("call {label}: {e}")),
                }
                if let Err(e) = app.services().events.publish("test.event", None, &json!({ "w": w, "i": i })).await {
                    failures.push(format!("event {label}: {e}"));
                }
                // Eight writers, five keys: the same key queued at once.
                let task = NewTask {
                    kind: "test.noop".into(),
                    subject: None,
                    payload: json!({}),
                    dedupe_key: Some(format!("key-{}", i % 5)),
                    max_attempts: 1,
                    created_by: "test".into(),
                };
                if let Err(e) = tasks.enqueue(&task).await {
                    failures.push(format!("enqueue {label}: {e}"));
                }
                match tasks.claim(&format!("worker-{w}"), Duration::from_secs(30)).await {
                    Ok(Some(task)) => {
                        if let Err(e) = tasks.succeed(&task, &json!({}), None).await {
                            failures.push(format!("finish {label}: {e}"));
                        }
                    }
                    Ok(None) => {}
                    Err(e) => failures.push(format!("claim {label}: {e}")),
                }
            }
            failures
        })
    });
    let failures: Vec<String> = join_all(writers).await.into_iter().flat_map(|w| w.unwrap()).collect();
    assert!(failures.is_empty(), "{} writes failed, the first: {}", failures.len(), failures[0]);

    // Every call counted once, on the service both nodes reach.
    assert_eq!(env.mock.writes(), 200);
    // The chain holds over both nodes' rows, every one of them chained.
    let audit = env.app.audit();
    match audit.verify().await.unwrap() {
        Verdict::Intact { events } => assert!(events >= 200, "{events}"),
        broken => panic!("{broken:?}"),
    }
    assert_eq!(audit.waiting().await.unwrap(), 0);
    // Every event once, numbered without a gap.
    let events = Events::new(env.db.clone());
    let mut seqs = Vec::new();
    let mut after = 0;
    loop {
        let page = events.list(after, 1000).await.unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        seqs.extend(page.iter().map(|e| e.seq));
    }
    let expected: Vec<i64> = (1..=seqs.len() as i64).collect();
    assert_eq!(seqs, expected, "numbered 1, 2, 3, ... with no gap");
    let published: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM event WHERE kind = 'test.event'")
        .fetch_one(&env.db.pool)
        .await
        .unwrap();
    assert_eq!(published, 200);
    // Never two queued or running tasks under one key.
    let active: Vec<String> =
        sqlx::query_scalar("SELECT dedupe_key FROM task WHERE status IN ('queued', 'running') AND kind = 'test.noop'")
            .fetch_all(&env.db.pool)
            .await
            .unwrap();
    let keys: BTreeSet<&String> = active.iter().collect();
    assert_eq!(keys.len(), active.len(), "{active:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_that_commits_late_is_numbered_after_what_a_follower_read() {
    let dir = tempfile::tempdir().unwrap();
    let url = capstan_tests::db::fresh_url(Backend::Postgres, dir.path()).await;
    let (a, b) = (Db::open(&url).await.unwrap(), Db::open(&url).await.unwrap());
    let follower = Events::new(b.clone());
    // A's change appends its event and stays open.
    let mut slow = a.pool.begin().await.unwrap();
    Events::append_in(&mut slow, StoreBackend::Postgres, "test.slow", None, &json!({})).await.unwrap();
    // B's commits; the follower reads it and moves its cursor past it.
    Events::new(b.clone()).publish("test.fast", None, &json!({})).await.unwrap();
    let read = follower.list(0, 100).await.unwrap();
    let kinds: Vec<&str> = read.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["test.fast"]);
    let cursor = read[0].seq;
    // A commits late: its event comes after the cursor, not before it.
    slow.commit().await.unwrap();
    let later = follower.list(cursor, 100).await.unwrap();
    let kinds: Vec<&str> = later.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["test.slow"], "the late event is there for a reader resuming from its cursor");
    assert!(later[0].seq > cursor);
}

#[tokio::test(flavor = "multi_thread")]
async fn appends_in_quick_succession_keep_their_order_in_the_log_and_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let url = capstan_tests::db::fresh_url(Backend::Postgres, dir.path()).await;
    let db = Db::open(&url).await.unwrap();
    let entry = |i: usize| NewAuditEntry {
        actor_kind: "test".into(),
        principal: "test".into(),
        action: "test.tick".into(),
        subject: format!("{i}"),
        outcome: "succeeded".into(),
        authorization_id: None,
        idempotency_key: None,
        input_summary: None,
        detail: None,
    };
    // Each change commits before the next begins, many within one
    // millisecond; every third makes two appends in one transaction.
    let mut expected = Vec::new();
    for i in 0..300 {
        let mut tx = db.pool.begin().await.unwrap();
        let appends = if i % 3 == 0 { 2 } else { 1 };
        for _ in 0..appends {
            let n = expected.len();
            Events::append_in(&mut tx, StoreBackend::Postgres, "test.tick", None, &json!({ "n": n })).await.unwrap();
            Audit::append_in(&mut tx, &entry(n)).await.unwrap();
            expected.push(n);
        }
        tx.commit().await.unwrap();
    }
    let events = Events::new(db.clone()).list(0, 1000).await.unwrap();
    let order: Vec<usize> = events.iter().map(|e| e.payload["n"].as_u64().unwrap() as usize).collect();
    assert_eq!(order, expected, "events are numbered in the order they were appended");
    let audit = Audit::new(db.clone());
    let rows = audit.list(0, 1000).await.unwrap();
    let order: Vec<usize> = rows.iter().map(|r| r.event.subject.parse().unwrap()).collect();
    assert_eq!(order, expected, "audit rows are chained in the order they were appended");
    assert!(matches!(audit.verify().await.unwrap(), Verdict::Intact { .. }));
}
