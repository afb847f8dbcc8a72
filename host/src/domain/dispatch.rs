//! The domain store as the `library`, `drafts` and `records` host imports
//! see it: each named query, draft kind and transition, its JSON arguments
//! (unknown fields refused) and its JSON answer. The names are the contract
//! capability authors write against; `docs/domain.md` lists them.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{Author, Domain, DomainError, NewEntity, NewOrganizationPlan, NewPlan, NewRelease, WantTitle};
use crate::authz::{Authz, AuthzError};
use crate::tasks::{TaskError, Tasks};

/// Every `library` query name.
pub const QUERIES: &[&str] = &[
    "entity.get",
    "entities.list",
    "slot.get",
    "slots.for-entity",
    "slots.list",
    "release.get",
    "release.by-infohash",
    "releases.for-entity",
    "plan.get",
    "plans.list",
    "download.get",
    "download.for-plan",
    "downloads.list",
    "organization.get",
    "organizations.for-download",
    "artifact.get",
    "decisions.list",
    "inventory",
    "policy.get",
    "task.get",
    "tasks.list",
];
/// Every `drafts` kind.
pub const DRAFTS: &[&str] =
    &["entity", "source-release", "identity-match", "decision", "acquisition-plan", "organization-plan", "evidence"];
/// Every `records` transition.
pub const TRANSITIONS: &[&str] = &[
    "plan.reserve",
    "plan.submitted",
    "plan.fail",
    "plan.cancel",
    "download.update",
    "organization.start",
    "organization.finish",
    "policy.publish",
    "title.want",
    "title.change",
    "title.unwant",
    "task.retry",
    "task.cancel",
];

fn args<T: DeserializeOwned>(name: &str, text: &str) -> Result<T, DomainError> {
    let text = if text.trim().is_empty() { "{}" } else { text };
    serde_json::from_str(text).map_err(|e| DomainError::Invalid(format!("arguments of {name}: {e}")))
}

fn answer<T: serde::Serialize>(value: T) -> Result<Value, DomainError> {
    serde_json::to_value(value).map_err(|e| DomainError::Invalid(e.to_string()))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ById {
    id: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    slot_id: Option<String>,
    #[serde(default)]
    subject_id: Option<String>,
    #[serde(default = "default_limit")]
    limit: i64,
}

fn default_limit() -> i64 {
    100
}

fn from_authz(e: AuthzError) -> DomainError {
    match e {
        AuthzError::Invalid(m) => DomainError::Invalid(m),
        AuthzError::NotFound(what, id) => DomainError::NotFound(format!("no {what} {id}")),
        AuthzError::Conflict(m) | AuthzError::Forbidden(m) => DomainError::Conflict(m),
        AuthzError::Sql(e) => DomainError::Sql(e),
    }
}

fn from_tasks(e: TaskError) -> DomainError {
    match e {
        TaskError::NotFound(id) => DomainError::NotFound(format!("no task {id}")),
        TaskError::Sql(e) => DomainError::Sql(e),
        other => DomainError::Conflict(other.to_string()),
    }
}

impl Domain {
    /// Runs a `library` query.
    pub async fn query(&self, name: &str, params: &str) -> Result<Value, DomainError> {
        match name {
            "entity.get" => answer(self.entity(&args::<ById>(name, params)?.id).await?),
            "entities.list" => {
                let l: Listing = args(name, params)?;
                answer(self.entities(l.kind.as_deref(), l.limit).await?)
            }
            "slot.get" => answer(self.slot(&args::<ById>(name, params)?.id).await?),
            "slots.for-entity" => answer(self.slots_for_entity(&args::<ById>(name, params)?.id).await?),
            "slots.list" => {
                let l: Listing = args(name, params)?;
                answer(self.slots_with_status(l.status.as_deref().unwrap_or("wanted"), l.limit).await?)
            }
            "release.get" => answer(self.release(&args::<ById>(name, params)?.id).await?),
            "release.by-infohash" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct ByHash {
                    infohash: String,
                }
                let hash = args::<ByHash>(name, params)?.infohash;
                answer(self.release_by_infohash(&hash).await?)
            }
            "releases.for-entity" => answer(self.releases_for_entity(&args::<ById>(name, params)?.id).await?),
            "plan.get" => answer(self.plan(&args::<ById>(name, params)?.id).await?),
            "plans.list" => {
                let l: Listing = args(name, params)?;
                answer(self.plans(l.status.as_deref(), l.slot_id.as_deref(), l.limit).await?)
            }
            "download.get" => answer(self.download(&args::<ById>(name, params)?.id).await?),
            "download.for-plan" => answer(self.download_for_plan(&args::<ById>(name, params)?.id).await?),
            "downloads.list" => {
                let l: Listing = args(name, params)?;
                answer(self.downloads(l.status.as_deref(), l.limit).await?)
            }
            "organization.get" => answer(self.organization(&args::<ById>(name, params)?.id).await?),
            "organizations.for-download" => {
                answer(self.organizations_for_download(&args::<ById>(name, params)?.id).await?)
            }
            "artifact.get" => answer(self.artifact(&args::<ById>(name, params)?.id).await?),
            "decisions.list" => {
                let l: Listing = args(name, params)?;
                answer(self.decisions(l.status.as_deref(), l.limit).await?)
            }
            "inventory" => {
                let l: Listing = args(name, params)?;
                self.inventory(l.kind.as_deref(), l.limit).await
            }
            "policy.get" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct ByName {
                    name: String,
                }
                let policy_name = args::<ByName>(name, params)?.name;
                let policy = Authz::new(self.db.clone()).published_policy(&policy_name).await.map_err(from_authz)?;
                answer(policy)
            }
            "task.get" => {
                let id = args::<ById>(name, params)?.id;
                let task = Tasks::new(self.db.clone()).get(&id).await?;
                answer(task.ok_or_else(|| DomainError::NotFound(format!("no task {id}")))?)
            }
            "tasks.list" => {
                let l: Listing = args(name, params)?;
                answer(Tasks::new(self.db.clone()).list(l.subject_id.as_deref(), l.limit.clamp(1, 1000)).await?)
            }
            other => Err(DomainError::NotFound(format!("no library query {other:?}; known: {}", QUERIES.join(", ")))),
        }
    }

    /// Creates a `drafts` record.
    pub async fn create_draft(&self, by: &Author, kind: &str, draft: &str) -> Result<Value, DomainError> {
        match kind {
            "entity" => answer(self.upsert_entity(&args::<NewEntity>(kind, draft)?).await?),
            "source-release" => answer(self.record_release(&args::<NewRelease>(kind, draft)?).await?),
            "identity-match" => {
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
                let m: Match = args(kind, draft)?;
                answer(self.match_identity(&m.release_id, m.entity_id.as_deref(), &m.status, &m.evidence).await?)
            }
            "decision" => {
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
                let d: Open = args(kind, draft)?;
                let (decision, created) =
                    self.open_decision(&d.kind, d.subject.as_deref(), &d.options, &d.evidence, &d.dedupe_key).await?;
                Ok(json!({ "decision": answer(decision)?, "created": created }))
            }
            "acquisition-plan" => answer(self.draft_plan(by, &args::<NewPlan>(kind, draft)?).await?),
            "organization-plan" => {
                let (organization, artifact) =
                    self.plan_organization(by, &args::<NewOrganizationPlan>(kind, draft)?).await?;
                Ok(json!({ "organization": answer(organization)?, "artifact": answer(artifact)? }))
            }
            "evidence" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Evidence {
                    #[serde(default)]
                    subject: Option<String>,
                    body: Value,
                }
                let e: Evidence = args(kind, draft)?;
                answer(self.create_artifact(by, "evidence", e.subject.as_deref(), &e.body).await?)
            }
            other => Err(DomainError::NotFound(format!("no draft kind {other:?}; known: {}", DRAFTS.join(", ")))),
        }
    }

    /// Applies a `records` transition.
    pub async fn transition(&self, _by: &Author, name: &str, arguments: &str) -> Result<Value, DomainError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct PlanStep {
            plan_id: String,
            #[serde(default)]
            client_hash: Option<String>,
            #[serde(default)]
            reason: Option<String>,
        }
        match name {
            "plan.reserve" => answer(self.reserve_plan(&args::<PlanStep>(name, arguments)?.plan_id).await?),
            "plan.submitted" => {
                let step: PlanStep = args(name, arguments)?;
                let hash =
                    step.client_hash.ok_or_else(|| DomainError::Invalid("plan.submitted needs clientHash".into()))?;
                let (plan, download) = self.mark_submitted(&step.plan_id, &hash).await?;
                Ok(json!({ "plan": answer(plan)?, "download": answer(download)? }))
            }
            "plan.fail" | "plan.cancel" => {
                let step: PlanStep = args(name, arguments)?;
                let status = if name == "plan.fail" { "failed" } else { "cancelled" };
                answer(self.end_plan(&step.plan_id, status, step.reason.as_deref().unwrap_or("no reason given")).await?)
            }
            "download.update" => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                struct Update {
                    id: String,
                    status: String,
                    progress: f64,
                    #[serde(default)]
                    content_path: Option<String>,
                }
                let u: Update = args(name, arguments)?;
                let (download, change) =
                    self.update_download(&u.id, &u.status, u.progress, u.content_path.as_deref()).await?;
                Ok(json!({ "download": answer(download)?, "changed": change.is_some() }))
            }
            "organization.start" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Start {
                    id: String,
                    fingerprint: String,
                }
                let s: Start = args(name, arguments)?;
                answer(self.start_organization(&s.id, &s.fingerprint).await?)
            }
            "organization.finish" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Finish {
                    id: String,
                    #[serde(default)]
                    error: Option<String>,
                }
                let f: Finish = args(name, arguments)?;
                answer(self.finish_organization(&f.id, f.error.as_deref()).await?)
            }
            "policy.publish" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Publish {
                    name: String,
                    revision: i64,
                }
                let p: Publish = args(name, arguments)?;
                answer(Authz::new(self.db.clone()).publish_policy(&p.name, p.revision).await.map_err(from_authz)?)
            }
            "title.want" => self.want_title(&args::<WantTitle>(name, arguments)?).await,
            "title.change" => {
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
                let c: Change = args(name, arguments)?;
                let profile = c.profile.as_ref().map(|p| p.as_deref());
                self.change_title(&c.entity_id, c.quality.as_deref(), profile).await
            }
            "title.unwant" => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                struct Unwant {
                    entity_id: String,
                    #[serde(default)]
                    season: Option<i64>,
                }
                let u: Unwant = args(name, arguments)?;
                self.unwant_title(&u.entity_id, u.season).await
            }
            "task.retry" => {
                let id = args::<ById>(name, arguments)?.id;
                answer(Tasks::new(self.db.clone()).retry(&id).await.map_err(from_tasks)?)
            }
            "task.cancel" => {
                let id = args::<ById>(name, arguments)?.id;
                answer(Tasks::new(self.db.clone()).cancel(&id).await.map_err(from_tasks)?)
            }
            other => Err(DomainError::NotFound(format!("no transition {other:?}; known: {}", TRANSITIONS.join(", ")))),
        }
    }

    /// What the library holds and wants: entities with their slots.
    pub async fn inventory(&self, kind: Option<&str>, limit: i64) -> Result<Value, DomainError> {
        let mut items = Vec::new();
        for entity in self.entities(kind, limit).await? {
            let slots = self.slots_for_entity(&entity.id).await?;
            items.push(json!({ "entity": answer(&entity)?, "slots": answer(&slots)? }));
        }
        Ok(json!({ "items": items }))
    }
}

/// A field that may be absent (`None`), `null` (`Some(None)`) or set.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}
