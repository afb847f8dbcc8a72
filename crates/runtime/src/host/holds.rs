//! Records a call holds for as long as it runs. A transition that starts
//! long work on a record (`organization.start`: an organization placing
//! files) or ends it (`organization.finish`) takes that record for the rest
//! of the call (the domain says which, [`DomainStore::held_by`]), and another call that tries either meanwhile — in this
//! process or in another one sharing the database — is refused with a
//! conflict before anything changes. Starting a `running` organization is how an
//! interrupted one is finished, so without the hold two calls could place
//! the same files at once and record contradicting outcomes.
//!
//! A hold is a row in the domain store (holder, held until), taken with one
//! conditional update, renewed while the call runs (a renewal only extends
//! a hold its holder still has: one still on its way to the database when
//! the call let go must not take the record back), and released when the
//! call ends however it ended (returned, failed, trapped, ran past its
//! deadline). A process that dies stops renewing, and its holds run out
//! after [`HOLD_LEASE`].

use std::sync::Arc;
use std::time::Duration;

use super::domain::{DomainStore, HeldRecord};
use crate::bindings::capstan::host::types::HostError;
use capstan_foundation::store::{new_id, now_ms};

/// How long a hold lasts without renewal: how long a crashed process keeps
/// others from finishing what it started. The ledger's owner lease is
/// longer (it asserts so), so when another process takes over a dead
/// process's claims and re-runs an interrupted organization, the hold has
/// run out.
pub const HOLD_LEASE: Duration = Duration::from_secs(20);

/// How often a running call renews its holds.
const RENEW_EVERY: Duration = Duration::from_secs(5);

/// One call's hold on one record.
pub struct Hold {
    record: HeldRecord,
    holder: String,
    domain: Arc<dyn DomainStore>,
    renewer: tokio::task::JoinHandle<()>,
    released: bool,
}

fn lease_end() -> i64 {
    now_ms() + HOLD_LEASE.as_millis() as i64
}

impl Hold {
    /// Takes `record` for a new holder, or answers `None` when another call
    /// holds it. Must be called inside a tokio runtime.
    pub async fn take(domain: Arc<dyn DomainStore>, record: HeldRecord) -> Result<Option<Hold>, HostError> {
        let holder = new_id();
        if !domain.hold(&record, &holder, lease_end()).await? {
            return Ok(None);
        }
        let renewer = {
            let (domain, record, holder) = (domain.clone(), record.clone(), holder.clone());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(RENEW_EVERY).await;
                    if let Err(e) = domain.renew(&record, &holder, lease_end()).await {
                        tracing::warn!(record = %record.id, error = ?e, "could not renew the hold on a record");
                    }
                }
            })
        };
        Ok(Some(Hold { record, holder, domain, renewer, released: false }))
    }

    pub fn record(&self) -> &HeldRecord {
        &self.record
    }

    /// Lets go at the end of the call. A failure is logged; the hold then
    /// runs out on its own.
    pub async fn release(mut self) {
        self.renewer.abort();
        self.released = true;
        if let Err(e) = self.domain.release(&self.record, &self.holder).await {
            tracing::warn!(record = %self.record.id, error = ?e, "could not release the hold on a record");
        }
    }
}

impl Drop for Hold {
    /// A hold dropped without [`Hold::release`] (a call torn down early)
    /// is released in the background.
    fn drop(&mut self) {
        if self.released {
            return;
        }
        self.renewer.abort();
        let (domain, record, holder) = (self.domain.clone(), self.record.clone(), self.holder.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = domain.release(&record, &holder).await;
            });
        }
    }
}
