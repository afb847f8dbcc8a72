//! The media domain store: entities and their slots, source releases,
//! acquisition plans, download tasks, organizations, artifacts and
//! decisions. Every state change is one function here that checks its
//! invariants and writes in one transaction; a revision that no longer
//! matches is a [`DomainError::Conflict`]. Capabilities reach the store
//! through the `library` (read), `drafts` (propose) and `records` (execute)
//! host imports, dispatched by name in [`dispatch`]; the HTTP API and
//! background tasks call it directly. It never calls components and never
//! decides authorisation: callers arrive already authorised.

mod activity;
mod blocklist;
mod calendar;
mod component_decisions;
mod decision_options;
mod decisions;
pub mod dispatch;
mod downloads;
mod entities;
mod episodes;
mod hand_off;
mod held;
mod host_imports;
mod model;
mod organizations;
mod plan_source;
mod plan_summary;
mod plans;
mod releases;
mod submit_failures;
mod titles;

pub use blocklist::{MAX_LISTED as MAX_BLOCKLISTED, MAX_REASON as MAX_BLOCK_REASON};
pub use calendar::{Calendar, CalendarEpisode, Grab, MAX_DAYS as MAX_CALENDAR_DAYS};
pub use capstan_contract::ops::drafts::{NewEntity, NewEpisode, NewOrganizationPlan, NewPlan, NewRelease};
pub use capstan_contract::ops::transitions::WantTitle;
pub use component_decisions::{HOST_KINDS, MAX_UNDECIDED};
pub use decision_options::{OPTION_ACTIONS, find as decision_option};
pub use decisions::{
    Answer, DecisionFilter, INVESTIGABLE, INVESTIGATE_DECISION, RESOLVE_DECISION, VERIFY_RECOVERY, WITH_PLAYBOOK,
};
pub use downloads::ClientView;
pub use entities::NewSlot;
pub use model::*;
pub use submit_failures::SUBMIT_FAILED;

use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};

use crate::authz::Authz;
use crate::events::Events;
use crate::store::Db;
use crate::tasks::Tasks;

/// Why a domain operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
}

/// A follow-up task that could not be queued: the store failed, or the
/// task is in a state that refuses it.
impl From<crate::tasks::TaskError> for DomainError {
    fn from(e: crate::tasks::TaskError) -> DomainError {
        match e {
            crate::tasks::TaskError::Sql(e) => DomainError::Sql(e),
            other => DomainError::Conflict(other.to_string()),
        }
    }
}

/// Who asks, recorded on what they create.
#[derive(Debug, Clone)]
pub struct Author {
    /// `admin:<name>`, `key:<id>`, `task:<kind>`, ...
    pub principal: String,
    pub run_id: Option<String>,
    /// The capability whose component asks through a host import; `None`
    /// for the host's own code.
    pub capability: Option<String>,
}

impl Author {
    pub fn new(principal: impl Into<String>) -> Author {
        Author { principal: principal.into(), run_id: None, capability: None }
    }
}

/// The domain store over one database; cheap to clone.
#[derive(Clone)]
pub struct Domain {
    db: Db,
    events: Events,
    /// The task queue and the authorisation records over the same
    /// database: built here once, and handed out to everything above the
    /// domain rather than built again.
    tasks: Tasks,
    authz: Authz,
}

impl Domain {
    /// A store with its own event log handle. Must be called inside a tokio
    /// runtime.
    pub fn new(db: Db) -> Domain {
        let events = Events::new(db.clone());
        Domain::with_events(db, events)
    }

    /// A store announcing its events through `events`, shared with readers.
    pub fn with_events(db: Db, events: Events) -> Domain {
        Domain { tasks: Tasks::new(db.clone()), authz: Authz::new(db.clone()), db, events }
    }

    /// The task queue over this store's database.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// The event log this store appends to.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// The authorisation records (grants, approvals, policies) over this
    /// store's database.
    pub fn authz(&self) -> &Authz {
        &self.authz
    }

    /// Appends a change event inside the change's transaction.
    async fn emit(
        &self,
        tx: &mut Transaction<'_, Any>,
        kind: &str,
        subject: &str,
        payload: Value,
    ) -> Result<(), sqlx::Error> {
        Events::append_in(tx, self.db.backend, kind, Some(subject), &payload).await
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Rows of `table` whose columns equal the given values (a `None` value
    /// filters nothing), in `order`, at most `limit`.
    async fn filtered(
        &self,
        table: &str,
        filters: &[(&str, Option<&str>)],
        order: &str,
        limit: i64,
    ) -> Result<Vec<AnyRow>, sqlx::Error> {
        let mut sql = format!("SELECT * FROM {table}");
        let mut values = Vec::new();
        for (column, value) in filters {
            if let Some(value) = value {
                values.push(*value);
                sql.push_str(if values.len() == 1 { " WHERE " } else { " AND " });
                sql.push_str(&format!("{column} = ${}", values.len()));
            }
        }
        sql.push_str(&format!(" ORDER BY {order} LIMIT ${}", values.len() + 1));
        let mut query = sqlx::query(&sql);
        for value in values {
            query = query.bind(value);
        }
        query.bind(limit.clamp(1, 1000)).fetch_all(&self.db.pool).await
    }
}

/// The fingerprint of a JSON payload: sha256 of its canonical form, hex.
pub fn payload_hash(payload: &Value) -> String {
    crate::canonical::digest(payload)
}

fn require(cond: bool, message: impl FnOnce() -> String) -> Result<(), DomainError> {
    if cond { Ok(()) } else { Err(DomainError::Invalid(message())) }
}
