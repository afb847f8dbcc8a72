//! Telling others what happened: `sendNotifications` tells the
//! operator's notification targets, and [`rescan`] asks the media servers
//! to rescan the folders imports went into. `sendNotifications` tells the
//! operator's notification targets what happened since they were last told. A target is a `notify.*`
//! capability (`notify.webhook`, `notify.ntfy`, `notify.telegram`,
//! `notify.discord`) whose outbound service is
//! set up; the kinds of events told are the setting `notifications.events`
//! ([`events::KINDS`]). Each target keeps its place in the event log
//! (`notify_target`): a new target starts at the log's end, everything
//! after its place becomes one message (several imports of a sweep are one
//! message), and the place moves on only once the message is sent. A send
//! that fails is recorded with its reason and made again by the next run,
//! for at most [`MAX_FAILURES`] runs, after which those events are given
//! up (and the reason kept); a target no grant covers is not called and
//! says so. Nothing here waits on the pipeline, or holds it up: it is a
//! task of its own, queued with the sweeps.

pub mod events;
pub mod rescan;
mod targets;

use serde_json::{Value, json};

use crate::pipeline::{Origin, Services, failed_attempt};
use crate::runtime::Status;
use crate::settings::Settings;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

pub use targets::{NotifyTarget, TARGETS};

/// Where every target that was ever told something stands.
pub async fn targets_of(db: &crate::store::Db) -> Result<Vec<NotifyTarget>, sqlx::Error> {
    targets::all(db).await
}

/// The task kind.
pub const SEND_NOTIFICATIONS: &str = "sendNotifications";
/// Most events read for one target in one run; the rest wait for the next.
const MAX_EVENTS: i64 = 500;
/// Runs a message is tried before its events are given up.
pub const MAX_FAILURES: i64 = 10;

pub(crate) struct SendNotifications(pub Services, pub std::sync::Arc<Settings>);

/// The tasks that tell others what happened, queued with the sweeps.
pub const WITH_SWEEPS: &[&str] = &[SEND_NOTIFICATIONS, rescan::REFRESH_MEDIA_SERVERS];

/// Runs `sendNotifications` and `refreshMediaServers` on `worker`; the
/// sweeps' schedule queues them ([`WITH_SWEEPS`]).
pub fn register(worker: &mut crate::tasks::Worker, svc: &Services, settings: &std::sync::Arc<Settings>) {
    worker.handle(SEND_NOTIFICATIONS, std::sync::Arc::new(SendNotifications(svc.clone(), settings.clone())));
    worker.handle(rescan::REFRESH_MEDIA_SERVERS, std::sync::Arc::new(rescan::RefreshMediaServers(svc.clone())));
}

/// The kinds of events the operator chose.
pub async fn chosen(settings: &Settings) -> Vec<String> {
    let text = settings.get("notifications.events").await.ok().and_then(|v| v.as_str().map(str::to_string));
    text.unwrap_or_default()
        .split(',')
        .map(|k| k.trim().to_string())
        .filter(|k| events::KINDS.contains(&k.as_str()))
        .collect()
}

/// What each event of the log tells, read once per run however many
/// targets are told it.
type Read = std::collections::BTreeMap<i64, Option<events::Told>>;

/// Tells one target what happened after its place.
async fn tell(
    svc: &Services,
    task: &Task,
    capability: &str,
    kinds: &[String],
    read: &mut Read,
) -> Result<Value, HandlerError> {
    let sql = |e: sqlx::Error| HandlerError::Retry(e.to_string());
    let head = svc.domain.events().head().await.map_err(sql)?;
    let target = targets::load_or_start(&svc.db, capability, head).await.map_err(sql)?;
    let log = svc.domain.events().list(target.after_seq, MAX_EVENTS).await.map_err(sql)?;
    let Some(last) = log.last().map(|e| e.seq) else {
        return Ok(json!({"target": capability, "outcome": "nothing-new"}));
    };
    let mut told = Vec::new();
    for event in &log {
        let seen = match read.entry(event.seq) {
            std::collections::btree_map::Entry::Occupied(seen) => seen.into_mut(),
            std::collections::btree_map::Entry::Vacant(new) => new.insert(events::told(svc, event).await),
        };
        if let Some(t) = seen.as_ref().filter(|t| kinds.iter().any(|k| k == t.kind)) {
            told.push(t.clone());
        }
    }
    if told.is_empty() {
        targets::moved_on(&svc.db, capability, last, false, None).await.map_err(sql)?;
        return Ok(json!({"target": capability, "outcome": "nothing-to-tell", "after": last}));
    }
    let input = events::message(&told);
    // A target nobody granted is not called: it says what it needs.
    let origin = Origin::task(task);
    if !svc.caps.is_authorized(&origin, capability, &input).await.map_err(|e| e.to_string())? {
        let why = format!("no automation grant covers {capability}: grant it (or notify.*) to be told");
        return failed(svc, capability, &target, last, &why).await;
    }
    let sent = svc.caps.invoke(&origin, capability, &input).await.map_err(|e| format!("{capability}: {e}"))?;
    match sent.status {
        Status::Succeeded => {
            targets::moved_on(&svc.db, capability, last, true, None).await.map_err(sql)?;
            Ok(json!({"target": capability, "outcome": "sent", "events": told.len(), "after": last}))
        }
        _ => {
            let why = failed_attempt(capability, &sent).to_string();
            failed(svc, capability, &target, last, &why).await
        }
    }
}

/// Records a send that failed; past [`MAX_FAILURES`] the events are given up.
async fn failed(
    svc: &Services,
    capability: &str,
    target: &NotifyTarget,
    last: i64,
    why: &str,
) -> Result<Value, HandlerError> {
    let sql = |e: sqlx::Error| HandlerError::Retry(e.to_string());
    if target.failures + 1 >= MAX_FAILURES {
        let gave_up = format!("given up after {MAX_FAILURES} tries: {why}");
        targets::moved_on(&svc.db, capability, last, false, Some(&gave_up)).await.map_err(sql)?;
        return Ok(json!({"target": capability, "outcome": "given-up", "reason": gave_up}));
    }
    targets::failed(&svc.db, capability, why).await.map_err(sql)?;
    Ok(json!({"target": capability, "outcome": "failed", "reason": why, "failures": target.failures + 1}))
}

impl TaskHandler for SendNotifications {
    fn run(&self, task: Task) -> HandlerFuture {
        let (svc, settings) = (self.0.clone(), self.1.clone());
        Box::pin(async move {
            let kinds = chosen(&settings).await;
            let runtime = svc.caps.runtime().clone();
            let mut results = Vec::new();
            let mut read = Read::new();
            for (capability, service) in TARGETS {
                if runtime.has_service(service) && !kinds.is_empty() {
                    results.push(tell(&svc, &task, capability, &kinds, &mut read).await?);
                }
            }
            Ok(json!({ "targets": results }))
        })
    }
}
