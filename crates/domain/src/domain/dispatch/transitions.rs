//! The `records` transitions: state changes.

use capstan_contract::ops::transitions::{
    DownloadReplaceRecord, DownloadReplaced, DownloadUpdateRecord, DownloadUpdated, EpisodesMonitorRecord,
    OrganizationFinishRecord, OrganizationStartRecord, PlanCancel, PlanEnd, PlanFail, PlanReserve, PlanSubmitted,
    PolicyPublishRecord, Submitted, TaskCancelRecord, TaskRetryRecord, TitleChangeRecord, TitleUnwantRecord,
    TitleWantRecord,
};
use capstan_contract::status::PlanStatus;

use super::{Operation, from_authz, from_tasks, serve};
use crate::domain::{Domain, DomainError, Plan};

/// `plan.fail` and `plan.cancel`: the plan ends `status`, with its reason.
async fn end_plan(domain: &Domain, end: &PlanEnd, status: PlanStatus) -> Result<Plan, DomainError> {
    domain.end_plan(&end.plan_id, status, end.reason.as_deref().unwrap_or("no reason given")).await
}

/// Every `records` transition (execute).
pub const TRANSITIONS: &[Operation] = &[
    serve!(PlanReserve, |domain, _, a| domain.reserve_plan(&a.plan_id).await?),
    serve!(PlanSubmitted, |domain, _, a| {
        let (plan, download) = domain.mark_submitted(&a.plan_id, &a.client_hash).await?;
        Submitted { plan, download }
    }),
    serve!(PlanFail, |domain, _, a| end_plan(domain, &a, PlanStatus::Failed).await?),
    serve!(PlanCancel, |domain, _, a| end_plan(domain, &a, PlanStatus::Cancelled).await?),
    serve!(DownloadUpdateRecord, |domain, _, a| {
        let (download, change) =
            domain.update_download(&a.id, a.status, a.progress, a.content_path.as_deref(), None).await?;
        DownloadUpdated { download, changed: change.is_some() }
    }),
    serve!(DownloadReplaceRecord, |domain, by, a| {
        let (download, blocked) = domain.replace_download(&a.id, &a.reason, &by.principal).await?;
        DownloadReplaced { download, blocked }
    }),
    serve!(OrganizationStartRecord, |domain, _, a| domain.start_organization(&a.id, &a.fingerprint).await?),
    serve!(OrganizationFinishRecord, |domain, _, a| domain.finish_organization(&a.id, a.error.as_deref()).await?),
    serve!(PolicyPublishRecord, |domain, _, a| {
        let published = domain.authz.publish_policy(&a.name, a.revision).await.map_err(from_authz)?;
        // Slots judged by this profile may now hold enough, or not.
        domain.settle_profile(&a.name).await?;
        published
    }),
    serve!(TitleWantRecord, |domain, _, a| domain.want_title(&a).await?),
    serve!(TitleChangeRecord, |domain, _, a| {
        let profile = a.profile.as_ref().map(|p| p.as_deref());
        domain.change_title(&a.entity_id, a.quality.as_deref(), profile).await?
    }),
    serve!(TitleUnwantRecord, |domain, _, a| domain.unwant_title(&a.entity_id, a.season).await?),
    serve!(EpisodesMonitorRecord, |domain, _, a| {
        domain.monitor_episodes(&a.entity_id, a.season, a.episodes.as_deref(), a.monitored).await?
    }),
    serve!(TaskRetryRecord, |domain, _, a| domain.tasks.retry(&a.id).await.map_err(from_tasks)?),
    serve!(TaskCancelRecord, |domain, _, a| domain.tasks.cancel(&a.id).await.map_err(from_tasks)?),
];
