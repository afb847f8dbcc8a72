//! `capstan serve`: the runtime, the directory watcher and the HTTP API,
//! until Ctrl-C or SIGTERM.

use super::{CommandResult, failed};
use crate::config::Config;
use crate::runtime::watcher;

pub async fn run(config: Config, listen: Option<String>) -> CommandResult {
    let addr = listen.or_else(|| config.listen.clone()).unwrap_or_else(|| "127.0.0.1:4380".into());
    let worker_config = config.clone();
    let options = crate::http::HttpOptions {
        trusted_proxies: config.trusted_proxies.clone(),
        public_origins: config.public_origins.iter().map(|o| o.0.clone()).collect(),
        mcp: config.mcp.clone(),
        closing: None,
    };
    let app = crate::app::App::open(config).await.map_err(failed)?;
    let capabilities = app.caps().clone();
    let runtime = capabilities.runtime().clone();
    let _watch = watcher::watch(runtime.clone()).map_err(failed)?;
    spawn_heartbeat(capabilities.clone());
    // What the console set up follows changes made by other processes too.
    app.follow_setup();
    // `serve` runs the API and a worker in one process.
    let worker = std::sync::Arc::new(app.worker(&worker_config));
    tokio::spawn(worker.run(shutdown()));
    crate::retention::spawn_schedule(crate::tasks::Tasks::new(capabilities.db().clone()));
    if worker_config.tasks.pipeline_interval_sec > 0 {
        let interval = std::time::Duration::from_secs(worker_config.tasks.pipeline_interval_sec);
        crate::acquisition::spawn_schedule(capabilities.clone(), interval);
    }
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| failed(anyhow::anyhow!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| failed(anyhow::Error::from(e)))?;
    tracing::info!(addr = %bound, capabilities = runtime.snapshot().active.len(), "capstan is serving");
    warn_without_tls(bound, &options);
    crate::http::serve(listener, app, options, shutdown()).await.map_err(failed)?;
    Ok(0)
}

/// Capstan has no TLS of its own: said once at start, loudly when other
/// machines can reach it.
fn warn_without_tls(addr: std::net::SocketAddr, options: &crate::http::HttpOptions) {
    if addr.ip().is_loopback() {
        tracing::info!(%addr, "the console is served without TLS, on this machine only");
    } else if options.trusted_proxies.is_empty() {
        tracing::warn!(
            %addr,
            "the console is served without TLS and is reachable from other machines: passwords, session cookies \
             and API keys cross the network unencrypted; put an HTTPS reverse proxy in front and list it in \
             trusted_proxies"
        );
    } else {
        tracing::warn!(
            %addr,
            "the console is served without TLS and is reachable from other machines: only requests through a \
             trusted HTTPS proxy are encrypted on their way from the browser"
        );
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub(crate) async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return ctrl_c.await.unwrap_or(()),
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// Tells other processes, every 10 s, that this one's claims are alive,
/// and turns the running claims of processes that stopped beating unknown.
pub(crate) fn spawn_heartbeat(capabilities: std::sync::Arc<crate::pipeline::Capabilities>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
            if let Err(e) = capabilities.ledger().heartbeat().await {
                tracing::warn!(error = %e, "heartbeat failed");
            }
            // A process that died after this one started (a worker killed
            // beside it, a server restarted quickly) leaves its running
            // claims behind: they become unknown once its heartbeat lapses,
            // not only at the next start.
            match capabilities.ledger().recover_orphans().await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(rows = n, "calls of a process that stopped beating are now unknown"),
                Err(e) => tracing::warn!(error = %e, "cannot look for calls of stopped processes"),
            }
        }
    });
}
