//! The `drafts` kinds: internal facts with no outside effect.

use capstan_contract::ops::drafts::{
    AcquisitionPlanDraft, DecisionDraft, DecisionOpened, EntityDraft, EvidenceDraft, IdentityMatchDraft,
    OrganizationPlanDraft, OrganizationPlanned, SourceReleaseDraft,
};
use capstan_contract::ops::queries::SeenDecision;
use capstan_contract::status::ArtifactKind;
use serde_json::json;

use super::{Operation, serve};

/// Every `drafts` kind (propose).
pub const DRAFTS: &[Operation] = &[
    serve!(EntityDraft, |domain, _, a| domain.upsert_entity(&a).await?),
    serve!(SourceReleaseDraft, |domain, _, a| domain.record_release(&a).await?),
    serve!(IdentityMatchDraft, |domain, _, a| {
        domain.match_identity(&a.release_id, a.entity_id.as_deref(), a.status, &a.evidence).await?
    }),
    serve!(DecisionDraft, |domain, by, a| {
        let mut d = a;
        // A decision an agent run caused is not that run's, or another
        // run's, to investigate.
        if let (Some(run), Some(evidence)) = (&by.run_id, d.evidence.as_object_mut()) {
            evidence.insert("openedByRun".into(), json!(run));
        } else if let (Some(run), true) = (&by.run_id, d.evidence.is_null()) {
            d.evidence = json!({"openedByRun": run});
        }
        match &by.capability {
            Some(capability) => {
                let subject = d.subject.as_deref();
                domain
                    .open_component_decision(capability, &d.kind, subject, &d.options, &d.evidence, &d.dedupe_key)
                    .await?
            }
            None => {
                let (decision, created) =
                    domain.open_decision(&d.kind, d.subject.as_deref(), &d.options, &d.evidence, &d.dedupe_key).await?;
                DecisionOpened { decision: SeenDecision::Whole(Box::new(decision)), created }
            }
        }
    }),
    serve!(AcquisitionPlanDraft, |domain, by, a| domain.draft_plan(by, &a).await?),
    serve!(OrganizationPlanDraft, |domain, by, a| {
        let (organization, artifact) = domain.plan_organization(by, &a).await?;
        OrganizationPlanned { organization, artifact }
    }),
    serve!(EvidenceDraft, |domain, by, a| {
        domain.create_artifact(by, ArtifactKind::Evidence, a.subject.as_deref(), &a.body).await?
    }),
];
