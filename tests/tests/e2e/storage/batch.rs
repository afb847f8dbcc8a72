//! Group commit: writes queued together commit in one transaction, each
//! caller answered only after it; a piece that fails — an error of its own,
//! a constraint, a panic — fails alone and leaves nothing, while the
//! pieces batched with it are kept; and the audit log's hash chain holds
//! under many concurrent appends — also when two processes' writers append
//! audit rows and publish events together, locking the same head rows in
//! whatever order their batches hold them.

use std::time::Duration;

use capstan::audit::{Audit, NewAuditEntry, RowQueue, Verdict};
use capstan::store::Db;
use capstan_tests::both_backends;
use capstan_tests::db::{Backend, fresh_url};
use futures_util::future::join_all;

async fn open(backend: Backend, dir: &std::path::Path) -> Db {
    let db = Db::open(&fresh_url(backend, dir).await).await.unwrap();
    sqlx::query("CREATE TABLE probe (n BIGINT NOT NULL UNIQUE)").execute(&db.pool).await.unwrap();
    db
}

/// Inserts `n`, then fails when `n` is 13 (after writing) and panics when
/// it is 17; answers the transaction it ran in where the backend says.
async fn insert(db: &Db, n: i64, backend: Backend) -> Result<Option<i64>, sqlx::Error> {
    db.write(move |tx| {
        Box::pin(async move {
            sqlx::query("INSERT INTO probe (n) VALUES ($1)").bind(n).execute(&mut **tx).await?;
            match n {
                13 => return Err(sqlx::Error::Protocol("thirteen is refused".into())),
                17 => panic!("seventeen panics"),
                _ => {}
            }
            if backend == Backend::Postgres {
                let txid: i64 = sqlx::query_scalar("SELECT txid_current()").fetch_one(&mut **tx).await?;
                return Ok(Some(txid));
            }
            Ok(None)
        })
    })
    .await
}

async fn a_failing_write_fails_alone_and_its_batch_mates_are_kept(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(backend, dir.path()).await;
    // Holds the writer while the others queue, so they go in one batch.
    let slow = db.write(|tx| {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            sqlx::query("INSERT INTO probe (n) VALUES (0)").execute(&mut **tx).await.map(|_| ())
        })
    });
    let queued = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        // 5 is written twice: the second is refused by the constraint.
        join_all([1i64, 2, 3, 4, 5, 5, 13, 17, 20, 21, 22].map(|n| insert(&db, n, backend))).await
    };
    let (slow, answers) = tokio::join!(slow, queued);
    slow.unwrap();
    let failed: Vec<usize> = answers.iter().enumerate().filter(|(_, a)| a.is_err()).map(|(i, _)| i).collect();
    assert_eq!(failed, [5, 6, 7], "the duplicate, 13 and 17 fail, nobody else: {answers:?}");
    let mut kept: Vec<i64> = sqlx::query_scalar("SELECT n FROM probe").fetch_all(&db.pool).await.unwrap();
    kept.sort();
    assert_eq!(kept, [0, 1, 2, 3, 4, 5, 20, 21, 22], "what failed left nothing, the rest is there");
    if backend == Backend::Postgres {
        let txids: std::collections::BTreeSet<i64> =
            answers.iter().filter_map(|a| a.as_ref().ok()?.as_ref()).copied().collect();
        assert_eq!(txids.len(), 1, "the eight kept pieces committed in one transaction: {txids:?}");
    }
}

/// Writer `w`'s `i`th audit row.
fn appended(w: usize, i: usize) -> NewAuditEntry {
    NewAuditEntry {
        actor_kind: "cli".into(),
        principal: format!("writer-{w}"),
        action: "test.append".into(),
        subject: format!("{w}/{i}"),
        outcome: "succeeded".into(),
        ..NewAuditEntry::default()
    }
}

async fn the_audit_chain_holds_under_concurrent_batched_appends(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&fresh_url(backend, dir.path()).await).await.unwrap();
    let audit = Audit::new(db.clone());
    let writers = (0..16).map(|w| {
        let audit = audit.clone();
        tokio::spawn(async move {
            for i in 0..100 {
                audit.append(&appended(w, i)).await.unwrap();
            }
        })
    });
    for writer in join_all(writers).await {
        writer.unwrap();
    }
    assert_eq!(audit.verify().await.unwrap(), Verdict::Intact { events: 1600 });
}

/// Standalone rows (a read call's) from many callers are appended together,
/// several callers' to an insert, up to more rows than one insert takes:
/// every row is kept, a caller's rows in order one after the other, and
/// the chain holds.
async fn rows_appended_together_keep_the_chain_and_each_callers_order(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&fresh_url(backend, dir.path()).await).await.unwrap();
    let queue = RowQueue::start(db.clone());
    let callers = (0..16).map(|w| {
        let queue = queue.clone();
        tokio::spawn(async move {
            for i in 0..40 {
                // Every tenth append is three rows of one call; the first
                // caller's first is a hundred, more than one insert takes.
                let rows = match (w, i) {
                    (0, 0) => 100,
                    (_, i) if i % 10 == 0 => 3,
                    _ => 1,
                };
                let rows = (0..rows).map(|k| appended(w, i * 1000 + k)).collect();
                queue.append(rows).await.unwrap();
            }
        })
    });
    for caller in join_all(callers).await {
        caller.unwrap();
    }
    let audit = Audit::new(db.clone());
    let expected = 16 * 40 + 16 * 4 * 2 + 97;
    assert_eq!(audit.verify().await.unwrap(), Verdict::Intact { events: expected });
    let subjects: Vec<String> = audit.list(0, 2000).await.unwrap().into_iter().map(|e| e.event.subject).collect();
    for w in 0..16 {
        for i in (0..40).filter(|i| i % 10 == 0) {
            let first = subjects.iter().position(|s| *s == format!("{w}/{}", i * 1000)).unwrap();
            let n = if (w, i) == (0, 0) { 100 } else { 3 };
            let run: Vec<String> = (0..n).map(|k| format!("{w}/{}", i * 1000 + k)).collect();
            assert_eq!(subjects[first..first + n], run[..], "caller {w}'s rows of append {i} in order, together");
        }
    }
}

/// A caller whose row the database refuses (PostgreSQL refuses a NUL in
/// text) fails alone: the rows appended together with it are appended
/// again without it and kept.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_row_fails_only_its_caller() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&fresh_url(Backend::Postgres, dir.path()).await).await.unwrap();
    let queue = RowQueue::start(db.clone());
    let appends = (0..12).map(|w| {
        let queue = queue.clone();
        let mut row = appended(w, 0);
        if w == 5 {
            row.subject = "nul\0here".into();
        }
        tokio::spawn(async move { queue.append(vec![row]).await.is_ok() })
    });
    let kept: Vec<bool> = join_all(appends).await.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(kept.iter().filter(|ok| !**ok).count(), 1, "{kept:?}");
    assert!(!kept[5]);
    let audit = Audit::new(db);
    assert_eq!(audit.verify().await.unwrap(), Verdict::Intact { events: 11 });
}

/// Two database handles (two processes' writers) whose batches mix audit
/// appends (the audit head, then the event head) with published events
/// (the event head alone): every write succeeds, none is failed by the two
/// batches waiting on each other's rows, and the chain holds.
async fn two_writers_on_one_database_never_fail_each_others_writes(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_url(backend, dir.path()).await;
    let handles = [Db::open(&url).await.unwrap(), Db::open(&url).await.unwrap()];
    let writers = (0..16).map(|w| {
        let db = handles[w % 2].clone();
        tokio::spawn(async move {
            let audit = Audit::new(db.clone());
            let events = capstan::events::Events::new(db);
            let mut failures = Vec::new();
            for i in 0..60 {
                let result = if (w + i) % 2 == 0 {
                    audit.append(&appended(w, i)).await.map(|_| ())
                } else {
                    events.publish("test.event", None, &serde_json::json!({ "w": w, "i": i })).await.map(|_| ())
                };
                if let Err(e) = result {
                    failures.push(e.to_string());
                }
            }
            failures
        })
    });
    let failures: Vec<String> = join_all(writers).await.into_iter().flat_map(|w| w.unwrap()).collect();
    assert!(failures.is_empty(), "{} writes failed, the first: {}", failures.len(), failures[0]);
    let audit = Audit::new(handles[0].clone());
    assert_eq!(audit.verify().await.unwrap(), Verdict::Intact { events: 480 });
}

/// The writer keeps its connection between batches. When PostgreSQL drops
/// every connection (a restart, an administrator), the next write is still
/// committed, on a new connection.
#[tokio::test(flavor = "multi_thread")]
async fn the_writer_writes_on_after_postgres_drops_its_connection() {
    let backend = Backend::Postgres;
    let dir = tempfile::tempdir().unwrap();
    let db = open(backend, dir.path()).await;
    insert(&db, 1, backend).await.unwrap();
    {
        let other = Db::connect(&db.url).await.unwrap();
        let dropped: Vec<bool> = sqlx::query_scalar(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_all(&other.pool)
        .await
        .unwrap();
        assert!(dropped.len() >= 2, "the pool's and the writer's connections were dropped: {dropped:?}");
    }
    insert(&db, 2, backend).await.expect("the write after the connections were dropped");
    let kept: Vec<i64> = sqlx::query_scalar("SELECT n FROM probe ORDER BY n").fetch_all(&db.pool).await.unwrap();
    assert_eq!(kept, [1, 2]);
}

both_backends!(
    rows_appended_together_keep_the_chain_and_each_callers_order,
    a_failing_write_fails_alone_and_its_batch_mates_are_kept,
    the_audit_chain_holds_under_concurrent_batched_appends,
    two_writers_on_one_database_never_fail_each_others_writes
);
