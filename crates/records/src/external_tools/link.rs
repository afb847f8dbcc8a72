//! The host's connection to one external MCP server, through the
//! protocol's own Rust SDK: connects with the operator's credential (which
//! stays in the request headers the host sends), lists the tools (paged,
//! bounded), hears when the server says they changed, and calls them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation, PaginatedRequestParams};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde::Serialize;
use serde_json::Value;

use super::describe;
use crate::config::{Auth, McpServerConfig};
use crate::runtime::{ExternalAnswer, ExternalTool};

/// Most tools taken from one server; the rest are refused.
pub const MAX_TOOLS: usize = 128;
/// Most pages of a tool list read.
const MAX_PAGES: usize = 16;

/// Tells the link when the server says its tools changed.
#[derive(Clone)]
struct Listener {
    changed: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) -> impl Future<Output = ()> + Send + '_ {
        self.changed.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut implementation = Implementation::default();
        implementation.name = "capstan".into();
        implementation.version = env!("CARGO_PKG_VERSION").into();
        ClientConfig::new(Default::default(), implementation)
    }
}

/// Where a server stands, for the operator.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkStatus {
    pub name: String,
    pub url: String,
    /// `connecting`, `connected` or `unreachable`.
    pub state: &'static str,
    /// Why it is unreachable, or what the last list found.
    pub detail: String,
    /// Tools the last list offered.
    pub tools: usize,
}

type Session = RunningService<RoleClient, Listener>;

/// One server: its settings, the live session if any, and its status.
pub(crate) struct ServerLink {
    pub name: String,
    pub config: McpServerConfig,
    session: RwLock<Option<Arc<Session>>>,
    status: Mutex<LinkStatus>,
    pub(super) changed: Arc<tokio::sync::Notify>,
}

/// Why the secret of a server's credential cannot be sent.
fn headers(name: &str, auth: &Auth) -> Result<(Option<String>, HashMap<http::HeaderName, http::HeaderValue>), String> {
    let mut custom = HashMap::new();
    match auth {
        Auth::None => Ok((None, custom)),
        Auth::Header { name: header, value, prefix, suffix } => {
            let secret = value.resolve().map_err(|e| format!("mcp.{name}.auth: {e}"))?;
            if header.eq_ignore_ascii_case("authorization")
                && prefix.trim().eq_ignore_ascii_case("bearer")
                && suffix.is_empty()
            {
                return Ok((Some(secret), custom));
            }
            let header_name = http::HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| format!("mcp.{name}.auth.name {header:?} is not a header name"))?;
            let mut header_value = http::HeaderValue::from_str(&format!("{prefix}{secret}{suffix}"))
                .map_err(|_| format!("mcp.{name}.auth: the credential cannot be sent in a header"))?;
            header_value.set_sensitive(true);
            custom.insert(header_name, header_value);
            Ok((None, custom))
        }
        _ => Err(format!("mcp.{name}.auth: only a header credential is sent to an MCP server")),
    }
}

impl ServerLink {
    pub fn new(name: String, config: McpServerConfig) -> Arc<ServerLink> {
        let status = LinkStatus {
            name: name.clone(),
            url: config.url.clone(),
            state: "connecting",
            detail: String::new(),
            tools: 0,
        };
        Arc::new(ServerLink {
            name,
            config,
            session: RwLock::new(None),
            status: Mutex::new(status),
            changed: Arc::new(tokio::sync::Notify::new()),
        })
    }

    pub fn status(&self) -> LinkStatus {
        self.status.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn set_status(&self, state: &'static str, detail: String, tools: Option<usize>) {
        let mut status = self.status.lock().unwrap_or_else(|e| e.into_inner());
        status.state = state;
        status.detail = detail;
        if let Some(tools) = tools {
            status.tools = tools;
        }
    }

    fn session(&self) -> Option<Arc<Session>> {
        self.session.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the session the link holds has ended.
    pub(super) fn is_closed(&self) -> bool {
        self.session().is_none_or(|s| s.is_closed())
    }

    /// Opens a session (the protocol's handshake included), replacing any.
    pub(super) async fn connect(&self) -> Result<(), String> {
        // The SDK's HTTP client takes its TLS from the process's default.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (bearer, custom) = headers(&self.name, &self.config.auth)?;
        let cap = self.config.result_cap_bytes as usize;
        let mut transport = StreamableHttpClientTransportConfig::with_uri(self.config.url.clone())
            .custom_headers(custom)
            .max_json_response_size(cap)
            .max_concurrent_requests(16);
        transport.max_sse_event_size = cap;
        if let Some(bearer) = bearer {
            transport = transport.auth_header(bearer);
        }
        let transport = StreamableHttpClientTransport::from_config(transport);
        let listener = Listener { changed: self.changed.clone() };
        let handshake = tokio::time::timeout(Duration::from_secs(30), listener.serve(transport));
        let session = match handshake.await {
            Ok(Ok(session)) => session,
            Ok(Err(e)) => return Err(format!("cannot connect: {}", one_line(&e.to_string()))),
            Err(_) => return Err("cannot connect: no answer to the handshake within 30 s".into()),
        };
        let previous = self.session.write().unwrap_or_else(|e| e.into_inner()).replace(Arc::new(session));
        if let Some(previous) = previous {
            previous.cancellation_token().cancel();
        }
        Ok(())
    }

    /// Ends the session, if one is open.
    pub(super) fn disconnect(&self) {
        if let Some(session) = self.session.write().unwrap_or_else(|e| e.into_inner()).take() {
            session.cancellation_token().cancel();
        }
    }

    /// Every tool the server lists, as JSON, up to [`MAX_TOOLS`] (and how
    /// many more there were).
    pub(super) async fn list(&self) -> Result<(Vec<Value>, usize), String> {
        let session = self.session().ok_or("not connected")?;
        let mut tools = Vec::new();
        let mut over = 0;
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.take().map(|c| {
                let mut p = PaginatedRequestParams::default();
                p.cursor = Some(c);
                p
            });
            let page = tokio::time::timeout(Duration::from_secs(30), session.peer().list_tools(params))
                .await
                .map_err(|_| "no answer to tools/list within 30 s".to_string())?
                .map_err(|e| format!("tools/list failed: {}", one_line(&e.to_string())))?;
            for tool in &page.tools {
                if tools.len() < MAX_TOOLS {
                    tools.push(serde_json::to_value(tool).map_err(|e| e.to_string())?);
                } else {
                    over += 1;
                }
            }
            match page.next_cursor {
                Some(next) if tools.len() < MAX_TOOLS => cursor = Some(next),
                _ => break,
            }
        }
        Ok((tools, over))
    }
}

fn one_line(text: &str) -> String {
    crate::runtime::text::clip(&crate::runtime::text::escape_controls(text), 400).into_owned()
}

/// One tool of a linked server, as the runtime calls it.
pub(crate) struct LinkedTool {
    pub link: Arc<ServerLink>,
    /// The tool's name on the server.
    pub name: String,
}

impl ExternalTool for LinkedTool {
    fn call(&self, input: Value) -> BoxFuture<'_, ExternalAnswer> {
        Box::pin(async move {
            let Some(session) = self.link.session().filter(|s| !s.is_closed()) else {
                let status = self.link.status();
                return ExternalAnswer::NotSent(format!(
                    "MCP server {} is not connected ({}{})",
                    self.link.name,
                    status.state,
                    if status.detail.is_empty() { String::new() } else { format!(": {}", status.detail) }
                ));
            };
            let Value::Object(arguments) = input else {
                return ExternalAnswer::NotSent("the input must be a JSON object".into());
            };
            let params = CallToolRequestParams::new(self.name.clone()).with_arguments(arguments);
            // Dropping this future (the caller stopped) sends the server
            // `notifications/cancelled`.
            match session.peer().call_tool(params).await {
                Ok(result) => {
                    let result = serde_json::to_value(&result).unwrap_or(Value::Null);
                    if result.get("isError").and_then(Value::as_bool) == Some(true) {
                        ExternalAnswer::ToolError(describe::error_text(&result))
                    } else {
                        ExternalAnswer::Done(describe::output_of(&result))
                    }
                }
                // The server answered with a protocol error: it refused the
                // call, so the tool did not run.
                Err(ServiceError::McpError(error)) => {
                    ExternalAnswer::ToolError(format!("the server refused the call: {}", one_line(&error.message)))
                }
                // The session ended under the call: an answer over the
                // result cap ends it too. The link connects again.
                Err(ServiceError::TransportClosed) => {
                    self.link.changed.notify_one();
                    ExternalAnswer::NoAnswer(format!(
                        "MCP server {} closed the connection before answering (an answer over its result cap of \
                         {} bytes ends it too)",
                        self.link.name, self.link.config.result_cap_bytes
                    ))
                }
                Err(e) => ExternalAnswer::NoAnswer(format!(
                    "MCP server {} did not answer: {}",
                    self.link.name,
                    one_line(&e.to_string())
                )),
            }
        })
    }

    fn deadline(&self) -> Duration {
        Duration::from_millis(self.link.config.timeout_ms)
    }
}
