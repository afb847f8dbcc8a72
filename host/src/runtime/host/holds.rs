//! Records a call holds for as long as it runs. A transition that starts
//! long work on a record (`organization.start`: an organization placing
//! files) or ends it (`organization.finish`) takes that record for the rest
//! of the call, and another call that tries either meanwhile — in this
//! process or in another one sharing the database — is refused with a
//! conflict before anything changes. Starting a `running` organization is how an
//! interrupted one is finished, so without the hold two calls could place
//! the same files at once and record contradicting outcomes.
//!
//! A hold is a row in the domain store (holder, held until), taken with one
//! conditional update, renewed while the call runs, and released when the
//! call ends however it ended (returned, failed, trapped, ran past its
//! deadline). A process that dies stops renewing, and its holds run out
//! after [`HOLD_LEASE`].

use std::time::Duration;

use serde_json::Value;

use crate::domain::{Domain, DomainError};
use crate::ledger::OWNER_LEASE;
use crate::store::{new_id, now_ms};

/// How long a hold lasts without renewal: how long a crashed process keeps
/// others from finishing what it started. Shorter than the ledger's
/// [`OWNER_LEASE`], so when another process takes over a dead process's
/// claims and re-runs an interrupted organization, the hold has run out.
pub const HOLD_LEASE: Duration = Duration::from_secs(20);
const _: () = assert!(HOLD_LEASE.as_secs() < OWNER_LEASE.as_secs());

/// How often a running call renews its holds.
const RENEW_EVERY: Duration = Duration::from_secs(5);

/// One call's hold on one organization.
pub struct Hold {
    organization: String,
    holder: String,
    domain: Domain,
    renewer: tokio::task::JoinHandle<()>,
    released: bool,
}

fn lease_end() -> i64 {
    now_ms() + HOLD_LEASE.as_millis() as i64
}

impl Hold {
    /// Takes organization `id` for a new holder, or answers `None` when
    /// another call holds it. Must be called inside a tokio runtime.
    pub async fn take(domain: &Domain, id: &str) -> Result<Option<Hold>, DomainError> {
        let holder = new_id();
        if !domain.hold_organization(id, &holder, lease_end()).await? {
            return Ok(None);
        }
        let renewer = {
            let (domain, id, holder) = (domain.clone(), id.to_string(), holder.clone());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(RENEW_EVERY).await;
                    if let Err(e) = domain.hold_organization(&id, &holder, lease_end()).await {
                        tracing::warn!(organization = %id, error = %e, "could not renew the hold on an organization");
                    }
                }
            })
        };
        Ok(Some(Hold { organization: id.to_string(), holder, domain: domain.clone(), renewer, released: false }))
    }

    pub fn organization(&self) -> &str {
        &self.organization
    }

    /// Lets go at the end of the call. A failure is logged; the hold then
    /// runs out on its own.
    pub async fn release(mut self) {
        self.renewer.abort();
        self.released = true;
        if let Err(e) = self.domain.release_organization(&self.organization, &self.holder).await {
            tracing::warn!(organization = %self.organization, error = %e, "could not release the hold on an organization");
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
        let (domain, id, holder) = (self.domain.clone(), self.organization.clone(), self.holder.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = domain.release_organization(&id, &holder).await;
            });
        }
    }
}

/// The organization transition `name` holds for the rest of the call, if
/// any: starting it, and finishing it (so no call finishes what another is
/// still carrying out).
pub fn held_organization(name: &str, args: &str) -> Option<String> {
    match name {
        "organization.start" | "organization.finish" => {
            let args: Value = serde_json::from_str(args).ok()?;
            Some(args.get("id")?.as_str()?.to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starting_and_finishing_an_organization_hold_it() {
        assert_eq!(held_organization("organization.start", r#"{"id":"o1","fingerprint":"f"}"#).as_deref(), Some("o1"));
        assert_eq!(held_organization("organization.finish", r#"{"id":"o1"}"#).as_deref(), Some("o1"));
        assert!(held_organization("plan.reserve", r#"{"id":"o1"}"#).is_none());
        assert!(
            held_organization("organization.start", "not json").is_none(),
            "bad arguments are the domain's to refuse"
        );
    }
}
