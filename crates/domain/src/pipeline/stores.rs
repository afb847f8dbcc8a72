//! The stores every part of the host's work shares, built once by the
//! composition root (`App`), and the invoke path beside them ([`Services`]).

use std::sync::Arc;

use crate::authz::Authz;
use crate::domain::Domain;
use crate::events::Events;
use crate::ledger::Ledger;
use crate::store::Db;

use super::Capabilities;
use crate::runtime::Runtime;

/// The database and the stores over it. Each is a handle: a clone shares
/// the one store (and its pool), it does not make another.
#[derive(Clone)]
pub struct Stores {
    pub db: Db,
    /// Claims and outcomes of side effects, under this process's owner.
    pub ledger: Ledger,
    /// Grants, approvals and published policies.
    pub authz: Authz,
    /// Slots, plans, downloads, organizations, decisions and their tasks.
    pub domain: Domain,
    /// What changed, for streams and listeners.
    pub events: Events,
}

/// The one invoke path beside the stores: what the host's own work (task
/// handlers, the agent, routes) acts through. The invoke path keeps its
/// own handles on the stores and hands none out.
#[derive(Clone)]
pub struct Services {
    pub caps: Arc<Capabilities>,
    pub db: Db,
    pub ledger: Ledger,
    pub authz: Authz,
    pub domain: Domain,
    pub events: Events,
}

impl Services {
    /// Builds the invoke path over `runtime` and `stores`, and keeps the
    /// stores for everything else.
    pub fn new(runtime: Arc<Runtime>, stores: Stores) -> Services {
        let caps = Arc::new(Capabilities::new(runtime, stores.clone()));
        let Stores { db, ledger, authz, domain, events } = stores;
        Services { caps, db, ledger, authz, domain, events }
    }
}
