//! What the pipeline notices going wrong, written down as decisions, once
//! per occurrence of a root cause (`Domain::open_occurrence`):
//!
//! - `download_failed:<downloadTaskId>`: the client reports an error or
//!   missing files, or less of the data than it had (it lost what was on
//!   disk and forgot it was finished);
//! - `download_stalled:<downloadTaskId>`: downloading (or stalled by the
//!   client) without progress for `acquisition.stalled_after_minutes`; a
//!   paused or queued torrent is waiting for someone, not stalled — except
//!   one nobody started: qBittorrent still fetching its metadata with
//!   nothing downloaded (`metaDL`: a magnet without peers), or not holding
//!   the torrent at all though none of it ever arrived (the add never
//!   took), which is stalled after the same time rather than failed;
//! - `import_failed:<organizationId>`: placing a completed download's files
//!   failed for good.
//!
//! Each offers "Find another release" (`download.replace`: the torrent
//! goes, its release is blocklisted, the title is wanted again), which only
//! a person, or a grant naming it, carries out. A cause that clears by
//! itself (the download moves again, a later import succeeds) resolves its
//! decision as `system:<task>` with the facts that show it.

use serde_json::{Value, json};

use crate::domain::{Answer, Decision, DomainError, DownloadStatus, DownloadTask};
use crate::pipeline::Services;
use crate::settings::Settings;
use crate::store::now_ms;

/// Who answers a decision whose cause cleared by itself.
const BY: &str = "system:syncDownloads";

/// Statuses in which a download is getting somewhere, or got there.
const MOVING: &[DownloadStatus] = &[
    DownloadStatus::Downloading,
    DownloadStatus::Queued,
    DownloadStatus::Completed,
    DownloadStatus::Importing,
    DownloadStatus::Imported,
];

fn failed_root(download: &str) -> String {
    format!("download_failed:{download}")
}

fn stalled_root(download: &str) -> String {
    format!("download_stalled:{download}")
}

/// What the sync saw beside what it recorded.
pub struct Seen<'a> {
    /// qBittorrent's own state name.
    pub client_state: Option<&'a str>,
    /// The progress recorded before this sync.
    pub progress_before: Option<f64>,
}

/// What the client said about a download, as evidence.
fn facts(download: &DownloadTask, seen: &Seen<'_>) -> Value {
    json!({
        "downloadTaskId": download.id,
        "status": download.status,
        "progress": download.progress,
        "progressBefore": seen.progress_before,
        "clientState": seen.client_state,
        "lastMovedAt": download.progress_at,
        "seenAt": now_ms(),
    })
}

/// Why a download has not started, when nobody started it: qBittorrent is
/// still fetching its metadata with nothing downloaded, or does not hold
/// the torrent though nothing of it ever arrived. Nothing was lost either
/// way, so it is waited for as long as a stalled one, not failed at once.
fn not_started(download: &DownloadTask, client_state: Option<&str>) -> Option<&'static str> {
    if download.progress > 0.0 {
        return None;
    }
    match (client_state, download.status) {
        (Some("metaDL" | "forcedMetaDL"), _) => {
            Some("qBittorrent is still fetching the torrent's metadata and has found no peer to get it from")
        }
        (None, DownloadStatus::Missing) => {
            Some("qBittorrent does not hold the torrent: it was never added, or was removed")
        }
        _ => None,
    }
}

/// The option that gives the download up for another release: a person's
/// choice (or a grant naming `download.replace`), never a repair.
fn another_release(download: &str, why: &str) -> Value {
    json!({
        "id": "another-release",
        "label": "Find another release",
        "capabilityId": "download.replace",
        "input": {"downloadTaskId": download, "reason": why},
    })
}

fn recheck(download: &str) -> Value {
    json!({
        "id": "recheck",
        "label": "Force recheck",
        "capabilityId": "download.recheck",
        "input": {"downloadTaskId": download, "action": "recheck"},
    })
}

async fn clear(svc: &Services, decision: &Decision, facts: Value) -> Result<(), DomainError> {
    match svc.domain.answer_decision(&decision.id, &Answer::Cleared { facts }, BY).await {
        // Answered meanwhile by someone else: their answer stands.
        Ok(_) | Err(DomainError::Conflict(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Looks at a download as the sync just recorded it.
pub(crate) async fn download_seen(
    svc: &Services,
    settings: &Settings,
    download: &DownloadTask,
    seen: &Seen<'_>,
) -> Result<(), DomainError> {
    let domain = &svc.domain;
    let status = download.status;
    let lost = seen.progress_before.filter(|before| download.progress + 1e-9 < *before);
    let not_started = not_started(download, seen.client_state);
    let seen = facts(download, seen);

    let failed = failed_root(&download.id);
    let problem = match (status, lost) {
        (DownloadStatus::Missing, _) if not_started.is_some() => None,
        (DownloadStatus::Missing | DownloadStatus::Failed, _) => {
            Some(format!("qBittorrent reports the download {status}"))
        }
        // A check in progress counts the pieces again from nothing.
        (_, Some(before)) if status != DownloadStatus::Queued => Some(format!(
            "the data is gone: qBittorrent now has {:.0}% of it, it had {:.0}%",
            download.progress * 100.0,
            before * 100.0
        )),
        _ => None,
    };
    if let Some(problem) = problem {
        let options = json!([
            recheck(&download.id),
            another_release(&download.id, &problem),
            {"id": "dismiss", "label": "Leave it", "action": "dismiss"}
        ]);
        let evidence = json!({"download": seen, "problem": problem});
        domain
            .open_occurrence(&failed, "download_failed", &download.id, &options, &evidence, download.progress_at)
            .await?;
    } else if MOVING.contains(&status)
        && let Some(open) = domain.undecided_of_root(&failed).await?
    {
        clear(svc, &open, seen.clone()).await?;
    }

    let stalled = stalled_root(&download.id);
    let minutes = settings.get("acquisition.stalled_after_minutes").await.ok().and_then(|v| v.as_i64()).unwrap_or(60);
    let idle_ms = now_ms() - download.progress_at;
    let stallable = matches!(status, DownloadStatus::Downloading | DownloadStatus::Stalled) || not_started.is_some();
    if stallable && idle_ms >= minutes * 60_000 {
        let wait = json!({"id": "wait", "label": "Keep waiting", "action": "dismiss"});
        let idle = idle_ms / 60_000;
        let problem = match not_started {
            None => format!("no progress for {idle} minutes (the limit is {minutes})"),
            Some(why) => format!("not started after {idle} minutes (the limit is {minutes}): {why}"),
        };
        let another = another_release(&download.id, &problem);
        // Resuming starts a torrent the client holds and stopped; one it is
        // still fetching metadata for, or does not hold, it cannot.
        let options = match not_started {
            None => json!([
                {"id": "resume", "label": "Resume", "capabilityId": "download.recheck",
                 "input": {"downloadTaskId": download.id, "action": "resume"}},
                another,
                wait
            ]),
            Some(_) => json!([another, wait]),
        };
        let evidence = json!({"download": seen, "problem": problem});
        domain
            .open_occurrence(&stalled, "download_stalled", &download.id, &options, &evidence, download.progress_at)
            .await?;
    } else if let Some(open) = domain.undecided_of_root(&stalled).await? {
        let before = open.evidence.pointer("/download/progress").and_then(Value::as_f64).unwrap_or(0.0);
        let done = matches!(status, DownloadStatus::Completed | DownloadStatus::Importing | DownloadStatus::Imported);
        if download.progress > before || done {
            clear(svc, &open, seen).await?;
        }
    }
    Ok(())
}

/// An import that failed and will not be tried again by itself.
pub async fn import_failed(
    svc: &Services,
    organization: &str,
    download: &str,
    task_id: &str,
    error: &str,
) -> Result<(), DomainError> {
    let root = format!("import_failed:{organization}");
    let options = json!([
        {"id": "retry", "label": "Try the import again", "action": "retry", "taskId": task_id},
        another_release(download, &format!("the import failed: {}", error.chars().take(300).collect::<String>())),
        {"id": "dismiss", "label": "Leave it", "action": "dismiss"}
    ]);
    let evidence = json!({"organizationId": organization, "downloadTaskId": download, "error": error});
    svc.domain.open_occurrence(&root, "import_failed", organization, &options, &evidence, now_ms()).await?;
    Ok(())
}

/// An import that succeeded: a failure asked about before has cleared.
pub(crate) async fn import_succeeded(svc: &Services, organization: &str) -> Result<(), DomainError> {
    let root = format!("import_failed:{organization}");
    if let Some(open) = svc.domain.undecided_of_root(&root).await? {
        let facts = json!({"organizationId": organization, "imported": true, "seenAt": now_ms()});
        match svc.domain.answer_decision(&open.id, &Answer::Cleared { facts }, "system:verifyAndImport").await {
            Ok(_) | Err(DomainError::Conflict(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
