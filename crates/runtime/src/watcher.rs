//! Watches the capabilities directory (and the capability state file, which
//! `capstan capabilities accept` writes) and rescans the registry after a
//! short quiet period, so dropping, replacing or removing a `.wasm` takes
//! effect without a restart. A node of a cluster also polls the plugin
//! catalog's version ([`super::catalog`]) and rescans when another node
//! changed it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::Runtime;

/// Events closer together than this are handled by one rescan; a file being
/// copied in produces several.
const QUIET: Duration = Duration::from_millis(300);

/// How often a node of a cluster looks whether the plugin catalog changed.
const CATALOG_POLL: Duration = Duration::from_secs(2);

/// Keeps the watch alive; dropping it stops watching at once, and
/// [`DirWatcher::stop`] stops it after any rescan under way.
pub struct DirWatcher {
    watcher: Option<notify::RecommendedWatcher>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl DirWatcher {
    /// Stops watching and waits for a rescan in progress to end (a
    /// rescan cut off half-way would leave the registry as it was, but a
    /// component's audit row could be lost).
    pub async fn stop(mut self) {
        // Without the watcher the channel closes, and the loop ends.
        drop(self.watcher.take());
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for DirWatcher {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

fn relevant(event: &notify::Event) -> bool {
    use notify::EventKind::*;
    matches!(event.kind, Create(_) | Modify(_) | Remove(_))
        && event.paths.iter().any(|p| {
            p.extension().is_some_and(|x| x == "wasm") || p.file_name().is_some_and(|n| n == "capabilities-state.json")
        })
}

/// Starts watching. Must be called inside a tokio runtime.
pub fn watch(runtime: Arc<Runtime>) -> anyhow::Result<DirWatcher> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(event) = res
            && relevant(&event)
        {
            let _ = tx.send(());
        }
    })?;
    let dir = runtime.config().capabilities_dir();
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    watcher.watch(Path::new(&runtime.config().data_dir()), RecursiveMode::NonRecursive)?;
    let task = tokio::spawn(async move {
        let mut poll = tokio::time::interval(CATALOG_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut seen = None;
        loop {
            tokio::select! {
                event = rx.recv() => {
                    if event.is_none() {
                        return;
                    }
                    // Let a burst of events settle, then rescan once.
                    loop {
                        match tokio::time::timeout(QUIET, rx.recv()).await {
                            Ok(Some(())) => continue,
                            Ok(None) => return,
                            Err(_) => break,
                        }
                    }
                }
                _ = poll.tick(), if runtime.clustered() => {
                    // Another node changed the catalog: its version moved.
                    match runtime.catalog_version().await {
                        // The first reading rescans too: a change may have
                        // come between the start's scan and the watch.
                        Some(Ok(version)) if seen != Some(version) => seen = Some(version),
                        Some(Err(e)) => {
                            tracing::warn!(target: "capstan::component", error = %e, "cannot read the cluster's plugin catalog");
                            continue;
                        }
                        _ => continue,
                    }
                }
            }
            if let Err(e) = runtime.rescan_watched().await {
                tracing::error!(target: "capstan::component", error = %e, "rescan of the capabilities directory failed");
            }
        }
    });
    Ok(DirWatcher { watcher: Some(watcher), task: Some(task) })
}
