//! What a person needs to judge a plan before approving it, in words: for
//! a download, the title it is for, the release, its size, quality and
//! indexer, and how it reaches the client; for an import, each file's
//! source and destination, and for an upgrade also the files it replaces,
//! which go to the recycle folder. Reads only.

use serde_json::{Value, json};

use super::titles::named;
use super::{Domain, DomainError, Slot};

/// Most files of an import listed in its summary.
const MAX_FILES_SHOWN: usize = 20;

impl Domain {
    async fn slot_title(&self, slot: &Slot) -> Result<String, DomainError> {
        let entity = self.entity(&slot.entity_id).await?;
        Ok(named(&entity.title, entity.year, slot.season))
    }

    /// The plan of `plan_type` (`acquisition` or `organization`) as a
    /// person judges it; `None` for a plan the store does not hold.
    pub async fn plan_summary(&self, plan_type: &str, plan_id: &str) -> Result<Option<Value>, DomainError> {
        let found = match plan_type {
            "acquisition" => self.acquisition_summary(plan_id).await,
            "organization" | "replacement" => self.organization_summary(plan_id).await,
            _ => return Ok(None),
        };
        match found {
            Ok(summary) => Ok(Some(summary)),
            Err(DomainError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn acquisition_summary(&self, plan_id: &str) -> Result<Value, DomainError> {
        let plan = self.plan(plan_id).await?;
        let slot = self.slot(&plan.slot_id).await?;
        let p = &plan.payload;
        Ok(json!({
            "title": self.slot_title(&slot).await?,
            "release": p.get("title"),
            "size": p.get("size"),
            "quality": p.get("quality"),
            "indexer": p.get("indexer"),
            "handOff": p.pointer("/handOff/note"),
            "upgrade": p.get("upgrade"),
            "status": plan.status,
        }))
    }

    async fn organization_summary(&self, organization_id: &str) -> Result<Value, DomainError> {
        let organization = self.organization(organization_id).await?;
        let download = self.download(&organization.download_task_id).await?;
        let plan = self.plan(&download.plan_id).await?;
        let slot = self.slot(&plan.slot_id).await?;
        let items = organization.items.as_array().map(Vec::as_slice).unwrap_or_default();
        let files: Vec<Value> = items
            .iter()
            .take(MAX_FILES_SHOWN)
            .map(|i| {
                let mut file = json!({ "source": i.get("source"), "destination": i.get("destination") });
                if let Some(replaces) = i.get("replaces").filter(|r| r.as_array().is_some_and(|r| !r.is_empty())) {
                    file["replaces"] = replaces.clone();
                }
                file
            })
            .collect();
        Ok(json!({
            "title": self.slot_title(&slot).await?,
            "release": plan.payload.get("title"),
            "mode": organization.mode,
            "replaces": organization.replaces,
            "files": files,
            "moreFiles": items.len().saturating_sub(MAX_FILES_SHOWN),
            "status": organization.status,
        }))
    }
}
