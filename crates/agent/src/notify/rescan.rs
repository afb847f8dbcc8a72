//! `refreshMediaServers`: asks each media server that is set up —
//! Jellyfin, Emby, Plex — to rescan just the folders files went into since
//! it was last asked: the folder of every import and upgrade in the event
//! log after its place, joined to the library's path as that server sees
//! it (the setting `<server>_library` of `mediaserver.refresh`, else the
//! `library` root), all in one call per server per sweep. Each server
//! keeps its own place (`notify_target`, as `mediaserver.refresh:<server>`)
//! and its own failures, retried and given up as a notification is; a
//! server no grant covers is not asked and says so. Nothing waits on it.

use serde_json::{Value, json};

use super::targets;
use crate::pipeline::{Origin, Services, failed_attempt};
use crate::runtime::Status;
use crate::tasks::{HandlerError, HandlerFuture, Task, TaskHandler};

/// The task kind.
pub const REFRESH_MEDIA_SERVERS: &str = "refreshMediaServers";
/// The capability every server is asked through.
pub const CAPABILITY: &str = "mediaserver.refresh";
/// The media servers, each the outbound service of its name.
pub const SERVERS: [&str; 3] = ["jellyfin", "emby", "plex"];
/// Most folders one call asks for; the rest wait for the next run.
const MAX_FOLDERS: usize = 100;
/// Most events read for one server in one run.
const MAX_EVENTS: i64 = 500;

pub(crate) struct RefreshMediaServers(pub Services);

/// Where `server` keeps its place in the event log.
pub fn place_of(server: &str) -> String {
    format!("{CAPABILITY}:{server}")
}

/// The library folders (relative to the library) the imports in `log`
/// put files in, each once, in the order they came; and the last event
/// they cover when more than [`MAX_FOLDERS`] were found.
async fn folders_in(svc: &Services, log: &[crate::events::Event]) -> (Vec<String>, Option<i64>) {
    let mut folders: Vec<String> = Vec::new();
    for event in log {
        if event.kind != "organization.changed" || event.payload["status"] != "succeeded" {
            continue;
        }
        let Some(id) = event.payload["organizationId"].as_str() else { continue };
        let Ok(organization) = svc.domain.organization(id).await else { continue };
        let items = organization.items.as_array().cloned().unwrap_or_default();
        let mut these: Vec<String> = Vec::new();
        for destination in items.iter().filter_map(|i| i["destination"].as_str()) {
            let folder = destination.rsplit_once('/').map_or("", |(folder, _)| folder).to_string();
            if !folders.contains(&folder) && !these.contains(&folder) {
                these.push(folder);
            }
        }
        if folders.len() + these.len() > MAX_FOLDERS {
            // The rest is asked for next run, from this import on; one
            // import of more folders than a call takes is cut to them.
            if folders.is_empty() {
                these.truncate(MAX_FOLDERS);
                return (these, Some(event.seq));
            }
            return (folders, Some(event.seq - 1));
        }
        folders.extend(these);
    }
    (folders, None)
}

/// `folder` (relative to the library) as the server sees it under `library`.
fn seen_by_server(library: &str, folder: &str) -> String {
    let library = library.trim_end_matches(['/', '\\']);
    if folder.is_empty() { library.to_string() } else { format!("{library}/{folder}") }
}

/// Records a call to `server` that failed or was not made, as a
/// notification's is; the outcome names the server.
async fn failed(
    svc: &Services,
    server: &str,
    target: &super::NotifyTarget,
    last: i64,
    why: &str,
) -> Result<Value, HandlerError> {
    let mut outcome = super::failed(svc, &place_of(server), target, last, why).await?;
    outcome["server"] = json!(server);
    Ok(outcome)
}

/// Asks `server` to rescan what was put in the library after its place.
async fn ask(svc: &Services, task: &Task, server: &str) -> Result<Value, HandlerError> {
    let sql = |e: sqlx::Error| HandlerError::Retry(e.to_string());
    let place = place_of(server);
    let head = svc.domain.events().head().await.map_err(sql)?;
    let target = targets::load_or_start(&svc.db, &place, head).await.map_err(sql)?;
    let log = svc.domain.events().list(target.after_seq, MAX_EVENTS).await.map_err(sql)?;
    let Some(last) = log.last().map(|e| e.seq) else {
        return Ok(json!({"server": server, "outcome": "nothing-new"}));
    };
    let (folders, cut) = folders_in(svc, &log).await;
    let last = cut.unwrap_or(last);
    if folders.is_empty() {
        targets::moved_on(&svc.db, &place, last, false, None).await.map_err(sql)?;
        return Ok(json!({"server": server, "outcome": "nothing-to-rescan", "after": last}));
    }
    let runtime = svc.caps.runtime();
    let setting = runtime.setting(CAPABILITY, &format!("{server}_library"));
    let Some(library) = setting.or_else(|| runtime.root_paths().get("library").map(|p| p.display().to_string())) else {
        let why = format!("no library folder is set up, so {server} cannot be told where files went");
        return failed(svc, server, &target, last, &why).await;
    };
    let paths: Vec<String> = folders.iter().map(|f| seen_by_server(&library, f)).collect();
    let input = json!({"server": server, "folders": paths});
    let origin = Origin::task(task);
    if !svc.caps.is_authorized(&origin, CAPABILITY, &input).await.map_err(|e| e.to_string())? {
        let why = format!("no automation grant covers {CAPABILITY}: grant it to have {server} rescan imports");
        return failed(svc, server, &target, last, &why).await;
    }
    let asked = svc.caps.invoke(&origin, CAPABILITY, &input).await.map_err(|e| format!("{CAPABILITY}: {e}"))?;
    match asked.status {
        Status::Succeeded => {
            targets::moved_on(&svc.db, &place, last, true, None).await.map_err(sql)?;
            Ok(json!({"server": server, "outcome": "rescanned", "folders": paths, "after": last}))
        }
        _ => {
            let why = failed_attempt(CAPABILITY, &asked).to_string();
            failed(svc, server, &target, last, &why).await
        }
    }
}

impl TaskHandler for RefreshMediaServers {
    fn run(&self, task: Task) -> HandlerFuture {
        let svc = self.0.clone();
        Box::pin(async move {
            let runtime = svc.caps.runtime().clone();
            let mut results = Vec::new();
            for server in SERVERS {
                if runtime.has_service(server) {
                    results.push(ask(&svc, &task, server).await?);
                }
            }
            Ok(json!({ "servers": results }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::seen_by_server;

    #[test]
    fn a_folder_is_joined_to_the_library_as_the_server_sees_it() {
        assert_eq!(seen_by_server("/media/library/", "Dune (2021)"), "/media/library/Dune (2021)");
        assert_eq!(
            seen_by_server("/media/library", "Shōgun (2024)/Season 01"),
            "/media/library/Shōgun (2024)/Season 01"
        );
        assert_eq!(seen_by_server("/media/library", ""), "/media/library");
    }
}
