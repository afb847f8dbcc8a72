//! The MCP server's requests: `tools/list` is what the caller's key
//! reaches ([`super::tools`]), `tools/call` is the one invoke path,
//! `resources/*` are reads the key could make over HTTP
//! ([`super::resources`]), and a
//! hot reload that changes the set of capabilities is told as
//! `notifications/tools/list_changed`: to sessions of the older protocol
//! revisions, and to `subscriptions/listen` streams of the current one.
//!
//! A call runs as the key's: actor `ApiKey` (never a human's authority),
//! principal `mcp:<key id>`, the same gate, grants, approvals, ledger,
//! audit, metrics and events as `POST /capabilities/{id}/invoke`. It runs
//! in a task of its own, so a client that cancels or goes away stops it
//! where it stands — recorded `unknown` if an effect import had run,
//! `failed` otherwise — and never leaves a claim behind half-written.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListResourcesResult,
    ListToolsResult, MetaObject, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::gate::McpKey;
use super::tools;
use crate::app::App;
use crate::http::keys::ApiKey;
use crate::pipeline::{Capabilities, Invocation, Origin};
use crate::runtime::{Actor, Mode, Status, StopSignal};

/// What is said to a client on connecting.
const INSTRUCTIONS: &str = "Capstan's media-automation capabilities. Each tool's annotations come from its \
    effect class: read-only tools change nothing; propose tools draft plans a person approves; execute tools act \
    only inside a grant or an approval an administrator gave. A denied call says what would allow it.";

/// The `_meta` key a client names a call with, so that sending it again
/// is the same call.
const REQUEST_ID: &str = "capstan/requestId";

/// Most `subscriptions/listen` streams one key keeps open at once.
pub(crate) const MAX_LISTENS: usize = 8;

/// The MCP server over one process's capabilities.
#[derive(Clone)]
pub(crate) struct CapstanMcp {
    app: Arc<App>,
    caps: Arc<Capabilities>,
    /// Sessions of the older revisions, to be told when the tools change.
    peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    /// Open `subscriptions/listen` streams by key id.
    listens: Arc<Mutex<BTreeMap<String, usize>>>,
    /// Which components' inputs arrive wrapped.
    wrapped: Arc<tools::Wrapped>,
}

/// One open listen stream of a key, counted while it lives.
struct ListenSlot {
    listens: Arc<Mutex<BTreeMap<String, usize>>>,
    key: String,
}

impl ListenSlot {
    fn take(listens: &Arc<Mutex<BTreeMap<String, usize>>>, key: &str) -> Option<ListenSlot> {
        let mut open = listens.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(key.to_string()).or_default();
        if *count >= MAX_LISTENS {
            return None;
        }
        *count += 1;
        Some(ListenSlot { listens: listens.clone(), key: key.to_string() })
    }
}

impl Drop for ListenSlot {
    fn drop(&mut self) {
        let mut open = self.listens.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

impl CapstanMcp {
    pub fn new(app: Arc<App>) -> CapstanMcp {
        CapstanMcp {
            caps: app.caps().clone(),
            app,
            peers: Arc::default(),
            listens: Arc::default(),
            wrapped: Arc::default(),
        }
    }

    /// Tells every open session when the set of loaded capabilities
    /// changes (a component added, removed, replaced or held), checking
    /// once a second; ends with the server.
    pub(crate) fn spawn_list_changed(&self, stop: tokio_util::sync::CancellationToken) {
        let this = self.clone();
        tokio::spawn(async move {
            let mut seen = this.fingerprint();
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                let now = this.fingerprint();
                if now != seen {
                    seen = now;
                    this.tell_list_changed().await;
                }
            }
        });
    }

    /// The loaded capabilities by id, with their version and label.
    fn fingerprint(&self) -> BTreeMap<String, (u32, crate::runtime::EffectClass)> {
        let snapshot = self.caps.runtime().snapshot();
        snapshot.active.iter().map(|(id, l)| (id.clone(), (l.descriptor.version, l.descriptor.label))).collect()
    }

    async fn tell_list_changed(&self) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
        };
        for peer in peers {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!(error = %e, "an MCP session could not be told the tools changed");
            }
        }
    }
}

/// How the client asked for tool names (`/mcp?names=plain`).
fn naming_of(extensions: &rmcp::model::Extensions) -> tools::Naming {
    let query = extensions.get::<http::request::Parts>().and_then(|parts| parts.uri.query());
    tools::Naming::of_query(query)
}

/// The key the gate let through, from the request's HTTP parts.
fn key_of(extensions: &rmcp::model::Extensions) -> Result<ApiKey, ErrorData> {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<McpKey>())
        .map(|McpKey(key)| key.clone())
        .ok_or_else(|| ErrorData::internal_error("the request carries no authenticated key", None))
}

/// An invocation as a tool's result: its output as structured content
/// and as text when it succeeded; otherwise `isError` with the reason.
/// `_meta` carries the status and the ledger row either way.
fn result_of(inv: &Invocation, next: Option<super::denied::Next>) -> CallToolResult {
    let status = serde_json::to_value(inv.status).ok().and_then(|v| v.as_str().map(str::to_string));
    let status = status.unwrap_or_else(|| "unknown".into());
    let mut meta = MetaObject::new();
    meta.0.insert("capstan/status".into(), json!(status));
    meta.0.insert("capstan/invocationId".into(), json!(inv.invocation_id));
    meta.0.insert("capstan/replayed".into(), json!(inv.replayed));
    let mut result = match (inv.status, &inv.output) {
        (Status::Succeeded, Some(output @ Value::Object(_))) => CallToolResult::structured(output.clone()),
        (Status::Succeeded, output) => {
            let text = output.as_ref().map(Value::to_string).unwrap_or_else(|| "null".into());
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
        _ => {
            let mut said = match &inv.error {
                Some(e) => format!("{status} ({}): {}", e.kind, e.message),
                None => format!("{status}: the call did not succeed"),
            };
            for denial in inv.denials.iter().take(3) {
                said.push_str(&format!("\ndenied: {}", serde_json::to_string(denial).unwrap_or_default()));
            }
            if let Some(e) = &inv.error {
                meta.0.insert("capstan/errorKind".into(), json!(e.kind));
            }
            if let Some(next) = next {
                said.push_str(&format!("\n{}", next.said));
                meta.0.extend(next.meta.into_iter().map(|(k, v)| (k.to_string(), v)));
            }
            CallToolResult::error(vec![ContentBlock::text(said)])
        }
    };
    result.meta = Some(meta);
    result
}

impl ServerHandler for CapstanMcp {
    fn get_info(&self) -> ServerConfig {
        let capabilities =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_resources().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("capstan", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let key = key_of(&context.extensions)?;
        let snapshot = self.caps.runtime().snapshot();
        let naming = naming_of(&context.extensions);
        Ok(ListToolsResult::with_all_items(tools::visible(&snapshot, key.ceiling(), naming)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let key = key_of(&context.extensions)?;
        let ceiling = key.ceiling();
        // A tool the key cannot see does not exist for it.
        let snapshot = self.caps.runtime().snapshot();
        let unknown = || {
            let named: String = request.name.chars().take(100).collect();
            ErrorData::invalid_params(format!("unknown tool: {named}"), None)
        };
        let id = tools::id_named(&snapshot, ceiling, naming_of(&context.extensions), &request.name);
        let Some(loaded) = id.and_then(|id| snapshot.get(&id)) else {
            return Err(unknown());
        };
        let Some(ceiling) = ceiling else { return Err(unknown()) };
        let input = tools::input_of(self.wrapped.of(&loaded), request.arguments);
        let principal = crate::principal::mcp(&key.id);
        // A client that sends the same `capstan/requestId` again gets the
        // recorded answer of a change rather than a second change, as with
        // the HTTP invoke's `requestId`.
        let request_id = match context.meta.0.get(REQUEST_ID).and_then(Value::as_str) {
            Some(id) if (1..=128).contains(&id.chars().count()) => format!("{principal}:{id}"),
            Some(_) => {
                return Err(ErrorData::invalid_params(format!("{REQUEST_ID} must be 1 to 128 characters"), None));
            }
            None => crate::store::new_id(),
        };
        let origin = Origin {
            actor: Actor::ApiKey,
            principal: principal.clone(),
            run_id: None,
            task_id: None,
            tool_call_id: None,
            request_id,
            mode: Mode::Execute,
            ceiling,
        };
        // The SDK runs each request's handler in a task of its own and
        // tells it of a cancel or a dropped connection through `ct`, never
        // by dropping it: so the call runs here, and on that word is told
        // to stop and awaited, ending recorded like any call that ended
        // early.
        let (stop, signal) = StopSignal::channel();
        let call = self.caps.invoke_stoppable(&origin, &loaded.descriptor.id, &input, signal);
        tokio::pin!(call);
        let ended = tokio::select! {
            ended = &mut call => ended,
            () = context.ct.cancelled() => {
                let _ = stop.send(true);
                call.await
            }
        };
        match ended {
            Ok(inv) => {
                let next =
                    super::denied::next_step(self.app.services(), &loaded.descriptor, &input, &principal, &inv).await;
                Ok(result_of(&inv, next).into())
            }
            Err(e) => Err(ErrorData::invalid_params(e.to_string(), None)),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(super::resources::listed(key_of(&context.extensions)?.ceiling()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let ceiling = key_of(&context.extensions)?.ceiling();
        Ok(super::resources::read(&self.app, ceiling, &request.uri).await?.into())
    }

    /// `subscriptions/listen` (the current revision, stateless): the tool
    /// list's changes only, at most [`MAX_LISTENS`] at once per key.
    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let key = key_of(&context.request_context().extensions)?;
        let _open = ListenSlot::take(&self.listens, &key.id).ok_or_else(|| {
            ErrorData::invalid_request(
                format!("this key has {MAX_LISTENS} subscriptions open already; close one first"),
                None,
            )
        })?;
        let mut seen = self.fingerprint();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            let now = self.fingerprint();
            if now != seen {
                seen = now;
                if context.sink().notify_tool_list_changed().await.is_err() {
                    return Ok(());
                }
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        // Sessions that ended are dropped here too, not only when the tools change.
        peers.retain(|p| !p.is_transport_closed());
        peers.push(context.peer.clone());
    }
}
