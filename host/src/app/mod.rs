//! The composition root: everything one Capstan process shares, built once
//! — by the command line, or by a test or benchmark embedding the host —
//! and handed whole to the HTTP server and the task worker. The services
//! below it are built here and nowhere else, so the API, the worker and the
//! agent of one process share one database handle, one event stream, one
//! ledger owner and one agent runtime. What the process runs in the
//! background, and how it stops, is [`run`]'s.

mod run;

use std::sync::Arc;
use std::time::Duration;

pub use run::{ProcessRole, Running, Stopped};

use crate::agent::AgentRuntime;
use crate::agent::providers::scripted::Scripted;
use crate::audit::{Audit, ComponentAudit};
use crate::command_output::CommandOutputRows;
use crate::config::Config;
use crate::domain::Domain;
use crate::events::Events;
use crate::external_tools::ExternalServers;
use crate::ledger::Ledger;
use crate::pipeline::{Capabilities, INVOKE_CAPABILITY, InvokeCapability, Services, Stores};
use crate::plugin_catalog::PluginCatalog;
use crate::runtime::host::OutputStore;
use crate::runtime::{Catalog, HostStores, Runtime};
use crate::settings::Settings;
use crate::setup::SetupStore;
use crate::skills::Skills;
use crate::store::Db;
use crate::tasks::{Tasks, Worker, WorkerConfig};

/// One process's services.
pub struct App {
    /// The invoke path and the stores, each built once here.
    svc: Services,
    settings: Arc<Settings>,
    audit: Audit,
    components: ComponentAudit,
    setup: SetupStore,
    agent: Arc<AgentRuntime>,
    tasks: Tasks,
    /// The links to external MCP servers, whose tools the runtime offers.
    external: Arc<ExternalServers>,
}

impl App {
    /// Builds every service over `db` once, starting the runtime of
    /// `config` over the stores its imports reach (the domain, the audit
    /// log of commands), with `owner` naming this process in the ledger,
    /// and starts writing the runtime's component changes to the audit log.
    pub async fn start(config: Config, db: Db, owner: String) -> anyhow::Result<Arc<App>> {
        let events = Events::new(db.clone());
        let domain = Domain::with_events(db.clone(), events.clone());
        let audit = Audit::new(db.clone());
        let output = CommandOutputRows::for_db(&db).map(|rows| Arc::new(rows) as Arc<dyn OutputStore>);
        let stores = HostStores { domain: Arc::new(domain.clone()), commands: Arc::new(audit.clone()), output };
        let catalog = PluginCatalog::for_db(&db).map(|c| Arc::new(c) as Arc<dyn Catalog>);
        let runtime = Runtime::start_with(config, Some(stores), catalog, &capstan_builtins::BUILT_INS).await?;
        let components = ComponentAudit::start(runtime.clone(), audit.clone());
        let external = ExternalServers::start(runtime.clone(), &runtime.config().mcp);
        let settings = Arc::new(Settings::new(db.clone(), runtime.config().data_dir(), Scripted::check));
        let stores = Stores {
            ledger: Ledger::new(db.clone(), owner),
            authz: domain.authz().clone(),
            db: db.clone(),
            domain,
            events,
        };
        let svc = Services::new(runtime, stores);
        let tasks = svc.domain.tasks().clone();
        let agent = Arc::new(AgentRuntime::new(svc.clone(), settings.clone()));
        let setup = SetupStore::new(db.clone(), settings.clone());
        Ok(Arc::new(App { svc, settings, audit, components, setup, agent, tasks, external }))
    }

    /// Opens the database (migrating it), starts the runtime, recovers
    /// claims orphaned by a dead process and applies the console's setup:
    /// what every command that invokes anything starts from.
    pub async fn open(config: Config) -> anyhow::Result<Arc<App>> {
        std::fs::create_dir_all(config.data_dir())?;
        // A malformed CAPSTAN_MASTER_KEY or an unreadable key file stops the
        // start here rather than at the first secret.
        crate::settings::MasterKey::load(&config.data_dir())?;
        let db = Db::open(&config.database_url()).await?;
        let app = App::start(config, db, crate::store::new_id()).await?;
        app.flush_component_events().await?;
        app.svc.ledger.heartbeat().await?;
        let orphans = app.svc.ledger.recover_orphans().await?;
        if orphans > 0 {
            tracing::warn!(orphans, "claims of a process that died are now unknown");
        }
        // Services and roots set up in the console, beside the file's.
        if let Err(e) = crate::setup::apply(app.svc.caps.runtime(), &app.setup).await {
            tracing::error!(error = %e, "the console's setup cannot be applied; only capstan.toml's is in effect");
        }
        link_mcp_servers(&app.external, &app.setup, app.svc.caps.runtime().config()).await;
        Ok(app)
    }

    /// The one invoke path.
    pub fn caps(&self) -> &Arc<Capabilities> {
        &self.svc.caps
    }

    /// The invoke path and the stores, as built here: what routes and
    /// task handlers act through.
    pub fn services(&self) -> &Services {
        &self.svc
    }

    /// Starts, messages and aborts runs; drives them on the worker.
    pub fn agent(&self) -> &Arc<AgentRuntime> {
        &self.agent
    }

    /// The skills runs may read: the built-ins and the skills folder's.
    pub fn skills(&self) -> &Arc<Skills> {
        self.agent.skills()
    }

    /// Where each external MCP server stands.
    pub fn external_tools(&self) -> &Arc<ExternalServers> {
        &self.external
    }

    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    pub fn settings(&self) -> &Arc<Settings> {
        &self.settings
    }

    pub fn audit(&self) -> &Audit {
        &self.audit
    }

    /// What the console set up: services, roots, naming.
    pub fn setup(&self) -> &SetupStore {
        &self.setup
    }

    /// Links the MCP servers in effect now (after the console changed
    /// them, in this process).
    pub(crate) async fn relink_mcp_servers(&self) {
        link_mcp_servers(&self.external, &self.setup, self.svc.caps.runtime().config()).await;
    }

    /// Another agent runtime over the same services, for an embedder that
    /// fixes its model provider (tests, benchmarks).
    pub fn new_agent(&self) -> AgentRuntime {
        AgentRuntime::new(self.svc.clone(), self.settings.clone())
    }

    /// Writes the component changes seen so far to the audit log now (the
    /// background writer may not get to them before a short-lived process
    /// exits).
    pub async fn flush_component_events(&self) -> Result<(), sqlx::Error> {
        self.components.flush().await
    }

    /// A worker with every task kind this build knows, sized by `config`.
    pub fn worker(&self, config: &Config) -> Worker {
        let worker_config = WorkerConfig {
            lease: Duration::from_millis(config.tasks.lease_ms),
            concurrency: config.tasks.concurrency,
            ..WorkerConfig::default()
        };
        let owner = self.svc.ledger.owner().to_string();
        let mut worker = Worker::new(self.tasks.clone(), owner, worker_config);
        crate::acquisition::register(&mut worker, &self.svc, &self.settings);
        crate::notify::register(&mut worker, &self.svc, &self.settings);
        crate::agent::task::register(&mut worker, &self.agent);
        crate::recovery::register(&mut worker, &self.agent, &self.settings);
        crate::retention::register(&mut worker, &self.agent, &self.settings);
        worker.handle(INVOKE_CAPABILITY, Arc::new(InvokeCapability(self.svc.caps.clone())));
        worker
    }
}

/// Links the external MCP servers in effect: the file's and the console's.
async fn link_mcp_servers(external: &ExternalServers, setup: &SetupStore, config: &Config) {
    match setup.mcp_servers(config).await {
        Ok(servers) => {
            let servers = servers.into_iter().map(|(name, (server, _))| (name, server)).collect();
            external.reconcile(&servers).await;
        }
        Err(e) => {
            tracing::error!(error = %e, "the MCP servers set up in the console cannot be read; the file's are linked")
        }
    }
}
