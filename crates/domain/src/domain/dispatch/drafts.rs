//! The `drafts` kinds: internal facts with no outside effect.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Operation, answer, args};
use crate::domain::{NewEntity, NewOrganizationPlan, NewPlan, NewRelease};

/// Every `drafts` kind (propose).
pub const DRAFTS: &[Operation] = &[
    Operation {
        name: "entity",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.upsert_entity(&args::<NewEntity>(name, text)?).await?) })
        },
    },
    Operation {
        name: "source-release",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.record_release(&args::<NewRelease>(name, text)?).await?) })
        },
    },
    Operation {
        name: "identity-match",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                struct Match {
                    release_id: String,
                    #[serde(default)]
                    entity_id: Option<String>,
                    status: String,
                    #[serde(default)]
                    evidence: Value,
                }
                let m: Match = args(name, text)?;
                answer(domain.match_identity(&m.release_id, m.entity_id.as_deref(), &m.status, &m.evidence).await?)
            })
        },
    },
    Operation {
        name: "decision",
        run: |domain, by, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                struct Open {
                    kind: String,
                    #[serde(default)]
                    subject: Option<String>,
                    #[serde(default)]
                    options: Value,
                    #[serde(default)]
                    evidence: Value,
                    dedupe_key: String,
                }
                let mut d: Open = args(name, text)?;
                // A decision an agent run caused is not that run's, or
                // another run's, to investigate.
                if let (Some(run), Some(evidence)) = (&by.run_id, d.evidence.as_object_mut()) {
                    evidence.insert("openedByRun".into(), json!(run));
                } else if let (Some(run), true) = (&by.run_id, d.evidence.is_null()) {
                    d.evidence = json!({"openedByRun": run});
                }
                if let Some(capability) = &by.capability {
                    let subject = d.subject.as_deref();
                    return domain
                        .open_component_decision(capability, &d.kind, subject, &d.options, &d.evidence, &d.dedupe_key)
                        .await;
                }
                let (decision, created) =
                    domain.open_decision(&d.kind, d.subject.as_deref(), &d.options, &d.evidence, &d.dedupe_key).await?;
                Ok(json!({ "decision": answer(decision)?, "created": created }))
            })
        },
    },
    Operation {
        name: "acquisition-plan",
        run: |domain, by, name, text| {
            Box::pin(async move { answer(domain.draft_plan(by, &args::<NewPlan>(name, text)?).await?) })
        },
    },
    Operation {
        name: "organization-plan",
        run: |domain, by, name, text| {
            Box::pin(async move {
                let (organization, artifact) =
                    domain.plan_organization(by, &args::<NewOrganizationPlan>(name, text)?).await?;
                Ok(json!({ "organization": answer(organization)?, "artifact": answer(artifact)? }))
            })
        },
    },
    Operation {
        name: "evidence",
        run: |domain, by, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Evidence {
                    #[serde(default)]
                    subject: Option<String>,
                    body: Value,
                }
                let e: Evidence = args(name, text)?;
                answer(domain.create_artifact(by, "evidence", e.subject.as_deref(), &e.body).await?)
            })
        },
    },
];
