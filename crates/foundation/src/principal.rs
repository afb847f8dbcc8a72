//! Principal strings: who did a thing, as the ledger, the audit log,
//! approvals and drafts record it. Every principal is made here, so one
//! kind of caller is always written the same way (self-approval checks
//! compare these strings).

/// An administrator signed in to the console.
pub fn admin(name: &str) -> String {
    format!("admin:{name}")
}

/// A caller with an API key.
pub fn key(id: &str) -> String {
    format!("key:{id}")
}

/// A caller with API key `id` over MCP (`/mcp`): a key's authority, and
/// said apart from the HTTP API's in the ledger and the audit log.
pub fn mcp(id: &str) -> String {
    format!("mcp:{id}")
}

/// The API key behind a key's principal (`key:<id>` or `mcp:<id>`).
pub fn key_of(principal: &str) -> Option<&str> {
    principal.strip_prefix("key:").or_else(|| principal.strip_prefix("mcp:"))
}

/// The operator at the command line.
pub fn cli(user: &str) -> String {
    format!("cli:{user}")
}

/// A background task of `kind`, whoever queued it.
pub fn task(kind: &str) -> String {
    format!("task:{kind}")
}

/// The agent of run `run_id`.
pub fn agent(run_id: &str) -> String {
    format!("agent:{run_id}")
}

/// A subagent working for run `run_id`.
pub fn subagent(run_id: &str) -> String {
    format!("subagent:{run_id}")
}

/// The task worker process `owner`.
pub fn worker(owner: &str) -> String {
    format!("worker:{owner}")
}
