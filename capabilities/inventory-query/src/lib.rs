//! Capability `inventory.query` (label read): what the library holds and
//! wants. Lists entities with their slots and, for each slot, where its
//! acquisition stands: the plan that holds it (or the newest one), that
//! plan's download and the download's newest organization. Reads the
//! domain store through `library`, and with `mediaServers` asks the
//! media servers set up whether they hold each title ([`servers`]); it
//! changes nothing.

mod servers;
#[cfg(test)]
mod tests;

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::queries::{
    self, ByKind, DownloadForPlan, OrganizationsForDownload, PlansList, PlansListed,
};
use capstan_sdk::contract::records::{Entity, Slot};
use capstan_sdk::contract::status::{self, PlanStatus};
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Movie,
    Tv,
}

impl Kind {
    /// The entity kind the store writes.
    fn recorded(self) -> status::EntityKind {
        match self {
            Kind::Movie => status::EntityKind::Movie,
            Kind::Tv => status::EntityKind::Tv,
        }
    }
}

// The slot statuses a caller may filter by (not `unwanted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SlotStatus {
    Wanted,
    Reserved,
    Satisfied,
}

impl SlotStatus {
    /// The slot status the store's records carry.
    fn recorded(self) -> status::SlotStatus {
        match self {
            SlotStatus::Wanted => status::SlotStatus::Wanted,
            SlotStatus::Reserved => status::SlotStatus::Reserved,
            SlotStatus::Satisfied => status::SlotStatus::Satisfied,
        }
    }
}

/// Input: optional filters.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InventoryInput {
    /// Only movies or only series.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// Only entities with a slot in this status, and only those slots.
    #[serde(default)]
    pub status: Option<SlotStatus>,
    /// Only entities whose title or original title contains these words.
    #[serde(default)]
    pub search: Option<String>,
    /// At most this many entities (1–500, default 50; 25 with `mediaServers`).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Also ask the media servers whether they hold each title (at most 25).
    #[serde(default)]
    pub media_servers: bool,
}

/// Where one slot's acquisition stands.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlotView {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub season: Option<i64>,
    pub quality: String,
    /// `wanted`, `reserved` or `satisfied`.
    pub status: String,
    /// `{id, status, sourceReleaseId}` of the plan holding the slot, or the newest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
    /// `{id, status, progress}` of that plan's download.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub download: Option<Value>,
    /// `{id, status, mode}` of the download's newest organization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<Value>,
}

/// One entity and its slots.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    pub entity_id: String,
    pub kind: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmdb_id: Option<i64>,
    pub slots: Vec<SlotView>,
    /// With `mediaServers`: what each media server set up says of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_servers: Option<Vec<servers::OnServer>>,
}

/// Output.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InventoryOutput {
    pub items: Vec<Item>,
    /// How many slots per status among the items shown.
    pub counts: Value,
}

/// The capability.
pub struct InventoryQuery;

impl Capability for InventoryQuery {
    type Input = InventoryInput;
    type Output = InventoryOutput;

    const META: Meta = Meta {
        id: "inventory.query",
        version: 1,
        label: Label::Read,
        summary: "What the library holds and wants: movies and series with their slots and acquisition status",
        description: "Lists the library's movies and series, each with its slots (a movie at a quality, or a season) and, per slot, where its acquisition stands: the plan, the download and its progress, and the organization that put it in the library. Filter by kind, slot status (wanted, reserved, satisfied) or title words. With mediaServers, also whether Jellyfin, Emby or Plex holds each title.",
        tags: &["inventory", "library", "status"],
        aliases: &[
            "library",
            "what do I have",
            "what is wanted",
            "my movies",
            "my shows",
            "媒体库",
            "库存",
            "我有什么",
            "想看的",
        ],
        replay: Replay::Safe,
        services: &servers::SERVERS,
    };

    fn invoke(input: InventoryInput) -> Result<Outcome<InventoryOutput>, Failure> {
        let limit = input.limit.unwrap_or(if input.media_servers { servers::MAX_TITLES as u32 } else { 50 });
        if !(1..=500).contains(&limit) {
            return Err(Failure::InvalidInput(format!("limit {limit} is not between 1 and 500")));
        }
        if input.media_servers && limit as usize > servers::MAX_TITLES {
            return Err(Failure::InvalidInput(format!(
                "with mediaServers, ask about at most {} titles (limit), not {limit}",
                servers::MAX_TITLES
            )));
        }
        let words = input.search.as_deref().map(words).unwrap_or_default();
        if input.search.is_some() && words.is_empty() {
            return Err(Failure::InvalidInput("search must contain a word".into()));
        }
        let kind = input.kind.map(Kind::recorded);
        let inventory = domain::call::<queries::InventoryQuery>(&ByKind { kind, limit: 1000 })?;
        let status = input.status.map(SlotStatus::recorded);
        let mut items = Vec::new();
        let mut counts = json!({ "wanted": 0, "reserved": 0, "satisfied": 0 });
        for entry in inventory.items {
            if items.len() as u32 >= limit {
                break;
            }
            let entity = entry.entity;
            if !words.is_empty() && !matches_search(&entity, &words) {
                continue;
            }
            let slots: Vec<Slot> = entry.slots.into_iter().map(|shown| shown.slot).collect();
            let slots: Vec<Slot> = slots.into_iter().filter(|s| status.is_none_or(|st| s.status == st)).collect();
            if status.is_some() && slots.is_empty() {
                continue;
            }
            let mut views = Vec::new();
            for slot in slots {
                if let Some(n) = counts.get_mut(slot.status.as_str()) {
                    *n = json!(n.as_i64().unwrap_or(0) + 1);
                }
                views.push(slot_view(slot)?);
            }
            let on_servers = input.media_servers.then(|| {
                servers::ask(&servers::Title {
                    series: entity.kind == status::EntityKind::Tv,
                    title: &entity.title,
                    year: entity.year,
                    tmdb_id: entity.tmdb_id,
                })
            });
            items.push(Item {
                on_servers,
                entity_id: entity.id,
                kind: entity.kind.as_str().to_string(),
                title: entity.title,
                year: entity.year,
                tmdb_id: entity.tmdb_id,
                slots: views,
            });
        }
        Ok(Outcome::Succeeded(InventoryOutput { items, counts }))
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Every search word appears in the title or the original title.
fn matches_search(entity: &Entity, wanted: &[String]) -> bool {
    [Some(&entity.title), entity.original_title.as_ref()].into_iter().flatten().any(|title| {
        let have = words(title);
        wanted.iter().all(|w| have.contains(w))
    })
}

/// A slot with its plan, download and organization. The plan shown is the
/// one that holds the slot (reserved or submitted) when there is one: a
/// newer cancelled draft says less about the slot than the live plan.
fn slot_view(slot: Slot) -> Result<SlotView, Failure> {
    let listed = PlansListed { slot_id: Some(slot.id.clone()), limit: 20, ..PlansListed::default() };
    let plans = domain::call::<PlansList>(&listed)?;
    let live = plans.iter().find(|p| matches!(p.status, PlanStatus::Submitted | PlanStatus::Reserved));
    let plan = live.or(plans.first());
    let download = match plan {
        Some(p) => domain::call::<DownloadForPlan>(&ById::new(&p.id))?,
        None => None,
    };
    let organization = match &download {
        Some(d) => domain::call::<OrganizationsForDownload>(&ById::new(&d.id))?
            .first()
            .map(|o| json!({ "id": o.id, "status": o.status, "mode": o.mode })),
        None => None,
    };
    Ok(SlotView {
        id: slot.id,
        season: slot.season,
        quality: slot.quality,
        status: slot.status.as_str().to_string(),
        plan: plan.map(|p| json!({ "id": p.id, "status": p.status, "sourceReleaseId": p.source_release_id })),
        download: download.map(|d| json!({ "id": d.id, "status": d.status, "progress": d.progress })),
        organization,
    })
}

capstan_sdk::export_capability!(InventoryQuery);
