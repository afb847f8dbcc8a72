//! `capstan serve`: the HTTP API over the runtime, beside the background
//! loops of a serving process (`App::run` with `ProcessRole::Serve`), until
//! Ctrl-C or SIGTERM; then the server drains and every loop is stopped
//! and joined before the process exits.

use std::time::Duration;

use super::{CommandResult, failed};
use crate::app::{App, ProcessRole, Running};
use crate::config::Config;

/// How long a stopping process waits for its background loops: a worker's
/// drain and a little more.
const STOP_LOOPS_WITHIN: Duration = Duration::from_secs(crate::tasks::worker::DRAIN.as_secs() + 5);

/// How long a stopping process waits for the services' own tasks: the last
/// audit writes and the MCP links letting go of their servers.
const CLOSE_SERVICES_WITHIN: Duration = Duration::from_secs(5);

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
    let runtime = app.caps().runtime().clone();
    // Bound first: a port in use stops the start before any loop runs.
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| failed(anyhow::anyhow!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| failed(anyhow::Error::from(e)))?;
    // `serve` runs the API beside a worker, the watcher and the schedules.
    let running = app.run(&worker_config, ProcessRole::Serve).map_err(failed)?;
    tracing::info!(addr = %bound, capabilities = runtime.snapshot().active.len(), "capstan is serving");
    warn_without_tls(bound, &options);
    let served = crate::http::serve(listener, app.clone(), options, shutdown()).await;
    stop_process(&app, running).await;
    served.map_err(failed)?;
    Ok(0)
}

/// Stops a process's background loops, then the services' own tasks,
/// saying in the log which ended and which were still running when the
/// bound passed.
pub(crate) async fn stop_process(app: &App, running: Running) {
    stop_loops(running).await;
    let closed = app.close(CLOSE_SERVICES_WITHIN).await;
    if closed.left.is_empty() {
        tracing::info!(tasks = closed.ended.join(", "), "every service task stopped");
    } else {
        tracing::warn!(left = closed.left.join(", "), "service tasks still running at shutdown were cut off");
    }
}

/// Stops a process's background loops, saying in the log which ended and
/// which were still running when the bound passed.
async fn stop_loops(running: Running) {
    let stopped = running.stop(STOP_LOOPS_WITHIN).await;
    if stopped.left.is_empty() {
        tracing::info!(loops = stopped.ended.join(", "), "every background loop stopped");
    } else {
        tracing::warn!(
            left = stopped.left.join(", "),
            ended = stopped.ended.join(", "),
            "background loops still running at shutdown were cut off"
        );
    }
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
