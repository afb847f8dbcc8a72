//! The domain store behind the runtime's `library`, `drafts` and `records`
//! imports: [`DomainStore`] implemented by dispatching to [`Domain`] and
//! turning its refusals into the host errors a component sees.

use futures_util::future::BoxFuture;

use super::{Author, Domain, DomainError};
use crate::runtime::bindings::capstan::host::types::HostError;
use crate::runtime::host::{CallAuthor, DomainStore, HeldRecord};

const ORGANIZATION: &str = "organization";

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

fn author(by: CallAuthor<'_>) -> Author {
    Author {
        principal: by.principal.to_string(),
        run_id: by.run_id.map(str::to_string),
        capability: Some(by.capability.to_string()),
    }
}

/// The organization transition `name` holds for the rest of the call, if
/// any: starting it, and finishing it (so no call finishes what another is
/// still carrying out).
fn held_organization(name: &str, args: &str) -> Option<String> {
    match name {
        "organization.start" | "organization.finish" => {
            let args: serde_json::Value = serde_json::from_str(args).ok()?;
            Some(args.get("id")?.as_str()?.to_string())
        }
        _ => None,
    }
}

impl DomainStore for Domain {
    fn query<'a>(
        &'a self,
        by: CallAuthor<'a>,
        name: &'a str,
        params: &'a str,
    ) -> BoxFuture<'a, Result<String, HostError>> {
        Box::pin(async move {
            Domain::query_as(self, &author(by), name, params).await.map(|v| v.to_string()).map_err(host_error)
        })
    }

    fn create_draft<'a>(
        &'a self,
        by: CallAuthor<'a>,
        kind: &'a str,
        draft: &'a str,
    ) -> BoxFuture<'a, Result<String, HostError>> {
        Box::pin(async move {
            Domain::create_draft(self, &author(by), kind, draft).await.map(|v| v.to_string()).map_err(host_error)
        })
    }

    fn transition<'a>(
        &'a self,
        by: CallAuthor<'a>,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<String, HostError>> {
        Box::pin(async move {
            Domain::transition(self, &author(by), name, args).await.map(|v| v.to_string()).map_err(host_error)
        })
    }

    fn held_by(&self, name: &str, args: &str) -> Option<HeldRecord> {
        held_organization(name, args).map(|id| HeldRecord { kind: ORGANIZATION, id })
    }

    fn hold<'a>(
        &'a self,
        record: &'a HeldRecord,
        holder: &'a str,
        until_ms: i64,
    ) -> BoxFuture<'a, Result<bool, HostError>> {
        Box::pin(async move { self.hold_organization(&record.id, holder, until_ms).await.map_err(host_error) })
    }

    fn renew<'a>(
        &'a self,
        record: &'a HeldRecord,
        holder: &'a str,
        until_ms: i64,
    ) -> BoxFuture<'a, Result<(), HostError>> {
        Box::pin(async move { self.renew_organization(&record.id, holder, until_ms).await.map_err(host_error) })
    }

    fn release<'a>(&'a self, record: &'a HeldRecord, holder: &'a str) -> BoxFuture<'a, Result<(), HostError>> {
        Box::pin(async move { self.release_organization(&record.id, holder).await.map_err(host_error) })
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
