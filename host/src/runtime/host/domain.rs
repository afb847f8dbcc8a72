//! `capstan:host/library` (read), `drafts` (propose) and `records`
//! (execute): the doors to the domain store. The store is attached once the
//! database is open ([`HostServices::attach_domain`]); before that, or in a
//! runtime without a database, calls answer `unavailable`.

use crate::domain::{Actor, Domain, DomainError};
use crate::runtime::bindings::capstan::host::types::HostError;
use crate::runtime::bindings::capstan::host::{drafts, library, records};
use crate::runtime::call_state::CallState;
use crate::runtime::effects::EffectClass;

fn host_error(e: DomainError) -> HostError {
    match e {
        DomainError::Invalid(m) => HostError::Invalid(m),
        DomainError::NotFound(m) => HostError::NotFound(m),
        DomainError::Conflict(m) => HostError::Conflict(m),
        DomainError::Sql(e) => {
            tracing::warn!(error = %e, "domain store failed");
            HostError::Unavailable("the domain store could not be reached".into())
        }
    }
}

impl CallState {
    fn domain(&self) -> Result<Domain, HostError> {
        self.services
            .domain
            .get()
            .cloned()
            .ok_or_else(|| HostError::Unavailable("no domain store is attached to this runtime".into()))
    }

    fn domain_actor(&self) -> Actor {
        Actor { principal: self.grant.principal.clone(), run_id: self.grant.run_id.clone() }
    }
}

impl library::Host for CallState {
    async fn query(&mut self, name: String, params: String) -> Result<String, HostError> {
        self.check("capstan:host/library", EffectClass::Read)?;
        let domain = self.domain()?;
        domain.query(&name, &params).await.map(|v| v.to_string()).map_err(host_error)
    }
}

impl drafts::Host for CallState {
    async fn create(&mut self, kind: String, draft: String) -> Result<String, HostError> {
        self.check("capstan:host/drafts", EffectClass::Propose)?;
        let domain = self.domain()?;
        self.mark_effect();
        domain.create_draft(&self.domain_actor(), &kind, &draft).await.map(|v| v.to_string()).map_err(host_error)
    }
}

impl records::Host for CallState {
    async fn transition(&mut self, name: String, args: String) -> Result<String, HostError> {
        self.check("capstan:host/records", EffectClass::Execute)?;
        let domain = self.domain()?;
        // Refused before anything changes while another call holds the record.
        let hold = match super::holds::held_organization(&name, &args) {
            Some(id) if self.holds.iter().any(|h| h.organization() == id) => None,
            Some(id) => match super::Hold::take(&domain, &id).await {
                Ok(Some(hold)) => Some(hold),
                Ok(None) => {
                    return Err(HostError::Conflict(format!(
                        "organization {id} is being carried out by another call; try again when that call has finished"
                    )));
                }
                // Missing: the transition below says so.
                Err(DomainError::NotFound(_)) => None,
                Err(e) => return Err(host_error(e)),
            },
            None => None,
        };
        self.mark_effect();
        match domain.transition(&self.domain_actor(), &name, &args).await {
            Ok(answer) => {
                self.holds.extend(hold);
                Ok(answer.to_string())
            }
            Err(e) => {
                // A refused start holds nothing.
                if let Some(hold) = hold {
                    hold.release().await;
                }
                Err(host_error(e))
            }
        }
    }
}
