//! The store under cancellation: a writer given up on while it waits for
//! SQLite's write lock, or anywhere inside its transaction (an HTTP client
//! that went away, a task whose lease was lost, a worker stopped), must not
//! leave the lock, or an open transaction, behind.

use std::time::Duration;

use capstan::store::Db;
use capstan_tests::db::{Backend, fresh_url};

#[tokio::test(flavor = "multi_thread")]
async fn a_writer_cancelled_while_waiting_for_the_lock_leaves_no_lock_behind() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_url(Backend::Sqlite, dir.path()).await;
    let db = Db::open(&url).await.unwrap();
    sqlx::query("CREATE TABLE probe (n BIGINT NOT NULL)").execute(&db.pool).await.unwrap();

    let holder = db.begin_write().await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(300), db.begin_write()).await;
    assert!(waited.is_err(), "the second writer waits for the first");
    holder.commit().await.unwrap();
    // Had the abandoned BEGIN kept its connection, it would hold the lock from here on.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let other = Db::connect(&url).await.unwrap();
    let write = tokio::time::timeout(Duration::from_secs(3), async {
        let mut tx = other.begin_write().await?;
        sqlx::query("INSERT INTO probe (n) VALUES (1)").execute(&mut *tx).await?;
        tx.commit().await
    })
    .await;
    assert!(matches!(write, Ok(Ok(()))), "another writer gets the lock at once: {write:?}");
    // And what this pool writes outside a transaction is committed, not
    // swallowed by a transaction left open on one of its connections.
    for n in 2..6 {
        sqlx::query("INSERT INTO probe (n) VALUES ($1)").bind(n).execute(&db.pool).await.unwrap();
    }
    let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM probe").fetch_one(&other.pool).await.unwrap();
    assert_eq!(seen, 5);
}

/// A worker whose claim loop is cancelled at every point of its write
/// transaction in turn: after each, another process can write at once.
#[tokio::test(flavor = "multi_thread")]
async fn claims_cancelled_at_any_point_leave_no_lock_behind() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_url(Backend::Sqlite, dir.path()).await;
    let db = Db::open(&url).await.unwrap();
    let tasks = capstan::tasks::Tasks::new(db.clone());
    let other = Db::connect(&url).await.unwrap();
    for round in 0..300u64 {
        let t = tasks.clone();
        let claim = tokio::spawn(async move {
            loop {
                let _ = t.claim("x", Duration::from_secs(10)).await;
            }
        });
        tokio::time::sleep(Duration::from_micros(200 + (round * 37) % 3000)).await;
        claim.abort();
        let _ = claim.await;
        let write = tokio::time::timeout(Duration::from_secs(2), async {
            let mut tx = other.begin_write().await?;
            sqlx::query("UPDATE task SET updated_at = 0 WHERE id = 'none'").execute(&mut *tx).await?;
            tx.commit().await
        })
        .await;
        assert!(matches!(write, Ok(Ok(()))), "round {round}: {write:?}");
    }
}

/// Ledger claims commit with the write-ahead log synced (they must survive
/// a power cut, the effect may follow at once); other writes commit with
/// `synchronous = NORMAL`, durable against a crashed process.
#[tokio::test(flavor = "multi_thread")]
async fn claims_are_synced_to_disk_and_other_writes_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&fresh_url(Backend::Sqlite, dir.path()).await).await.unwrap();
    let level = |mut tx: sqlx::Transaction<'static, sqlx::Any>| async move {
        let level: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&mut *tx).await.unwrap();
        tx.rollback().await.unwrap();
        level
    };
    assert_eq!(level(db.begin_durable_write().await.unwrap()).await, 2, "FULL for claims");
    assert_eq!(level(db.begin_write().await.unwrap()).await, 1, "NORMAL for the rest");
    // The same for the group commits: a batch of claims syncs once. The
    // writer keeps its connection between batches and sets the level only
    // when it changes: whatever the order, each batch has its own.
    fn batched<'t>(
        tx: &'t mut capstan::store::batch::Tx<'_>,
    ) -> futures_util::future::BoxFuture<'t, Result<i64, sqlx::Error>> {
        Box::pin(async move { sqlx::query_scalar("PRAGMA synchronous").fetch_one(&mut **tx).await })
    }
    for durable in [true, true, false, false, true, false] {
        let (level, expected) =
            if durable { (db.write_durable(batched).await.unwrap(), 2) } else { (db.write(batched).await.unwrap(), 1) };
        assert_eq!(level, expected, "FULL for batched claims, NORMAL for other batched writes");
    }
}
