//! Operator configuration (`capstan.toml`): data and capability folders,
//! the listen address and trusted proxies, per-call limits with
//! per-capability overrides, outbound services and file roots, the
//! programs capabilities may run (`[commands.<name>]`), the MCP endpoint's
//! reach and the external MCP servers (`[mcp]`, `[mcp.<server>]`), and what
//! the environment says about TMDB ([`TmdbEnvironment`]). Owns parsing and
//! validation only; nothing here opens a file root or a connection.
//! Unknown keys are refused so typos are not silently ignored.

mod commands;
mod environment;
mod mcp;
mod paths;
mod proxies;
mod services;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use commands::{COMMAND_PATH, CommandConfig, CommandCwd, MAX_FREE_ARGS, relative_folder};
pub use environment::{TMDB_ACCESS_TOKEN_ENV, TMDB_API_KEY_ENV, TMDB_BASE_URL_ENV, TMDB_DEFAULT_BASE, TmdbEnvironment};
pub use mcp::{McpConfig, McpServerConfig, ToolClass};
pub use proxies::{PublicOrigin, TrustedProxy};
pub use services::{Auth, Fold, OperationRule, SecretRef, ServiceConfig, path_safe, rpc_method};

/// Why a configuration file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("config is not valid: {0}")]
    Invalid(String),
}

/// Per-call resource limits. Every field is optional in overrides.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CallLimits {
    /// Wall-clock deadline of one call, milliseconds.
    pub deadline_ms: u64,
    /// Instruction bound (wasmtime fuel units, roughly one per instruction).
    pub fuel: u64,
    /// Linear-memory cap, bytes.
    pub memory_bytes: u64,
    /// Cap on the output JSON, bytes.
    pub output_bytes: u64,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits { deadline_ms: 30_000, fuel: 1_000_000_000_000, memory_bytes: 64 << 20, output_bytes: 1 << 20 }
    }
}

/// Overrides for one capability, under `[capabilities."<id>"]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityConfig {
    pub deadline_ms: Option<u64>,
    pub fuel: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub output_bytes: Option<u64>,
    /// Non-secret settings readable through `invocation.setting`.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
}

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where Capstan keeps its state. Default `./data`.
    pub data_dir: Option<PathBuf>,
    /// Plugin folder. Default `<data-dir>/capabilities`.
    pub capabilities_dir: Option<PathBuf>,
    /// Skills folder: one folder per skill, each with a `SKILL.md`.
    /// Default `<data-dir>/skills`.
    pub skills_dir: Option<PathBuf>,
    /// HTTP listen address. Default `127.0.0.1:4380`.
    pub listen: Option<String>,
    /// Reverse proxies (addresses or networks) whose `Forwarded` /
    /// `X-Forwarded-Proto` headers say whether the browser used HTTPS.
    #[serde(default)]
    pub trusted_proxies: Vec<TrustedProxy>,
    /// Addresses the console is served under besides the one a request
    /// names in `Host` (a reverse proxy that rewrites it), as
    /// `https://capstan.example.org`: changes sent from a page of any
    /// other origin are refused.
    #[serde(default)]
    pub public_origins: Vec<PublicOrigin>,
    /// Compiled-component cache folder. Default `<data-dir>/cache`.
    pub cache_dir: Option<PathBuf>,
    /// Compile the built-in components at start rather than use the code
    /// compiled with the binary. Default false.
    #[serde(default)]
    pub compile_builtins: bool,
    /// `sqlite://...` or `postgres://...`. Default: `capstan.db` (SQLite) in
    /// the data directory.
    pub database_url: Option<String>,
    /// Largest component file the loader reads, bytes. Default 64 MiB.
    pub max_component_bytes: Option<u64>,
    #[serde(default)]
    pub limits: CallLimits,
    #[serde(default)]
    pub capabilities: BTreeMap<String, CapabilityConfig>,
    #[serde(default)]
    pub services: BTreeMap<String, ServiceConfig>,
    /// Named file roots: name → directory.
    #[serde(default)]
    pub roots: BTreeMap<String, PathBuf>,
    #[serde(default)]
    pub tasks: TasksConfig,
    /// Programs capabilities may run: name → command.
    #[serde(default)]
    pub commands: BTreeMap<String, CommandConfig>,
    /// Who may reach the MCP endpoint at `/mcp`, and the external MCP
    /// servers whose tools become capabilities, under `[mcp]`.
    #[serde(default)]
    pub mcp: McpConfig,
    /// TMDB's credential and base URL from the environment, set by the
    /// command line at start (never from the file).
    #[serde(skip)]
    pub tmdb_environment: TmdbEnvironment,
}

/// The durable task worker, under `[tasks]`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TasksConfig {
    /// How long a worker's claim lasts without renewal, milliseconds.
    pub lease_ms: u64,
    /// Tasks one worker runs at once.
    pub concurrency: usize,
    /// Attempts before a task is dead.
    pub max_attempts: i64,
    /// How often `serve` queues the acquisition pipeline's sweeps
    /// (`syncDownloads`, `evaluateAcquisition`), seconds; 0 turns them off.
    pub pipeline_interval_sec: u64,
    /// How often the indexers' feeds are read (`syncFeeds`), seconds: 0
    /// turns it off, else at least 60 (indexers limit how often they may
    /// be asked). The sweeps being off turns it off too.
    pub feed_interval_sec: u64,
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig {
            lease_ms: 30_000,
            concurrency: 2,
            max_attempts: 5,
            pipeline_interval_sec: 60,
            feed_interval_sec: 900,
        }
    }
}

impl Config {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        Self::parse(&text).map_err(|e| match e {
            ConfigError::Invalid(message) => ConfigError::Parse { path: path.to_path_buf(), message },
            other => other,
        })
    }

    /// Parses and validates TOML text.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        check_limits("limits", &self.limits)?;
        if self.max_component_bytes.is_some_and(|b| !(1024..=(1 << 30)).contains(&b)) {
            return Err(ConfigError::Invalid("max_component_bytes must be between 1024 and 1073741824".into()));
        }
        for (id, cap) in &self.capabilities {
            check_limits(&format!("capabilities.{id}"), &self.limits_for_config(cap))?;
        }
        if self.tasks.lease_ms < 1_000 || self.tasks.concurrency == 0 || self.tasks.max_attempts < 1 {
            return Err(ConfigError::Invalid(
                "tasks.lease_ms must be at least 1000, tasks.concurrency and tasks.max_attempts at least 1".into(),
            ));
        }
        if (1..60).contains(&self.tasks.feed_interval_sec) {
            return Err(ConfigError::Invalid(
                "tasks.feed_interval_sec must be 0 (no feed reads) or at least 60: indexers limit how often they may be asked"
                    .into(),
            ));
        }
        for (name, service) in &self.services {
            service.validate(name).map_err(ConfigError::Invalid)?;
        }
        for (name, dir) in &self.roots {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(ConfigError::Invalid(format!("root name {name:?} must be letters, digits, - or _")));
            }
            if dir.as_os_str().is_empty() {
                return Err(ConfigError::Invalid(format!("root {name} needs a folder")));
            }
        }
        for (name, command) in &self.commands {
            command.validate(name, &self.roots).map_err(ConfigError::Invalid)?;
        }
        self.mcp.validate().map_err(ConfigError::Invalid)?;
        Ok(())
    }

    fn limits_for_config(&self, cap: &CapabilityConfig) -> CallLimits {
        CallLimits {
            deadline_ms: cap.deadline_ms.unwrap_or(self.limits.deadline_ms),
            fuel: cap.fuel.unwrap_or(self.limits.fuel),
            memory_bytes: cap.memory_bytes.unwrap_or(self.limits.memory_bytes),
            output_bytes: cap.output_bytes.unwrap_or(self.limits.output_bytes),
        }
    }

    /// The limits for capability `id`: its overrides over the defaults.
    pub fn limits_for(&self, id: &str) -> CallLimits {
        match self.capabilities.get(id) {
            Some(cap) => self.limits_for_config(cap),
            None => self.limits,
        }
    }

    /// The largest memory cap any capability may get; sizes the instance pool.
    pub fn max_memory_bytes(&self) -> u64 {
        self.capabilities.values().filter_map(|c| c.memory_bytes).fold(self.limits.memory_bytes, u64::max)
    }

    /// Data folder.
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(|| PathBuf::from("data"))
    }

    /// Plugin folder.
    pub fn capabilities_dir(&self) -> PathBuf {
        self.capabilities_dir.clone().unwrap_or_else(|| self.data_dir().join("capabilities"))
    }

    /// Skills folder.
    pub fn skills_dir(&self) -> PathBuf {
        self.skills_dir.clone().unwrap_or_else(|| self.data_dir().join("skills"))
    }

    /// The database URL to use.
    pub fn database_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| capstan_foundation::store::Db::default_url(&self.data_dir()))
    }

    /// Largest component file the loader reads.
    pub fn max_component_bytes(&self) -> u64 {
        self.max_component_bytes.unwrap_or(64 << 20)
    }

    /// Compiled-component cache folder.
    pub fn cache_dir(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(|| self.data_dir().join("cache"))
    }
}

fn check_limits(at: &str, l: &CallLimits) -> Result<(), ConfigError> {
    let bad = |what: &str| Err(ConfigError::Invalid(format!("{at}.{what}")));
    if l.deadline_ms == 0 || l.deadline_ms > 3_600_000 {
        return bad("deadline_ms must be between 1 and 3600000");
    }
    if l.fuel == 0 {
        return bad("fuel must be positive");
    }
    if l.memory_bytes < (1 << 20) || l.memory_bytes > (4 << 30) {
        return bad("memory_bytes must be between 1 MiB and 4 GiB");
    }
    if l.output_bytes == 0 || l.output_bytes > (256 << 20) {
        return bad("output_bytes must be between 1 and 256 MiB");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Config;

    #[test]
    fn partial_tables_keep_the_other_defaults() {
        let c = Config::parse("[limits]\ndeadline_ms = 5000\n[tasks]\nlease_ms = 2000\n").unwrap();
        assert_eq!(c.limits.deadline_ms, 5000);
        assert_eq!(c.limits.memory_bytes, 64 << 20);
        assert_eq!(c.tasks.lease_ms, 2000);
        assert_eq!(c.tasks.concurrency, 2);
    }

    #[test]
    fn typos_are_refused() {
        let err = Config::parse("[limits]\ndeadline = 5\n").unwrap_err().to_string();
        assert!(err.contains("unknown field"), "{err}");
    }

    #[test]
    fn trusted_proxies_are_addresses_or_networks() {
        let c = Config::parse("trusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\", \"::1\"]\n").unwrap();
        assert_eq!(c.trusted_proxies.len(), 3);
        let err = Config::parse("trusted_proxies = [\"proxy.lan\"]\n").unwrap_err().to_string();
        assert!(err.contains("proxy.lan") && err.contains("neither an IP address"), "{err}");
    }
}
