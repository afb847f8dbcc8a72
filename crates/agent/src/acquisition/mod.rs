//! The background acquisition pipeline, as durable tasks that call
//! capabilities through the one invoke path as the `task` actor — so every
//! outside effect is claimed in the ledger, audited, and authorised by an
//! automation grant or an approval like any other automated call:
//!
//! - `evaluateAcquisition`: for wanted slots, search the indexers, record
//!   what they offer, resolve identities, pick the best release the slot's
//!   quality allows, draft a plan, and submit it only when a grant covers
//!   the submission (otherwise the plan stays a draft for a human);
//! - `syncDownloads`: read the client's state of every open download and
//!   record it; the store publishes `download.status_changed` once per
//!   change, a download that completes queues its import, and one that
//!   fails or stops moving opens a decision (`watch`);
//! - `syncFeeds`: read each indexer's newest releases (its RSS feed) and
//!   offer the new ones to every wanted slot of their title at once, so
//!   the wanted are not each searched again and again;
//! - `refreshSeries`: read the wanted series again from TMDB (twice a day),
//!   so new episodes are recorded and wanted and moved air dates move;
//! - `verifyAndImport`: plan the organization of a completed download and
//!   execute it; success marks the download imported and the slot
//!   satisfied (`organization.changed`). Without authority it asks a human
//!   to approve the organization, and their approval queues it again; an
//!   import that fails for good opens a decision.
//!
//! A scheduler queues `syncDownloads` and `evaluateAcquisition` at an
//! interval and `syncFeeds` at a longer one; dedupe keys keep one of each queued at a time. A submit that
//! failed is tried again on a backoff, at once when what it may have failed
//! on changes ([`cause_may_have_cleared`]).

mod choose;
mod episodes;
mod evaluate;
mod feeds;
mod import;
mod refresh;
mod sync;
pub mod watch;

pub use sync::SyncDownloads;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::pipeline::{Invocation, Origin, Services};
use crate::settings::Settings;
use crate::tasks::{NewTask, Task, Tasks, Worker};

pub const EVALUATE_ACQUISITION: &str = "evaluateAcquisition";
pub const SYNC_DOWNLOADS: &str = "syncDownloads";
pub const VERIFY_AND_IMPORT: &str = "verifyAndImport";
pub const SYNC_FEEDS: &str = "syncFeeds";
pub const REFRESH_SERIES: &str = "refreshSeries";
/// How often the wanted series are read again from TMDB.
pub const REFRESH_EVERY: Duration = Duration::from_secs(12 * 60 * 60);
/// The kinds the schedule queues by itself, over and over: the Tasks list
/// folds them away unless they failed.
pub const SWEEP_KINDS: &[&str] = &[SYNC_DOWNLOADS, EVALUATE_ACQUISITION, SYNC_FEEDS, REFRESH_SERIES];
/// The task kinds whose drafts are the sweep's own to submit: the search
/// and the feed sync.
const SWEEP_PRINCIPALS: &[&str] = &[EVALUATE_ACQUISITION, SYNC_FEEDS];

/// Gives `worker` the pipeline's handlers.
pub fn register(worker: &mut Worker, svc: &Services, settings: &Arc<Settings>) {
    worker.handle(EVALUATE_ACQUISITION, Arc::new(evaluate::EvaluateAcquisition(svc.clone())));
    worker.handle(SYNC_DOWNLOADS, Arc::new(sync::SyncDownloads(svc.clone(), settings.clone())));
    worker.handle(VERIFY_AND_IMPORT, Arc::new(import::VerifyAndImport(svc.clone())));
    worker.handle(SYNC_FEEDS, Arc::new(feeds::SyncFeeds(svc.clone())));
    worker.handle(REFRESH_SERIES, Arc::new(refresh::RefreshSeries(svc.clone())));
}

/// Queues the periodic tasks until `stop` is cancelled: the sweeps every
/// `interval`, the feed sync every `feeds` (when it is on).
/// Every node of a cluster keeps this schedule, so it goes on when any
/// node dies: a node skips its turn when another's sweep was queued
/// within most of an interval, and the dedupe key keeps one sweep queued
/// or running at a time, claimed by one worker.
pub async fn schedule(
    svc: Services,
    interval: Duration,
    feeds: Option<Duration>,
    with_sweeps: &'static [&'static str],
    stop: CancellationToken,
) {
    let tasks = svc.domain.tasks().clone();
    let mut kinds = vec![(SYNC_DOWNLOADS, interval), (EVALUATE_ACQUISITION, interval), (REFRESH_SERIES, REFRESH_EVERY)];
    // Tasks that go with the sweeps (notifications: what one sweep did is
    // one message).
    kinds.extend(with_sweeps.iter().map(|kind| (*kind, interval)));
    // The feeds are read on their own, longer interval.
    kinds.extend(feeds.map(|every| (SYNC_FEEDS, every)));
    loop {
        for &(kind, every) in &kinds {
            match tasks.queued_within(kind, every.mul_f64(0.9)).await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, kind, "cannot read when the sweep last ran; queued anyway"),
            }
            if let Err(e) = enqueue(&tasks, kind, None, Value::Object(Default::default()), kind).await {
                tracing::warn!(error = %e, kind, "cannot queue a scheduled task");
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}

/// A human decided an approval: an approved organization or replacement
/// plan is carried out by its download's `verifyAndImport`, queued again now.
pub async fn approval_decided(svc: &Services, approval: &crate::authz::Approval) -> Result<(), String> {
    let carried_by_import = matches!(approval.plan_type.as_str(), "organization" | "replacement");
    if approval.status != crate::authz::ApprovalStatus::Approved || !carried_by_import {
        return Ok(());
    }
    let organization = svc.domain.organization(&approval.plan_id).await.map_err(|e| e.to_string())?;
    let download = organization.download_task_id;
    let key = format!("{VERIFY_AND_IMPORT}:{download}");
    let tasks = svc.domain.tasks().clone();
    enqueue(&tasks, VERIFY_AND_IMPORT, Some(&download), serde_json::json!({ "downloadTaskId": download }), &key)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Something a failed submit may have failed on changed (a service passed
/// its Test, the setup or a setting changed): every drafted plan waiting
/// out a backoff may be tried now, and the sweep is queued to try them.
/// Best effort: a store that cannot be reached leaves the backoffs to run
/// out by themselves.
pub async fn cause_may_have_cleared(svc: &Services, what: &str) {
    let freed = match svc.domain.retry_submits_now().await {
        Ok(freed) => freed,
        Err(e) => {
            tracing::warn!(error = %e, what, "could not let failed submits be tried again");
            return;
        }
    };
    if freed == 0 {
        return;
    }
    tracing::info!(plans = freed, what, "failed submits are tried again");
    let tasks = svc.domain.tasks().clone();
    let empty = Value::Object(Default::default());
    if let Err(e) = enqueue(&tasks, EVALUATE_ACQUISITION, None, empty, EVALUATE_ACQUISITION).await {
        tracing::warn!(error = %e, "could not queue the sweep after a change");
    }
}

/// Queues a pipeline task unless one with the same dedupe key is queued or
/// running.
pub async fn enqueue(
    tasks: &Tasks,
    kind: &str,
    subject: Option<&str>,
    payload: Value,
    dedupe_key: &str,
) -> Result<Task, crate::tasks::TaskError> {
    let (task, _) = tasks
        .enqueue(&NewTask {
            kind: kind.to_string(),
            subject: subject.map(str::to_string),
            payload,
            dedupe_key: Some(dedupe_key.to_string()),
            max_attempts: 5,
            created_by: "pipeline".into(),
        })
        .await?;
    Ok(task)
}

/// Calls a capability for `task`; an error only when no status came back.
async fn call(svc: &Services, task: &Task, id: &str, input: Value) -> Result<Invocation, String> {
    svc.caps.invoke(&Origin::task(task), id, &input).await.map_err(|e| format!("{id}: {e}"))
}
