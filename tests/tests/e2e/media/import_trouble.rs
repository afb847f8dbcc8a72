//! An import that fails for good becomes one `import_failed` decision, on
//! both backends: a library destination that already holds another file
//! stops `organize.execute` (nothing is overwritten), the `verifyAndImport`
//! task that gives up opens the decision with the reason and a retry of
//! itself, a second failure does not ask again, and once the obstacle is
//! gone and an import succeeds the system resolves it with the fact.

use std::time::{Duration, Instant};

use capstan::tasks::{NewTask, Task, TaskStatus, Tasks};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::grants::for_an_hour;
use serde_json::json;

use super::organize::{Env, FOLDER, PLACED, completed_download, dune_on_disk, env, write};

/// Queues one `verifyAndImport` of `download` with a single attempt and
/// waits until it has ended.
async fn import_once(env: &Env, download: &str) -> Task {
    let tasks = Tasks::new(env.svc.db.clone());
    let new = NewTask {
        kind: capstan::acquisition::VERIFY_AND_IMPORT.into(),
        subject: Some(download.into()),
        payload: json!({"downloadTaskId": download}),
        dedupe_key: None,
        max_attempts: 1,
        created_by: "test".into(),
    };
    let id = tasks.enqueue(&new).await.unwrap().0.id;
    let started = Instant::now();
    loop {
        let task = tasks.get(&id).await.unwrap().unwrap();
        if matches!(task.status, TaskStatus::Succeeded | TaskStatus::Dead) {
            return task;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the import never ended: {task:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn an_import_that_fails_for_good_is_asked_about_once_and_cleared_by_the_next_success(backend: Backend) {
    let env = env(backend, &[]).await;
    dune_on_disk(&env);
    let (slot, download) = completed_download(env.domain(), FOLDER).await;
    let theirs = b"a file someone put there first";
    write(&env.library, PLACED, theirs);
    env.svc.authz.create_grant(&for_an_hour("organize.execute"), "admin:alice").await.unwrap();
    let worker = std::sync::Arc::new(env.app.worker(&env._host.config));
    tokio::spawn(worker.run(std::future::pending()));

    let failed = import_once(&env, &download.id).await;
    assert_eq!(failed.status, TaskStatus::Dead, "{failed:?}");
    let organization = env.domain().organizations_for_download(&download.id).await.unwrap();
    let organization = organization.last().unwrap().id.clone();
    let root = format!("import_failed:{organization}");
    let asked = env.domain().decisions_of_root(&root).await.unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let decision = &asked[0];
    assert_eq!((decision.kind.as_str(), decision.status.as_str()), ("import_failed", "open"));
    assert_eq!(decision.subject.as_deref(), Some(organization.as_str()));
    assert_eq!(decision.evidence["downloadTaskId"], download.id.as_str());
    let error = decision.evidence["error"].as_str().unwrap();
    assert!(error.contains("conflict"), "the reason is kept: {error}");
    assert_eq!(decision.options[0]["action"], "retry");
    assert_eq!(decision.options[0]["taskId"], failed.id.as_str(), "it retries the import that failed");
    assert_eq!(std::fs::read(env.library.join(PLACED)).unwrap(), theirs, "their file was not overwritten");

    // Failing again while it is still undecided does not ask again.
    assert_eq!(import_once(&env, &download.id).await.status, TaskStatus::Dead);
    assert_eq!(env.domain().decisions_of_root(&root).await.unwrap().len(), 1);

    // The operator moves their file away; the next import succeeds and
    // the system closes the question with how it knows.
    std::fs::remove_file(env.library.join(PLACED)).unwrap();
    let imported = import_once(&env, &download.id).await;
    assert_eq!(imported.status, TaskStatus::Succeeded, "{imported:?}");
    let closed = env.domain().decision(&decision.id).await.unwrap();
    assert_eq!(
        (closed.status.as_str(), closed.resolved_by.as_deref()),
        ("resolved", Some("system:verifyAndImport")),
        "{closed:?}"
    );
    let resolution = closed.resolution.unwrap();
    assert_eq!(resolution["facts"]["imported"], true, "{resolution}");
    assert_eq!(env.domain().download(&download.id).await.unwrap().status, capstan::domain::DownloadStatus::Imported);
    assert_eq!(env.domain().slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Satisfied);
    assert_eq!(env.domain().decisions_of_root(&root).await.unwrap().len(), 1, "nothing new was opened");
}

both_backends!(an_import_that_fails_for_good_is_asked_about_once_and_cleared_by_the_next_success);
