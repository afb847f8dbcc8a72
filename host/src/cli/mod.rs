//! The `capstan` command line: argument parsing, configuration resolution
//! and one function per subcommand. Commands print for humans by default
//! and JSON with `--json`; failures exit non-zero with a one-line reason.

mod admin;
mod audit;
mod capabilities;
mod capability_test;
mod invoke;
mod library;
mod serve;
mod skills;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Config;

/// Exit codes shared by the commands.
pub mod exit {
    pub(crate) const FAILED: u8 = 1;
    pub(crate) const USAGE: u8 = 2;
    pub(crate) const UNKNOWN: u8 = 3;
}

#[derive(Parser, Debug)]
#[command(name = "capstan", version, about = "A WebAssembly-sandboxed capability host for media automation")]
pub struct Cli {
    /// Where Capstan keeps its state (default ./data, or the configuration's data_dir).
    #[arg(long, global = true, env = "CAPSTAN_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Folder of plugin components (default <data-dir>/capabilities).
    #[arg(long, global = true, env = "CAPSTAN_CAPABILITIES_DIR")]
    pub capabilities_dir: Option<PathBuf>,
    /// Configuration file (TOML).
    #[arg(long, global = true, env = "CAPSTAN_CONFIG")]
    pub config: Option<PathBuf>,
    /// Database: sqlite://FILE or postgres://... (default: SQLite in the data directory).
    #[arg(long, global = true, env = "CAPSTAN_DATABASE_URL")]
    pub database_url: Option<String>,
    /// How log lines are written to standard error.
    #[arg(long, global = true, env = "CAPSTAN_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// The shape of log lines.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// For people: one readable line per event, coloured on a terminal.
    Text,
    /// For log collectors: one JSON object per line, never coloured.
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the HTTP API and console, watching the capabilities directory.
    Serve {
        /// Address to listen on (default the configuration's listen, else 127.0.0.1:4380).
        #[arg(long)]
        listen: Option<String>,
    },
    /// List, check and accept capability components.
    #[command(subcommand)]
    Capabilities(capabilities::CapabilitiesCommand),
    /// List skills and check a skill folder.
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Call one capability through the invoke path and print its result.
    Invoke(invoke::InvokeArgs),
    /// Create or update the database schema.
    Migrate,
    /// Run a task worker alone against the same database.
    Worker,
    /// List, enqueue, cancel and retry durable tasks.
    #[command(subcommand)]
    Tasks(worker::TasksCommand),
    /// Administer console passwords and API keys.
    #[command(subcommand)]
    Admin(admin::AdminCommand),
    /// Inspect the audit log.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Want titles, list what the library holds and wants, stop wanting.
    #[command(subcommand)]
    Library(library::LibraryCommand),
}

impl Cli {
    /// The configuration file (if any) with command-line folders on top,
    /// and what the environment says about TMDB.
    pub(crate) fn resolve_config(&self) -> anyhow::Result<Config> {
        let mut config = match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        if let Some(dir) = &self.data_dir {
            config.data_dir = Some(dir.clone());
        }
        if let Some(dir) = &self.capabilities_dir {
            config.capabilities_dir = Some(dir.clone());
        }
        if let Some(url) = &self.database_url {
            config.database_url = Some(url.clone());
        }
        let cwd = std::env::current_dir()
            .map_err(|e| anyhow::anyhow!("cannot read the working directory to resolve relative paths: {e}"))?;
        config.resolve_paths(&cwd);
        config.check_root_overlaps()?;
        config.tmdb_environment = crate::config::TmdbEnvironment::read();
        Ok(config)
    }
}

/// What `serve` logs unless `RUST_LOG` says otherwise. The MCP SDK logs
/// each stateless request's service at `info` (one line per `/mcp` call,
/// with the client's details): only its warnings are kept.
const SERVE_LOG: &str = "info,rmcp=warn";

fn init_logging(default: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let log = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        // Colour codes only for a terminal: a log file or journal gets plain text.
        LogFormat::Text => log.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init(),
        // The event's fields at the top level, beside `timestamp`, `level` and `target`.
        LogFormat::Json => log.json().flatten_event(true).with_current_span(false).try_init(),
    };
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(if matches!(cli.command, Command::Serve { .. }) { SERVE_LOG } else { "warn" }, cli.log_format);
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::FAILED);
        }
    };
    let result = rt.block_on(async {
        let config = cli.resolve_config().map_err(|e| (exit::USAGE, e))?;
        match &cli.command {
            Command::Serve { listen } => serve::run(config, listen.clone()).await,
            Command::Capabilities(cmd) => capabilities::run(config, cmd).await,
            Command::Skills(cmd) => skills::run(config, cmd).await,
            Command::Invoke(args) => invoke::run(config, args).await,
            Command::Migrate => audit::migrate(config).await,
            Command::Worker => worker::run(config).await,
            Command::Tasks(cmd) => worker::tasks(config, cmd).await,
            Command::Audit(cmd) => audit::run(config, cmd).await,
            Command::Admin(cmd) => admin::run(config, cmd).await,
            Command::Library(cmd) => library::run(config, cmd).await,
        }
    });
    // A blocking task stuck in the kernel (a hung file system) must not keep
    // the process from exiting: give them a moment, then go.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    match result {
        Ok(code) => ExitCode::from(code),
        Err((code, e)) => {
            eprintln!("error: {e:#}");
            ExitCode::from(code)
        }
    }
}

/// A command's result: an exit code, or an exit code with the error.
pub type CommandResult = Result<u8, (u8, anyhow::Error)>;

/// Tags an error with the "failed" exit code.
pub(crate) fn failed(e: impl Into<anyhow::Error>) -> (u8, anyhow::Error) {
    (exit::FAILED, e.into())
}
