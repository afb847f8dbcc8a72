//! Who starts a capability call. The host writes the kind into the grant,
//! the audit log and the ledger; a component reads it from
//! `capstan:host/invocation` (the WIT enum `actor-kind`, which a host test
//! holds to [`ActorKind::ALL`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Who started the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActorKind {
    /// A human signed in to the console.
    ConsoleAdmin,
    /// A program holding an API key (the HTTP API or `/mcp`).
    ApiKey,
    /// An agent run.
    Agent,
    /// A read-only helper an agent run started.
    Subagent,
    /// The durable task worker.
    Task,
    /// The `capstan` command line.
    Cli,
}

impl ActorKind {
    /// Every kind, in the WIT enum's order.
    pub const ALL: &'static [ActorKind] = &[
        ActorKind::ConsoleAdmin,
        ActorKind::ApiKey,
        ActorKind::Agent,
        ActorKind::Subagent,
        ActorKind::Task,
        ActorKind::Cli,
    ];

    /// The kind's name in the audit log, events and the WIT enum.
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::ConsoleAdmin => "console-admin",
            ActorKind::ApiKey => "api-key",
            ActorKind::Agent => "agent",
            ActorKind::Subagent => "subagent",
            ActorKind::Task => "task",
            ActorKind::Cli => "cli",
        }
    }

    /// Parses a kind's name.
    pub fn parse(text: &str) -> Option<ActorKind> {
        ActorKind::ALL.iter().copied().find(|k| k.as_str() == text)
    }
}

impl fmt::Display for ActorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
