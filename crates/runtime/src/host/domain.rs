//! `capstan:host/library` (read), `drafts` (propose) and `records`
//! (execute): the doors to the domain store. The runtime knows the store
//! only as [`DomainStore`], which the domain implements and the host hands
//! in when it builds the runtime ([`super::HostStores`]). In a runtime
//! built without one (loading, listing, the sandbox's own tests), calls
//! answer `unavailable`.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::boundary::host_call;
use super::views::DomainView;
use crate::bindings::capstan::host::types::HostError;
use crate::bindings::capstan::host::{drafts, library, records};
use crate::effects::interface;

/// A record a transition takes for the rest of its call (see `holds`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldRecord {
    /// What the record is, as the conflict message names it.
    pub kind: &'static str,
    pub id: String,
}

/// Who made a call, as the domain records it.
#[derive(Debug, Clone, Copy)]
pub struct CallAuthor<'a> {
    pub principal: &'a str,
    pub run_id: Option<&'a str>,
    /// The capability whose component is making the call.
    pub capability: &'a str,
}

/// The domain store as the host imports reach it. Answers are JSON texts;
/// refusals are the host's own errors, so what a component sees is decided
/// by the implementer.
pub trait DomainStore: Send + Sync {
    /// A named `library` query, answered as `by` may see it.
    fn query<'a>(
        &'a self,
        by: CallAuthor<'a>,
        name: &'a str,
        params: &'a str,
    ) -> BoxFuture<'a, Result<String, HostError>>;
    /// A `drafts` proposal of `kind`.
    fn create_draft<'a>(
        &'a self,
        by: CallAuthor<'a>,
        kind: &'a str,
        draft: &'a str,
    ) -> BoxFuture<'a, Result<String, HostError>>;
    /// A `records` transition.
    fn transition<'a>(
        &'a self,
        by: CallAuthor<'a>,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<String, HostError>>;
    /// The record transition `name` holds for the rest of its call, if any.
    fn held_by(&self, name: &str, args: &str) -> Option<HeldRecord>;
    /// Takes (or renews) `record` for `holder` until `until_ms`; `false`
    /// while another holder's hold has not run out.
    fn hold<'a>(
        &'a self,
        record: &'a HeldRecord,
        holder: &'a str,
        until_ms: i64,
    ) -> BoxFuture<'a, Result<bool, HostError>>;
    /// Extends `holder`'s hold on `record` to `until_ms` if it still has
    /// it; never takes a record that was let go (a renewal still on its way
    /// when the call released it must not take it back).
    fn renew<'a>(
        &'a self,
        record: &'a HeldRecord,
        holder: &'a str,
        until_ms: i64,
    ) -> BoxFuture<'a, Result<(), HostError>>;
    /// Lets go of `holder`'s hold on `record`, if it still has it.
    fn release<'a>(&'a self, record: &'a HeldRecord, holder: &'a str) -> BoxFuture<'a, Result<(), HostError>>;
}

impl DomainView<'_> {
    fn domain(&self) -> Result<Arc<dyn DomainStore>, HostError> {
        self.store
            .cloned()
            .ok_or_else(|| HostError::Unavailable("this runtime was built without the domain store".into()))
    }

    /// The store refuses a change in the transaction that would have made
    /// it: a refusal leaves nothing done.
    fn refused_in_store(&mut self, answer: &Result<String, HostError>) {
        if matches!(answer, Err(HostError::Invalid(_) | HostError::Conflict(_) | HostError::NotFound(_))) {
            self.core.no_effect();
        }
    }

    fn author(&self) -> CallAuthor<'_> {
        CallAuthor {
            principal: &self.core.grant.principal,
            run_id: self.core.grant.run_id.as_deref(),
            capability: &self.core.target.id,
        }
    }
}

impl library::Host for DomainView<'_> {
    async fn query(&mut self, name: String, params: String) -> Result<String, HostError> {
        let recorded = self.core.args(|| format!("{name} {params}"));
        host_call!(self, interface::LIBRARY, "query", recorded, |answer: &String| answer.clone(), |call| call
            .domain()?
            .query(call.author(), &name, &params)
            .await,)
    }
}

impl drafts::Host for DomainView<'_> {
    async fn create(&mut self, kind: String, draft: String) -> Result<String, HostError> {
        let recorded = self.core.args(|| format!("{kind} {draft}"));
        host_call!(self, interface::DRAFTS, "create", recorded, |answer: &String| answer.clone(), |call| {
            let domain = call.domain()?;
            call.core.mark_effect();
            let answer = domain.create_draft(call.author(), &kind, &draft).await;
            call.refused_in_store(&answer);
            answer
        },)
    }
}

impl records::Host for DomainView<'_> {
    async fn transition(&mut self, name: String, args: String) -> Result<String, HostError> {
        let recorded = self.core.args(|| format!("{name} {args}"));
        host_call!(self, interface::RECORDS, "transition", recorded, |answer: &String| answer.clone(), |call| {
            let domain = call.domain()?;
            // Refused before anything changes while another call holds the record.
            let hold = match domain.held_by(&name, &args) {
                Some(record) if call.holds.iter().any(|h| h.record() == &record) => None,
                Some(record) => match super::Hold::take(domain.clone(), record.clone()).await {
                    Ok(Some(hold)) => Some(hold),
                    Ok(None) => {
                        return Err(HostError::Conflict(format!(
                            "{} {} is being carried out by another call; try again when that call has finished",
                            record.kind, record.id
                        )));
                    }
                    // Missing: the transition below says so.
                    Err(HostError::NotFound(_)) => None,
                    Err(e) => return Err(e),
                },
                None => None,
            };
            call.core.mark_effect();
            match domain.transition(call.author(), &name, &args).await {
                Ok(answer) => {
                    call.holds.extend(hold);
                    Ok(answer)
                }
                Err(e) => {
                    // A refused start holds nothing.
                    if let Some(hold) = hold {
                        hold.release().await;
                    }
                    let refused = Err(e);
                    call.refused_in_store(&refused);
                    refused
                }
            }
        },)
    }
}
