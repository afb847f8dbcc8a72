//! External MCP servers set up in the console beside those `capstan.toml`
//! names (section `mcp` of `setup_entry`): the URL, the tools offered and
//! their classes, the deadline, and a bearer token kept encrypted like the
//! services' secrets. A name the file uses is the file's. What is in
//! effect is [`SetupStore::mcp_servers`]; the composition root hands it to
//! the links (`external_tools`), here and in every process.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{SetupError, SetupStore, kinds};
use crate::config::{Auth, Config, McpServerConfig, SecretRef, ToolClass};

/// A server as the console stores it (its token apart, encrypted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerEntry {
    pub url: String,
    /// The only tools offered; every tool when absent.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Tool → class; a tool not named is `execute`.
    #[serde(default)]
    pub classes: BTreeMap<String, ToolClass>,
    /// One call's deadline, milliseconds; 60000 when absent.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Where a server in effect is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerSource {
    File,
    Console,
}

fn secret_name(name: &str) -> String {
    format!("setup.mcp.{name}")
}

/// The configuration a console entry makes, its token sent as a bearer.
pub fn server_config(entry: &McpServerEntry, token: Option<String>) -> McpServerConfig {
    let mut config = McpServerConfig::at(entry.url.clone());
    config.tools = entry.tools.clone();
    config.classes = entry.classes.clone();
    if let Some(timeout) = entry.timeout_ms {
        config.timeout_ms = timeout;
    }
    if let Some(token) = token {
        config.auth = Auth::Header {
            name: "Authorization".into(),
            value: SecretRef(token),
            prefix: "Bearer ".into(),
            suffix: String::new(),
        };
    }
    config
}

impl SetupStore {
    /// Sets up MCP server `name`. Without `token` the stored one is kept;
    /// an empty one removes it. A name `capstan.toml` uses is the file's.
    pub async fn put_mcp_server(
        &self,
        config: &Config,
        name: &str,
        entry: &McpServerEntry,
        token: Option<&str>,
        by: &str,
    ) -> Result<(), SetupError> {
        if config.mcp.servers.contains_key(name) {
            return Err(SetupError::Conflict(format!("MCP server {name} is set in capstan.toml; change it there")));
        }
        let stored = match token {
            Some(t) if t.trim().is_empty() => None,
            Some(t) => {
                kinds::literal_secret(t).map_err(SetupError::Invalid)?;
                let key = self.settings.master_key().map_err(|e| SetupError::Secret(e.to_string()))?;
                Some(key.encrypt(&secret_name(name), t.trim()))
            }
            None => self.row("mcp", name).await?.and_then(|(_, secret)| secret),
        };
        let token = stored.as_deref().map(|s| self.decrypt_mcp(name, s)).transpose()?;
        server_config(entry, token).validate(name).map_err(SetupError::Invalid)?;
        self.upsert("mcp", name, &json!(entry), stored.as_deref(), by).await
    }

    fn decrypt_mcp(&self, name: &str, stored: &str) -> Result<String, SetupError> {
        let key = self.settings.master_key().map_err(|e| SetupError::Secret(e.to_string()))?;
        key.decrypt(&secret_name(name), stored).map_err(|e| SetupError::Secret(e.to_string()))
    }

    /// The servers in effect: the file's, and the console's under names
    /// the file does not use, each with where it is set.
    pub async fn mcp_servers(
        &self,
        config: &Config,
    ) -> Result<BTreeMap<String, (McpServerConfig, ServerSource)>, SetupError> {
        let mut out: BTreeMap<String, (McpServerConfig, ServerSource)> =
            config.mcp.servers.iter().map(|(n, s)| (n.clone(), (s.clone(), ServerSource::File))).collect();
        for (name, body, secret) in self.rows("mcp").await? {
            let Ok(entry) = serde_json::from_value::<McpServerEntry>(body) else { continue };
            if out.contains_key(&name) {
                continue;
            }
            let token = secret.map(|s| self.decrypt_mcp(&name, &s)).transpose()?;
            let server = server_config(&entry, token);
            if server.validate(&name).is_ok() {
                out.insert(name, (server, ServerSource::Console));
            }
        }
        Ok(out)
    }

    /// What the console shows of each server it set up: the entry, and
    /// whether a token is stored (never the token).
    pub async fn mcp_entries(&self) -> Result<BTreeMap<String, Value>, SetupError> {
        let mut out = BTreeMap::new();
        for (name, body, secret) in self.rows("mcp").await? {
            out.insert(name, json!({"entry": body, "tokenSet": secret.is_some()}));
        }
        Ok(out)
    }
}
