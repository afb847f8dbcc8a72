//! `capstan:host/library` (read), `drafts` (propose) and `records`
//! (execute): the doors to the domain store. The store itself plugs in
//! through [`DomainStore`]; without one, calls answer `unavailable`.

use crate::runtime::bindings::capstan::host::types::HostError;
use crate::runtime::bindings::capstan::host::{drafts, library, records};
use crate::runtime::call_state::CallState;
use crate::runtime::effects::EffectClass;

/// The domain store as host imports see it. Implementations enforce their
/// own invariants in one transaction per call.
pub trait DomainStore: Send + Sync {
    fn query(&self, name: &str, params: &str) -> Result<String, HostError>;
    fn create_draft(&self, kind: &str, draft: &str) -> Result<String, HostError>;
    fn transition(&self, name: &str, args: &str) -> Result<String, HostError>;
}

fn no_store() -> HostError {
    HostError::Unavailable("no domain store is attached to this runtime".into())
}

impl library::Host for CallState {
    async fn query(&mut self, name: String, params: String) -> Result<String, HostError> {
        self.check("capstan:host/library", EffectClass::Read)?;
        let store = self.services.domain.clone().ok_or_else(no_store)?;
        store.query(&name, &params)
    }
}

impl drafts::Host for CallState {
    async fn create(&mut self, kind: String, draft: String) -> Result<String, HostError> {
        self.check("capstan:host/drafts", EffectClass::Propose)?;
        let store = self.services.domain.clone().ok_or_else(no_store)?;
        self.mark_effect();
        store.create_draft(&kind, &draft)
    }
}

impl records::Host for CallState {
    async fn transition(&mut self, name: String, args: String) -> Result<String, HostError> {
        self.check("capstan:host/records", EffectClass::Execute)?;
        let store = self.services.domain.clone().ok_or_else(no_store)?;
        self.mark_effect();
        store.transition(&name, &args)
    }
}
