//! How many sessions of the older protocol revisions each key holds. A
//! session is a task and a channel on the server that lives until the
//! client ends it or it idles out (five minutes), and many clients open a
//! new one for each connection without ending the last. So one key keeps
//! at most [`MAX_SESSIONS_PER_KEY`]: opening one past that ends the key's
//! oldest, whose client is told it is gone (404) the next time it uses it
//! and opens another, as the protocol has clients do. Sessions are
//! counted from the responses that open them (a new `Mcp-Session-Id`), so
//! no request body is read twice.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// Most sessions one key keeps open.
pub const MAX_SESSIONS_PER_KEY: usize = 16;

/// The sessions the service holds, and each key's, oldest first.
pub struct SessionCount {
    manager: Arc<LocalSessionManager>,
    by_key: Mutex<HashMap<String, VecDeque<String>>>,
}

impl SessionCount {
    pub fn new(manager: Arc<LocalSessionManager>) -> SessionCount {
        SessionCount { manager, by_key: Mutex::new(HashMap::new()) }
    }

    /// Records that `key` opened `session`, ending the key's oldest
    /// sessions past its cap.
    pub async fn admit(&self, session: &str, key: &str) {
        let live: HashSet<String> = self.manager.sessions.read().await.keys().map(|id| id.to_string()).collect();
        let ended: Vec<String> = {
            let mut by_key = self.by_key.lock().unwrap_or_else(|e| e.into_inner());
            // Sessions the service no longer holds (ended, idled out) are
            // forgotten here.
            by_key.retain(|_, sessions| {
                sessions.retain(|id| live.contains(id));
                !sessions.is_empty()
            });
            let sessions = by_key.entry(key.to_string()).or_default();
            sessions.push_back(session.to_string());
            let over = sessions.len().saturating_sub(MAX_SESSIONS_PER_KEY);
            sessions.drain(..over).collect()
        };
        for id in ended {
            tracing::info!(target: "capstan::mcp", session = %id, "a key opened more MCP sessions than it keeps; its oldest ended");
            let _ = self.manager.close_session(&Arc::from(id.as_str())).await;
        }
    }
}
