//! The `library` queries: reads of the domain store.

use capstan_contract::ops::queries::{
    ArtifactGet, DecisionOutline, DecisionsList, DownloadForPlan, DownloadGet, DownloadsList, EntitiesList, EntityGet,
    EpisodesForEntity, InventoryQuery, OrganizationGet, OrganizationsForDownload, PlanGet, PlansList, PolicyGet,
    ReleaseByInfohash, ReleaseGet, ReleasesForEntity, SeenDecision, SlotGet, SlotsForEntity, SlotsList, TaskGet,
    TasksList,
};
use capstan_contract::status::SlotStatus;

use super::{Operation, from_authz, serve};
use crate::domain::{Decision, DomainError};

/// Every `library` query (read).
pub const QUERIES: &[Operation] = &[
    serve!(EntityGet, |domain, _, a| domain.entity(&a.id).await?),
    serve!(EntitiesList, |domain, _, a| domain.entities(a.kind, a.limit).await?),
    serve!(SlotGet, |domain, _, a| domain.slot(&a.id).await?),
    serve!(SlotsForEntity, |domain, _, a| domain.slots_for_entity(&a.id).await?),
    serve!(EpisodesForEntity, |domain, _, a| domain.episodes(&a.id).await?),
    serve!(SlotsList, |domain, _, a| {
        domain.slots_with_status(a.status.unwrap_or(SlotStatus::Wanted), a.limit).await?
    }),
    serve!(ReleaseGet, |domain, _, a| domain.release(&a.id).await?),
    serve!(ReleaseByInfohash, |domain, _, a| domain.release_by_infohash(&a.infohash).await?),
    serve!(ReleasesForEntity, |domain, _, a| domain.releases_for_entity(&a.id).await?),
    serve!(PlanGet, |domain, _, a| domain.plan(&a.id).await?),
    serve!(PlansList, |domain, _, a| domain.plans(a.status, a.slot_id.as_deref(), a.limit).await?),
    serve!(DownloadGet, |domain, _, a| domain.download(&a.id).await?),
    serve!(DownloadForPlan, |domain, _, a| domain.download_for_plan(&a.id).await?),
    serve!(DownloadsList, |domain, _, a| domain.downloads(a.status, a.limit).await?),
    serve!(OrganizationGet, |domain, _, a| domain.organization(&a.id).await?),
    serve!(OrganizationsForDownload, |domain, _, a| domain.organizations_for_download(&a.id).await?),
    serve!(ArtifactGet, |domain, _, a| domain.artifact(&a.id).await?),
    serve!(DecisionsList, |domain, by, a| {
        // A component sees all of the decisions it opened and only the
        // outline of the rest: evidence, options and answers carry what
        // other openers (and the host) found and what a human chose, which
        // is not a reader's to learn.
        let decisions = domain.decisions(a.status, a.limit).await?;
        decisions
            .into_iter()
            .map(|d| match &by.capability {
                Some(asker) if d.opened_by.as_deref() != Some(asker.as_str()) => SeenDecision::Outline(outline(&d)),
                _ => SeenDecision::Whole(Box::new(d)),
            })
            .collect()
    }),
    serve!(InventoryQuery, |domain, _, a| domain.inventory(a.kind, a.limit).await?),
    serve!(PolicyGet, |domain, _, a| { domain.authz.published_policy(&a.name).await.map_err(from_authz)? }),
    serve!(TaskGet, |domain, _, a| {
        let task = domain.tasks.get(&a.id).await?;
        task.ok_or_else(|| DomainError::NotFound(format!("no task {}", a.id)))?
    }),
    serve!(TasksList, |domain, _, a| { domain.tasks.list(a.subject_id.as_deref(), a.limit.clamp(1, 1000)).await? }),
];

/// What a component may see of a decision another opener made.
fn outline(decision: &Decision) -> DecisionOutline {
    DecisionOutline {
        id: decision.id.clone(),
        kind: decision.kind.clone(),
        subject: decision.subject.clone(),
        status: decision.status,
        // Another opener's key is not the reader's to learn.
        dedupe_key: None,
    }
}
