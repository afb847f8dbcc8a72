//! What one process runs besides answering requests, started in one place
//! and stopped under one signal. [`App::run`] starts the background loops
//! of a process's [`ProcessRole`]; [`Running::stop`] cancels them together and
//! waits, within a bound, until each has ended, naming any that did not.
//!
//! | loop | `serve` | `worker` | what it does |
//! |---|---|---|---|
//! | `heartbeat` | yes | yes | says every 10 s that this process's claims are alive; turns a stopped process's claims `unknown` |
//! | `setup` | yes | yes | applies the console's setup, and relinks MCP servers, when another process changes it |
//! | `agent-waker` | yes | yes | queues a waiting agent run's task when its next look is due |
//! | `worker` | yes | yes | claims and runs tasks; stopping, lets those in progress finish for up to `tasks::DRAIN` |
//! | `audit-sequencer` | on PostgreSQL | on PostgreSQL | chains the audit rows waiting in the intake every half second (`audit::sequencer`) |
//! | `watcher` | yes | on PostgreSQL | rescans the capabilities directory when a file changes, and the plugin catalog when another node changed it |
//! | `retention` | yes | on PostgreSQL | queues `pruneData` hourly, unless another node just did |
//! | `acquisition` | when `pipeline_interval_sec` > 0 | on PostgreSQL, likewise | queues the download sweep, unless another node just did |
//!
//! The services' own tasks (the audit writer of component changes, the
//! links to external MCP servers, the event listener) are started by the
//! services themselves, so a host embedded without `run` (a test, a
//! one-shot command) has them too; each service keeps them in a
//! `background::Background`, and [`App::close`] ends them all after the
//! loops have stopped (the `serve` and `worker` commands say in the log
//! that every one stopped, or which were cut off).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::App;
use crate::config::Config;
use crate::ledger::Ledger;

/// Which process this is: what it runs besides the services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessRole {
    /// `capstan serve`: the API with a worker, the watcher and the schedules.
    Serve,
    /// `capstan worker`: a worker alone against the shared database.
    Worker,
}

/// The background loops of a process, running until [`Running::stop`].
pub struct Running {
    stop: CancellationToken,
    loops: JoinSet<&'static str>,
    started: Vec<&'static str>,
}

/// How a stop went: the loops that ended, and those still running when the
/// bound passed (cut off with the process).
#[derive(Debug)]
pub struct Stopped {
    pub ended: Vec<&'static str>,
    pub left: Vec<&'static str>,
}

impl Running {
    fn start(&mut self, name: &'static str, task: impl Future<Output = ()> + Send + 'static) {
        self.started.push(name);
        self.loops.spawn(async move {
            task.await;
            name
        });
    }

    /// The loops started, by name.
    pub fn names(&self) -> &[&'static str] {
        &self.started
    }

    /// Tells every loop to stop and waits up to `within` for them all.
    pub async fn stop(mut self, within: Duration) -> Stopped {
        self.stop.cancel();
        let mut ended = Vec::new();
        let joined = tokio::time::timeout(within, async {
            while let Some(done) = self.loops.join_next().await {
                match done {
                    Ok(name) => ended.push(name),
                    Err(e) => tracing::error!(error = %e, "a background loop failed"),
                }
            }
        })
        .await;
        let left = match joined {
            Ok(()) => Vec::new(),
            Err(_) => self.started.iter().copied().filter(|name| !ended.contains(name)).collect(),
        };
        self.loops.abort_all();
        Stopped { ended, left }
    }
}

impl App {
    /// Ends the tasks the services started for themselves — the audit
    /// writer of component changes (writing what it has left), the links
    /// to external MCP servers, the event listener — waiting up to
    /// `within` for all of them, as [`Running::stop`] waits for the loops.
    /// Called after [`App::run`]'s loops have stopped, as the process ends.
    pub async fn close(&self, within: Duration) -> Stopped {
        let mut closing = Running { stop: CancellationToken::new(), loops: JoinSet::new(), started: Vec::new() };
        let components = self.components.clone();
        closing.start("component-audit", async move { components.close().await });
        let external = self.external.clone();
        closing.start("mcp-links", async move { external.close().await });
        let events = self.svc.events.clone();
        closing.start("event-listener", async move { events.close().await });
        closing.stop(within).await
    }

    /// Starts the background loops of `role` (the table in this module's
    /// documentation), every one ending when [`Running::stop`] is called.
    pub fn run(self: &Arc<Self>, config: &Config, role: ProcessRole) -> anyhow::Result<Running> {
        let stop = CancellationToken::new();
        let mut running = Running { stop: stop.clone(), loops: JoinSet::new(), started: Vec::new() };
        running.start("heartbeat", heartbeat(self.svc.ledger.clone(), stop.clone()));
        running.start("setup", self.clone().follow_setup(stop.clone()));
        running.start("agent-waker", crate::agent::task::wake_due_runs(self.agent.clone(), stop.clone()));
        let worker = Arc::new(self.worker(config));
        running.start("worker", worker.run(stop.clone().cancelled_owned()));
        if self.audit().sequenced() {
            let audit = self.audit().clone();
            let until = stop.clone();
            running.start("audit-sequencer", async move { audit.sequence_loop(until).await });
        }
        // A worker of a cluster follows the plugin catalog too: its
        // plugins are the cluster's, not a folder it shares.
        let runtime = self.svc.caps.runtime().clone();
        let clustered = runtime.clustered();
        if role == ProcessRole::Serve || clustered {
            let watcher = crate::runtime::watcher::watch(runtime)?;
            let until = stop.clone();
            running.start("watcher", async move {
                until.cancelled().await;
                watcher.stop().await;
            });
        }
        // The schedules run on every node of a cluster, so a node's death
        // does not stop them; each skips a turn another node took.
        if role == ProcessRole::Serve || clustered {
            running.start("retention", crate::retention::schedule(self.tasks.clone(), stop.clone()));
            if config.tasks.pipeline_interval_sec > 0 {
                let interval = Duration::from_secs(config.tasks.pipeline_interval_sec);
                let feeds =
                    (config.tasks.feed_interval_sec > 0).then(|| Duration::from_secs(config.tasks.feed_interval_sec));
                let with_sweeps = crate::notify::WITH_SWEEPS;
                let schedule =
                    crate::acquisition::schedule(self.svc.clone(), interval, feeds, with_sweeps, stop.clone());
                running.start("acquisition", schedule);
            }
        }
        Ok(running)
    }

    /// Keeps the console's setup in effect as other processes change it
    /// (services and roots in the runtime, MCP servers in their links),
    /// checked every few seconds until `stop` is cancelled.
    pub async fn follow_setup(self: Arc<Self>, stop: CancellationToken) {
        // None: the setup in the database is put in place once at the start.
        let mut seen = None;
        loop {
            match self.setup.version().await {
                Ok(now) if Some(now) != seen => {
                    // Said once per change, not every few seconds.
                    seen = Some(now);
                    if let Err(e) = crate::setup::apply(self.svc.caps.runtime(), &self.setup).await {
                        tracing::error!(error = %e, "the console's setup cannot be applied; the last good one stays");
                    }
                    self.relink_mcp_servers().await;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot read the console's setup"),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(3)) => {}
            }
        }
    }
}

/// Tells other processes, every 10 s, that this one's claims are alive,
/// and turns the running claims of processes that stopped beating unknown.
async fn heartbeat(ledger: Ledger, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(10)) => {}
        }
        if let Err(e) = ledger.heartbeat().await {
            tracing::warn!(error = %e, "heartbeat failed");
        }
        // A process that died after this one started (a worker killed
        // beside it, a server restarted quickly) leaves its running claims
        // behind: they become unknown once its heartbeat lapses, not only
        // at the next start.
        match ledger.recover_orphans().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(rows = n, "calls of a process that stopped beating are now unknown"),
            Err(e) => tracing::warn!(error = %e, "cannot look for calls of stopped processes"),
        }
    }
}
