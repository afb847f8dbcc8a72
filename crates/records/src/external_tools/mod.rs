//! External MCP servers' tools as capabilities: for each `[mcp.<server>]`
//! the host keeps a session open, lists the tools, and tells the runtime
//! what they are (`mcp.<server>.<tool>`, classed as the operator said), so
//! every caller reaches them through the one invoke path. A server that
//! changes a tool after it was accepted gets it held by the runtime's
//! rescan; a server that goes away keeps its last list, its calls failing
//! as unavailable, until it is back.

mod describe;
mod link;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use describe::{MAX_DESCRIPTION, capability_id};
pub use link::{LinkStatus, MAX_TOOLS};

use serde_json::{Value, json};

use tokio_util::sync::CancellationToken;

use crate::background::Background;
use crate::config::{McpConfig, McpServerConfig};
use crate::runtime::{ExternalSet, Refusal, Runtime, Snapshot};
use link::{LinkedTool, ServerLink};

/// Every configured server's link.
pub struct ExternalServers {
    runtime: Arc<Runtime>,
    links: Mutex<BTreeMap<String, Running>>,
    /// Every link's task; closing it ends them all.
    background: Background,
}

/// A link and what ends it.
struct Running {
    link: Arc<ServerLink>,
    stop: CancellationToken,
}

impl ExternalServers {
    /// Starts a link to every server of `config` over `runtime`; they run
    /// until reconciled away or the process ends.
    pub fn start(runtime: Arc<Runtime>, config: &McpConfig) -> Arc<ExternalServers> {
        let servers = Arc::new(ExternalServers { runtime, links: Mutex::default(), background: Background::default() });
        for (name, server) in &config.servers {
            servers.start_link(name, server.clone());
        }
        servers
    }

    fn start_link(&self, name: &str, config: McpServerConfig) {
        let link = ServerLink::new(name.to_string(), config);
        let stop = self.background.stopping().child_token();
        self.background.spawn_watching(keep_linked(self.runtime.clone(), link.clone(), stop.clone()));
        let previous =
            self.links.lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_string(), Running { link, stop });
        if let Some(previous) = previous {
            previous.stop.cancel();
        }
    }

    /// Makes the links those of `servers`: a server added is linked, one
    /// whose settings changed is linked afresh, one gone is unlinked and
    /// its tools are no longer offered.
    pub async fn reconcile(&self, servers: &BTreeMap<String, McpServerConfig>) {
        let (gone, changed): (Vec<String>, Vec<String>) = {
            let links = self.links.lock().unwrap_or_else(|e| e.into_inner());
            let gone = links.keys().filter(|n| !servers.contains_key(*n)).cloned().collect();
            let changed = servers
                .iter()
                .filter(|(n, s)| links.get(*n).is_none_or(|r| r.link.config != **s))
                .map(|(n, _)| n.clone())
                .collect();
            (gone, changed)
        };
        for name in gone {
            if let Some(running) = self.links.lock().unwrap_or_else(|e| e.into_inner()).remove(&name) {
                running.stop.cancel();
            }
            if let Err(e) = self.runtime.set_external_tools(&name, ExternalSet::default()).await {
                tracing::warn!(server = %name, error = %e, "the tools of a removed MCP server cannot be withdrawn");
            }
            tracing::info!(server = %name, "MCP server removed");
        }
        for name in changed {
            self.start_link(&name, servers[&name].clone());
        }
    }

    /// Ends every link, waiting until each has let go of its server.
    pub async fn close(&self) {
        self.background.close().await;
    }

    /// Where each server stands.
    pub fn statuses(&self) -> Vec<LinkStatus> {
        self.links().iter().map(|l| l.status()).collect()
    }

    fn links(&self) -> Vec<Arc<ServerLink>> {
        self.links.lock().unwrap_or_else(|e| e.into_inner()).values().map(|r| r.link.clone()).collect()
    }

    /// Each server as the operator sees it: where it stands, and which of
    /// its tools are offered (with their class), held (with why) or
    /// refused (with why) in `snapshot`.
    pub fn views(&self, snapshot: &Snapshot) -> Vec<Value> {
        self.links()
            .iter()
            .map(|link| {
                let prefix = format!("mcp.{}.", link.name);
                let offered: Vec<Value> = snapshot
                    .active
                    .values()
                    .filter(|l| l.descriptor.id.starts_with(&prefix))
                    .map(|l| json!({"id": l.descriptor.id, "class": l.descriptor.label, "summary": l.descriptor.summary}))
                    .collect();
                let held: Vec<Value> = snapshot
                    .held
                    .iter()
                    .filter(|(id, _)| id.starts_with(&prefix))
                    .map(|(id, h)| json!({"id": id, "reason": h.reason}))
                    .collect();
                let at = format!("mcp server {} ", link.name);
                let refused: Vec<Value> = snapshot
                    .refused
                    .iter()
                    .filter(|r| r.file.to_string_lossy().starts_with(&at))
                    .map(|r| json!({"what": r.file, "reason": r.reason}))
                    .collect();
                json!({"status": link.status(), "offered": offered, "held": held, "refused": refused})
            })
            .collect()
    }

    /// Connects to a server with `config` (saved or not), lists its tools
    /// and says what the host would offer of each, as what class.
    pub async fn try_server(name: &str, config: McpServerConfig) -> Result<String, String> {
        let trial = ServerLink::new(name.to_string(), config);
        let result = async {
            trial.connect().await?;
            let (listed, over) = trial.list().await?;
            let tools: Vec<String> = listed
                .iter()
                .map(|tool| {
                    let tool_name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                    match describe::descriptor(name, &trial.config, tool) {
                        Ok(_) if !trial.config.offers(tool_name) => format!("{tool_name} (not in tools, not offered)"),
                        Ok(d) => format!("{} ({})", d.id, d.label),
                        Err(reason) => format!("{tool_name} (refused: {reason})"),
                    }
                })
                .collect();
            let more = if over > 0 { format!(" and {over} more than the host takes") } else { String::new() };
            Ok(format!("connected; {} tools{more}: {}", listed.len(), tools.join(", ")))
        }
        .await;
        trial.disconnect();
        result
    }
}

/// Connects, lists and relists `link`'s server until `stop`, connecting
/// again after a failure with a growing pause (1 s to a minute).
async fn keep_linked(runtime: Arc<Runtime>, link: Arc<ServerLink>, stop: CancellationToken) {
    let mut pause = Duration::from_secs(1);
    let refresh = Duration::from_secs(link.config.refresh_sec);
    while !stop.is_cancelled() {
        match link.connect().await {
            Ok(()) => {
                pause = Duration::from_secs(1);
                tracing::info!(server = %link.name, url = %link.config.url, "connected to the MCP server");
                // Lists now, then whenever the server says its tools
                // changed, and every `refresh` besides.
                while !link.is_closed() && !stop.is_cancelled() {
                    if let Err(reason) = publish(&runtime, &link, &stop).await {
                        tracing::warn!(server = %link.name, %reason, "cannot list the MCP server's tools");
                        link.set_status("unreachable", reason, None);
                        break;
                    }
                    tokio::select! {
                        () = link.changed.notified() => {}
                        () = tokio::time::sleep(refresh) => {}
                        () = stop.cancelled() => break,
                    }
                }
                link.disconnect();
                if !stop.is_cancelled() {
                    link.set_status("connecting", "the session ended; connecting again".into(), None);
                }
            }
            Err(reason) => {
                tracing::warn!(server = %link.name, url = %link.config.url, %reason, "cannot reach the MCP server");
                link.set_status("unreachable", reason, None);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = stop.cancelled() => break,
        }
        pause = (pause * 2).min(Duration::from_secs(60));
    }
    link.disconnect();
}

/// Lists `link`'s tools and hands them to the runtime.
async fn publish(runtime: &Runtime, link: &Arc<ServerLink>, stop: &CancellationToken) -> Result<(), String> {
    let (listed, over) = link.list().await?;
    if stop.is_cancelled() {
        // Unlinked meanwhile: what this link saw is no longer wanted.
        return Ok(());
    }
    let mut set = ExternalSet::default();
    let refused_at = |tool: &str| std::path::PathBuf::from(format!("mcp server {} tool {tool}", link.name));
    for tool in &listed {
        let name = tool.get("name").and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
        if !link.config.offers(&name) {
            continue;
        }
        let built = match describe::descriptor(&link.name, &link.config, tool) {
            Ok(descriptor) => {
                let linked = Arc::new(LinkedTool { link: link.clone(), name: name.clone() });
                crate::runtime::external::external_loaded(descriptor, describe::digest_of(tool), &link.name, linked)
                    .await
            }
            Err(reason) => Err(reason),
        };
        match built {
            Ok(loaded) => set.tools.push(Arc::new(loaded)),
            Err(reason) => set.refused.push(Refusal { file: refused_at(&name), reason }),
        }
    }
    if over > 0 {
        let reason = format!("the server lists {over} more tools than the {MAX_TOOLS} the host takes from one server");
        set.refused.push(Refusal { file: refused_at("(the rest)"), reason });
    }
    let offered = set.tools.len();
    let detail = format!("{offered} tools offered, {} refused", set.refused.len());
    runtime.set_external_tools(&link.name, set).await.map_err(|e| format!("cannot register its tools: {e}"))?;
    link.set_status("connected", detail, Some(offered));
    Ok(())
}
