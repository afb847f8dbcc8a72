//! The `library` queries: reads of the domain store.

use serde::Deserialize;
use serde_json::Value;

use super::{ById, Listing, Operation, answer, args, from_authz};
use crate::authz::Authz;
use crate::domain::DomainError;
use crate::tasks::Tasks;

/// Every `library` query (read).
pub const QUERIES: &[Operation] = &[
    Operation {
        name: "entity.get",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.entity(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "entities.list",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let l: Listing = args(name, text)?;
                answer(domain.entities(l.kind.as_deref(), l.limit).await?)
            })
        },
    },
    Operation {
        name: "slot.get",
        run: |domain, _, name, text| Box::pin(async move { answer(domain.slot(&args::<ById>(name, text)?.id).await?) }),
    },
    Operation {
        name: "slots.for-entity",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.slots_for_entity(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "slots.list",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let l: Listing = args(name, text)?;
                answer(domain.slots_with_status(l.status.as_deref().unwrap_or("wanted"), l.limit).await?)
            })
        },
    },
    Operation {
        name: "release.get",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.release(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "release.by-infohash",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct ByHash {
                    infohash: String,
                }
                let hash = args::<ByHash>(name, text)?.infohash;
                answer(domain.release_by_infohash(&hash).await?)
            })
        },
    },
    Operation {
        name: "releases.for-entity",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.releases_for_entity(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "plan.get",
        run: |domain, _, name, text| Box::pin(async move { answer(domain.plan(&args::<ById>(name, text)?.id).await?) }),
    },
    Operation {
        name: "plans.list",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let l: Listing = args(name, text)?;
                answer(domain.plans(l.status.as_deref(), l.slot_id.as_deref(), l.limit).await?)
            })
        },
    },
    Operation {
        name: "download.get",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.download(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "download.for-plan",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.download_for_plan(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "downloads.list",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let l: Listing = args(name, text)?;
                answer(domain.downloads(l.status.as_deref(), l.limit).await?)
            })
        },
    },
    Operation {
        name: "organization.get",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.organization(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "organizations.for-download",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.organizations_for_download(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "artifact.get",
        run: |domain, _, name, text| {
            Box::pin(async move { answer(domain.artifact(&args::<ById>(name, text)?.id).await?) })
        },
    },
    Operation {
        name: "decisions.list",
        run: |domain, by, name, text| {
            Box::pin(async move {
                let l: Listing = args(name, text)?;
                let decisions = domain.decisions(l.status.as_deref(), l.limit).await?;
                // A component sees all of the decisions it opened and only the
                // outline of the rest: evidence, options and answers carry
                // what other openers (and the host) found and what a human
                // chose, which is not a reader's to learn.
                let seen = decisions
                    .iter()
                    .map(|d| match &by.capability {
                        Some(asker) if d.opened_by.as_deref() != Some(asker.as_str()) => Ok(outline(d)),
                        _ => answer(d),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Value::Array(seen))
            })
        },
    },
    Operation {
        name: "inventory",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let l: Listing = args(name, text)?;
                domain.inventory(l.kind.as_deref(), l.limit).await
            })
        },
    },
    Operation {
        name: "policy.get",
        run: |domain, _, name, text| {
            Box::pin(async move {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct ByName {
                    name: String,
                }
                let policy_name = args::<ByName>(name, text)?.name;
                let policy = Authz::new(domain.db.clone()).published_policy(&policy_name).await.map_err(from_authz)?;
                answer(policy)
            })
        },
    },
    Operation {
        name: "task.get",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let id = args::<ById>(name, text)?.id;
                let task = Tasks::new(domain.db.clone()).get(&id).await?;
                answer(task.ok_or_else(|| DomainError::NotFound(format!("no task {id}")))?)
            })
        },
    },
    Operation {
        name: "tasks.list",
        run: |domain, _, name, text| {
            Box::pin(async move {
                let l: Listing = args(name, text)?;
                answer(Tasks::new(domain.db.clone()).list(l.subject_id.as_deref(), l.limit.clamp(1, 1000)).await?)
            })
        },
    },
];

/// What a component may see of a decision another opener made.
fn outline(decision: &crate::domain::Decision) -> Value {
    serde_json::json!({
        "id": decision.id,
        "kind": decision.kind,
        "subject": decision.subject,
        "status": decision.status,
    })
}
