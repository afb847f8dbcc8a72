//! The `records` transitions: state changes.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{ById, Operation, answer, args, from_authz, from_tasks, present};
use crate::authz::Authz;
use crate::domain::{Domain, DomainError, WantTitle};
use crate::tasks::Tasks;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlanStep {
    plan_id: String,
    #[serde(default)]
    client_hash: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// `plan.fail` and `plan.cancel`: the plan ends `status`, with its reason.
async fn end_plan(domain: &Domain, name: &str, text: &str, status: &str) -> Result<Value, DomainError> {
    let step: PlanStep = args(name, text)?;
    answer(domain.end_plan(&step.plan_id, status, step.reason.as_deref().unwrap_or("no reason given")).await?)
}

/// Every `records` transition (execute).
pub const TRANSITIONS: &[Operation] = &[
    Operation {
        name: "plan.reserve",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.reserve_plan(&args::<PlanStep>(name, text)?.plan_id).await?) })
        },
    },
    Operation {
        name: "plan.submitted",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let step: PlanStep = args(name, text)?;
                let hash =
                    step.client_hash.ok_or_else(|| DomainError::Invalid("plan.submitted needs clientHash".into()))?;
                let (plan, download) = domain.mark_submitted(&step.plan_id, &hash).await?;
                Ok(json!({ "plan": answer(plan)?, "download": answer(download)? }))
            })
        },
    },
    Operation { name: "plan.fail", run: |domain, _, name, text| Box::pin(end_plan(domain, name, text, "failed")) },
    Operation { name: "plan.cancel", run: |domain, _, name, text| Box::pin(end_plan(domain, name, text, "cancelled")) },
    Operation {
        name: "download.update",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                struct Update {
                    id: String,
                    status: String,
                    progress: f64,
                    #[serde(default)]
                    content_path: Option<String>,
                }
                let u: Update = args(name, text)?;
                let (download, change) =
                    domain.update_download(&u.id, &u.status, u.progress, u.content_path.as_deref(), None).await?;
                Ok(json!({ "download": answer(download)?, "changed": change.is_some() }))
            })
        },
    },
    Operation {
        name: "organization.start",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Start {
                    id: String,
                    fingerprint: String,
                }
                let s: Start = args(name, text)?;
                answer(domain.start_organization(&s.id, &s.fingerprint).await?)
            })
        },
    },
    Operation {
        name: "organization.finish",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Finish {
                    id: String,
                    #[serde(default)]
                    error: Option<String>,
                }
                let f: Finish = args(name, text)?;
                answer(domain.finish_organization(&f.id, f.error.as_deref()).await?)
            })
        },
    },
    Operation {
        name: "policy.publish",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Publish {
                    name: String,
                    revision: i64,
                }
                let p: Publish = args(name, text)?;
                answer(Authz::new(domain.db.clone()).publish_policy(&p.name, p.revision).await.map_err(from_authz)?)
            })
        },
    },
    Operation {
        name: "title.want",
        run: |domain, _, name, text| Box::pin(async move { domain.want_title(&args::<WantTitle>(name, text)?).await }),
    },
    Operation {
        name: "title.change",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                struct Change {
                    entity_id: String,
                    #[serde(default)]
                    quality: Option<String>,
                    /// Absent: unchanged; `null`: cleared.
                    #[serde(default, deserialize_with = "present")]
                    profile: Option<Option<String>>,
                }
                let c: Change = args(name, text)?;
                let profile = c.profile.as_ref().map(|p| p.as_deref());
                domain.change_title(&c.entity_id, c.quality.as_deref(), profile).await
            })
        },
    },
    Operation {
        name: "title.unwant",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                struct Unwant {
                    entity_id: String,
                    #[serde(default)]
                    season: Option<i64>,
                }
                let u: Unwant = args(name, text)?;
                domain.unwant_title(&u.entity_id, u.season).await
            })
        },
    },
    Operation {
        name: "task.retry",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let id = args::<ById>(name, text)?.id;
                answer(Tasks::new(domain.db.clone()).retry(&id).await.map_err(from_tasks)?)
            })
        },
    },
    Operation {
        name: "task.cancel",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let id = args::<ById>(name, text)?.id;
                answer(Tasks::new(domain.db.clone()).cancel(&id).await.map_err(from_tasks)?)
            })
        },
    },
];
