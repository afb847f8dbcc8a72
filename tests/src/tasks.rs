//! Running one background task to its end, as a worker would: queued, then
//! waited for until it ends.

use std::time::{Duration, Instant};

use capstan::store::Db;
use capstan::tasks::{NewTask, Task, TaskStatus, Tasks};
use serde_json::Value;

/// Queues a `kind` task with `payload` (one attempt) and waits until a
/// running worker has carried it out; returns it as it ended, however it
/// ended.
pub async fn run_once(db: &Db, kind: &str, payload: Value) -> Task {
    let tasks = Tasks::new(db.clone());
    let new = NewTask {
        kind: kind.into(),
        subject: None,
        payload,
        dedupe_key: None,
        max_attempts: 1,
        created_by: "test".into(),
    };
    let (task, _) = tasks.enqueue(&new).await.unwrap();
    let started = Instant::now();
    loop {
        let now = tasks.get(&task.id).await.unwrap().unwrap();
        if !matches!(now.status, TaskStatus::Queued | TaskStatus::Running) {
            return now;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{kind} never ended: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// [`run_once`] for a task that must succeed.
pub async fn run_to_end(db: &Db, kind: &str, payload: Value) -> Task {
    let task = run_once(db, kind, payload).await;
    assert_eq!(task.status, TaskStatus::Succeeded, "{kind} ended {:?}: {:?}", task.status, task.last_error);
    task
}
