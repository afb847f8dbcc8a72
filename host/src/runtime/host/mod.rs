//! Implementations of the `capstan:host` interfaces, one file each, and the
//! services they share (outbound clients, file roots, the domain store hook).
//! Each import first checks its class against the call's grant through
//! [`CallState::check`](super::call_state::CallState::check); the class used
//! is the one in the effect table.

mod domain;
mod files;
mod holds;
mod invocation;
mod log;
mod outbound;

use std::collections::BTreeMap;
use std::sync::OnceLock;

pub use files::Roots;
pub use holds::Hold;
pub use log::{GuestLogBudget, LogTally};
pub use outbound::Outbound;

use crate::config::Config;
use crate::domain::Domain;

use super::bindings;
use super::call_state::CallState;

/// What host imports reach, shared by every call of one runtime.
pub struct HostServices {
    pub outbound: Outbound,
    pub roots: Roots,
    /// Attached once the database is open.
    pub domain: OnceLock<Domain>,
    /// Non-secret per-capability settings.
    pub settings: BTreeMap<String, BTreeMap<String, String>>,
    /// What all calls together may still log this second.
    pub guest_log: GuestLogBudget,
}

/// Lines and bytes one call may log.
pub fn log_caps() -> (u32, usize) {
    (log::MAX_CALL_LINES, log::MAX_CALL_BYTES)
}

impl HostServices {
    pub fn from_config(config: &Config) -> anyhow::Result<HostServices> {
        Ok(HostServices {
            outbound: Outbound::new(&config.services)?,
            roots: Roots::open(&config.roots)?,
            domain: OnceLock::new(),
            settings: config.capabilities.iter().map(|(id, c)| (id.clone(), c.settings.clone())).collect(),
            guest_log: GuestLogBudget::default(),
        })
    }
}

impl HostServices {
    /// What loading sees: no roots, no services, no store, no settings, so
    /// `describe` and pre-initialisation can neither reach nor wait on
    /// anything outside the sandbox.
    pub fn isolated() -> HostServices {
        HostServices {
            outbound: Outbound::new(&BTreeMap::new()).expect("no services to build"),
            roots: Roots::default(),
            domain: OnceLock::new(),
            settings: BTreeMap::new(),
            guest_log: GuestLogBudget::default(),
        }
    }

    /// Gives `library`, `drafts` and `records` their store. The first
    /// attachment wins; a runtime serves one database.
    pub fn attach_domain(&self, domain: Domain) {
        let _ = self.domain.set(domain);
    }
}

impl bindings::capstan::host::types::Host for CallState {}
impl bindings::capstan::capability::types::Host for CallState {}
