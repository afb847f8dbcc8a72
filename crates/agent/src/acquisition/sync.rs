//! `syncDownloads`: asks `download.status` what the client is doing with
//! every open download and records it (with the client's state, speed,
//! seeds and ETA, for the Library). Paths the client reports are stored
//! relative to the `downloads` root, which is how the organizer names them.
//! A download that reaches `completed` queues `verifyAndImport` once; what
//! went wrong with one is written down as a decision (`super::watch`).

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{VERIFY_AND_IMPORT, call, enqueue};
use crate::domain::DomainError;
use crate::domain::DownloadStatus;
use crate::pipeline::Services;
use crate::pipeline::failed_attempt;
use crate::runtime::Status;
use crate::settings::Settings;
use crate::tasks::{Task, TaskHandler, worker::HandlerFuture};

pub(crate) const STATUS_CAPABILITY: &str = "download.status";

pub struct SyncDownloads(pub Services, pub Arc<Settings>);

/// `path` relative to the `downloads` root, when it lies under it.
fn relative_to_downloads(svc: &Services, path: &str) -> Option<String> {
    let roots = svc.caps.runtime().root_paths();
    let relative = Path::new(path).strip_prefix(roots.get("downloads")?).ok()?;
    let text = relative.to_str()?.to_string();
    (!text.is_empty()).then_some(text)
}

/// What the client says of a download besides its status, for the
/// Library to show (state, speed, seeds, ETA).
fn client_view(item: &Value) -> crate::domain::ClientView<'_> {
    crate::domain::ClientView {
        state: item.get("clientState").and_then(Value::as_str),
        download_speed: item.get("downloadSpeed").and_then(Value::as_i64),
        seeds: item.get("seeds").and_then(Value::as_i64),
        eta_seconds: item.get("etaSeconds").and_then(Value::as_i64),
    }
}

impl TaskHandler for SyncDownloads {
    fn run(&self, task: Task) -> HandlerFuture {
        let (svc, settings) = (self.0.clone(), self.1.clone());
        Box::pin(async move {
            let inv = call(&svc, &task, STATUS_CAPABILITY, json!({})).await?;
            if inv.status != Status::Succeeded {
                return Err(failed_attempt(STATUS_CAPABILITY, &inv));
            }
            let output = inv.output.unwrap_or(Value::Null);
            let items = output.get("downloads").and_then(Value::as_array).cloned().unwrap_or_default();
            let tasks = svc.domain.tasks().clone();
            let mut changes = Vec::new();
            for item in items {
                let (Some(id), Some(status)) =
                    (item.get("downloadTaskId").and_then(Value::as_str), item.get("status").and_then(Value::as_str))
                else {
                    continue;
                };
                let progress = item.get("progress").and_then(Value::as_f64).unwrap_or(0.0).clamp(0.0, 1.0);
                let path = item.get("contentPath").and_then(Value::as_str).and_then(|p| relative_to_downloads(&svc, p));
                let before = svc.domain.download(id).await.ok().map(|d| d.progress);
                let view = client_view(&item);
                let recorded = match DownloadStatus::parse(status) {
                    Ok(status) => svc.domain.update_download(id, status, progress, path.as_deref(), Some(&view)).await,
                    Err(unknown) => Err(DomainError::Invalid(unknown.to_string())),
                };
                if let Ok((download, _)) = &recorded {
                    let seen = super::watch::Seen {
                        client_state: item.get("clientState").and_then(Value::as_str),
                        progress_before: before,
                    };
                    if let Err(e) = super::watch::download_seen(&svc, &settings, download, &seen).await {
                        tracing::warn!(download = %id, error = %e, "cannot record what went wrong with a download");
                    }
                }
                match recorded {
                    Ok((_, Some(change))) => {
                        if change.to == DownloadStatus::Completed {
                            let key = format!("{VERIFY_AND_IMPORT}:{id}");
                            enqueue(&tasks, VERIFY_AND_IMPORT, Some(id), json!({ "downloadTaskId": id }), &key)
                                .await
                                .map_err(|e| e.to_string())?;
                        }
                        changes.push(json!({ "downloadTaskId": id, "from": change.from, "to": change.to }));
                    }
                    Ok((_, None)) => {}
                    // Being imported, or moved on by someone else: their state stands.
                    Err(DomainError::Conflict(_)) => {}
                    Err(e) => return Err(e.to_string().into()),
                }
            }
            Ok(json!({ "changes": changes }))
        })
    }
}
