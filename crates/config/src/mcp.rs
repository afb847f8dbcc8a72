//! `[mcp]`: who may reach Capstan's own MCP endpoint, and the external MCP
//! servers (`[mcp.<server>]`) whose tools the host offers as capabilities
//! under the classes the operator gives them. The section mixes settings
//! and server tables, so it is read by hand: a key that is neither a known
//! setting nor a table is refused by name, as everywhere else.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

use super::proxies::PublicOrigin;
use super::services::Auth;

/// The class an operator gives an external tool; `execute` unless said
/// otherwise, whatever the server claims about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ToolClass {
    Read,
    Preview,
    Propose,
    #[default]
    Execute,
}

/// One external MCP server under `[mcp.<name>]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's streamable HTTP endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    pub url: String,
    /// The credential the host sends (a header, such as
    /// `Authorization: Bearer <secret>`); never shown to a model or logged.
    #[serde(default)]
    pub auth: Auth,
    /// The only tools offered, by the server's names; every tool when absent.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Tool name → class. A tool not named here is `execute`.
    #[serde(default)]
    pub classes: BTreeMap<String, ToolClass>,
    /// How long one tool call may take, milliseconds. Default 60000.
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    /// Largest answer accepted from the server, bytes. Default 4 MiB.
    #[serde(default = "default_result_cap")]
    pub result_cap_bytes: u64,
    /// How often the tool list is read again besides when the server says
    /// it changed, seconds. Default 300.
    #[serde(default = "default_refresh")]
    pub refresh_sec: u64,
}

fn default_timeout() -> u64 {
    60_000
}

fn default_result_cap() -> u64 {
    4 << 20
}

fn default_refresh() -> u64 {
    300
}

/// The MCP endpoint's reach (loopback is always allowed; these add to it)
/// and the external servers.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// Web origins whose pages may call `/mcp` (a browser sends `Origin`),
    /// as `https://agent.example.org`. Requests without `Origin` (desktop
    /// and command-line clients) are not affected.
    pub allowed_origins: Vec<PublicOrigin>,
    /// Host names (with a port where it is not the scheme's) the endpoint
    /// answers under besides loopback and `public_origins`' hosts, e.g.
    /// `capstan.lan:4380`; a request naming any other `Host` is refused,
    /// which stops DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// External servers by name.
    pub servers: BTreeMap<String, McpServerConfig>,
}

impl<'de> Deserialize<'de> for McpConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let table = BTreeMap::<String, toml::Value>::deserialize(deserializer)?;
        let mut config = McpConfig::default();
        for (key, value) in table {
            match (key.as_str(), value) {
                ("allowed_origins", value) => {
                    config.allowed_origins =
                        value.try_into().map_err(|e| D::Error::custom(format!("mcp.allowed_origins: {e}")))?
                }
                ("allowed_hosts", value) => {
                    config.allowed_hosts =
                        value.try_into().map_err(|e| D::Error::custom(format!("mcp.allowed_hosts: {e}")))?
                }
                (_, value @ toml::Value::Table(_)) => {
                    let server = value.try_into().map_err(|e| D::Error::custom(format!("mcp.{key}: {e}")))?;
                    config.servers.insert(key, server);
                }
                (_, _) => {
                    return Err(D::Error::custom(format!(
                        "unknown key mcp.{key}: [mcp] takes allowed_origins, allowed_hosts and server tables [mcp.<name>]"
                    )));
                }
            }
        }
        Ok(config)
    }
}

/// Longest server name: `mcp.<server>.<tool>` must fit a capability id.
const MAX_SERVER_NAME: usize = 24;

impl McpConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        for (name, server) in &self.servers {
            server.validate(name)?;
        }
        Ok(())
    }
}

impl McpServerConfig {
    /// A server at `url` with every other setting at its default.
    pub fn at(url: String) -> McpServerConfig {
        McpServerConfig {
            url,
            auth: Auth::None,
            tools: None,
            classes: BTreeMap::new(),
            timeout_ms: default_timeout(),
            result_cap_bytes: default_result_cap(),
            refresh_sec: default_refresh(),
        }
    }

    /// Checks the server's table; `name` is its key under `[mcp]`.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        let plain = name.len() <= MAX_SERVER_NAME
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if !plain {
            return Err(format!(
                "mcp server name {name:?} must be 1 to {MAX_SERVER_NAME} lowercase letters, digits, - or _, starting with a letter"
            ));
        }
        let url = reqwest::Url::parse(&self.url).map_err(|e| format!("mcp.{name}.url {:?}: {e}", self.url))?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(format!("mcp.{name}.url must be http or https"));
        }
        if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
            return Err(format!("mcp.{name}.url must not carry credentials or a fragment (use `auth`)"));
        }
        match &self.auth {
            Auth::None | Auth::Header { .. } => {}
            _ => {
                return Err(format!(
                    "mcp.{name}.auth: an MCP server takes a header credential (kind = \"header\"), such as \
                     name = \"Authorization\", prefix = \"Bearer \""
                ));
            }
        }
        if !(1_000..=3_600_000).contains(&self.timeout_ms) {
            return Err(format!("mcp.{name}.timeout_ms must be between 1000 and 3600000"));
        }
        if !(1024..=(64 << 20)).contains(&self.result_cap_bytes) {
            return Err(format!("mcp.{name}.result_cap_bytes must be between 1024 and 67108864"));
        }
        if self.refresh_sec == 0 {
            return Err(format!("mcp.{name}.refresh_sec must be at least 1"));
        }
        if let Some(tools) = &self.tools
            && let Some(bad) = tools.iter().find(|t| t.is_empty() || t.len() > 128)
        {
            return Err(format!("mcp.{name}.tools: {bad:?} is not a tool name"));
        }
        Ok(())
    }

    /// The class the operator gave `tool`.
    pub fn class_of(&self, tool: &str) -> ToolClass {
        self.classes.get(tool).copied().unwrap_or_default()
    }

    /// Whether the operator offers `tool` at all.
    pub fn offers(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|tools| tools.iter().any(|t| t == tool))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::ToolClass;

    #[test]
    fn servers_sit_beside_the_endpoint_settings() {
        let config = Config::parse(
            r#"
            [mcp]
            allowed_hosts = ["capstan.lan:4380"]
            [mcp.notes]
            url = "http://127.0.0.1:3001/mcp"
            auth = { kind = "header", name = "Authorization", prefix = "Bearer ", value = "env:NOTES_TOKEN" }
            tools = ["lookup", "add"]
            classes = { lookup = "read" }
            "#,
        )
        .unwrap();
        assert_eq!(config.mcp.allowed_hosts, ["capstan.lan:4380"]);
        let notes = &config.mcp.servers["notes"];
        assert_eq!(notes.class_of("lookup"), ToolClass::Read);
        assert_eq!(notes.class_of("add"), ToolClass::Execute, "unnamed tools are execute");
        assert!(notes.offers("add") && !notes.offers("delete_all"));
    }

    #[test]
    fn a_bad_mcp_table_is_refused_by_name() {
        let refused = |text: &str| Config::parse(text).unwrap_err().to_string();
        assert!(refused("[mcp]\nallowed_origin = []").contains("unknown key mcp.allowed_origin"));
        assert!(refused("[mcp.Notes]\nurl = \"http://x/mcp\"").contains("must be 1 to 24 lowercase"));
        assert!(refused("[mcp.notes]\nurl = \"ftp://x/mcp\"").contains("must be http or https"));
        assert!(refused("[mcp.notes]\nurl = \"http://x/mcp\"\ncolour = 1").contains("unknown field `colour`"));
        assert!(
            refused(
                "[mcp.notes]\nurl = \"http://x/mcp\"\nauth = { kind = \"basic\", username = \"a\", password = \"b\" }"
            )
            .contains("header credential")
        );
        assert!(refused("[mcp.notes]\nurl = \"http://x/mcp\"\nclasses = { a = \"admin\" }").contains("mcp.notes"));
    }
}
