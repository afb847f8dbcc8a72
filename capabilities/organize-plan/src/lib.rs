//! Capability `organize.plan` (label propose): works out where a completed
//! download's media goes in the library — which files (videos, not samples
//! or extras), under which names (the operator's movie and episode
//! templates), by which mode (hardlink, copy, move), and which files the
//! library already holds for the title it replaces (an upgrade) — and
//! freezes that as an organization plan whose fingerprint `organize.execute`
//! (or, for an upgrade, `organize.replace`) must be given.
//! It reads files and the domain store and drafts the plan; it changes no
//! file.
//!
//! Settings (`[capabilities."organize.plan".settings]`): `mode` (default
//! `hardlink`), `movie_template`, `episode_template` (defaults in
//! [`capstan_organize::naming`]).

use capstan_organize::content;
use capstan_organize::naming::{EPISODE_TEMPLATE, MOVIE_TEMPLATE, Template};
use capstan_organize::plan::{self, Templates};
use capstan_organize::subject::Subject;
use capstan_organize::{Item, parse_mode};
use capstan_sdk::contract::ops::drafts::{NewOrganizationPlan, OrganizationPlanDraft};
use capstan_sdk::contract::status::{DownloadStatus, OrganizeMode};
use capstan_sdk::host::{domain, setting};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// Input: the download to organize.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanInput {
    /// The completed download task whose content is organized.
    pub download_task_id: String,
    /// How files are placed; default from the `mode` setting, else hardlink.
    #[serde(default)]
    pub mode: Option<OrganizeMode>,
}

/// Output: the frozen plan.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanOutput {
    /// The organization to pass to `organize.execute` as `planId`.
    pub organization_id: String,
    /// The frozen plan's fingerprint, to pass to `organize.execute`.
    pub fingerprint: String,
    /// The organization's revision; re-planning bumps it.
    pub revision: i64,
    /// Whether it replaces files the library holds (an upgrade): then
    /// `organize.replace` carries it out, not `organize.execute`.
    pub replaces: bool,
    pub mode: OrganizeMode,
    /// Each file: `source` under `downloads`, `destination` under `library`.
    pub items: Vec<Item>,
}

/// The capability.
pub struct OrganizePlan;

/// The mode from input, else the `mode` setting, else hardlink.
fn mode(input: Option<OrganizeMode>) -> Result<OrganizeMode, Failure> {
    if let Some(mode) = input {
        return Ok(mode);
    }
    match setting("mode") {
        None => Ok(OrganizeMode::Hardlink),
        Some(text) => parse_mode(&text).ok_or_else(|| {
            Failure::InvalidInput(format!("setting mode is {text:?}; it must be hardlink, copy or move"))
        }),
    }
}

fn template(name: &str, default: &str) -> Result<Template, Failure> {
    Template::parse(&setting(name).unwrap_or_else(|| default.to_string()), name)
}

/// The operator's templates, or the defaults.
pub fn templates() -> Result<Templates, Failure> {
    Ok(Templates {
        movie: template("movie_template", MOVIE_TEMPLATE)?,
        episode: template("episode_template", EPISODE_TEMPLATE)?,
    })
}

/// The draft that freezes `items` for download `download_id`.
fn draft(download_id: &str, mode: OrganizeMode, items: &[Item]) -> Result<NewOrganizationPlan, Failure> {
    let items = items
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|e| Failure::Internal(format!("cannot write the plan's items: {e}")))?;
    Ok(NewOrganizationPlan { download_task_id: download_id.to_string(), mode, items })
}

impl Capability for OrganizePlan {
    type Input = PlanInput;
    type Output = PlanOutput;

    const META: Meta = Meta {
        id: "organize.plan",
        version: 1,
        label: Label::Propose,
        summary: "Plan how a completed download goes into the library: which files, what names, hardlink/copy/move",
        description: "Looks at a completed download under the downloads root, picks its video files (skipping samples and extras), names each one under the library root with the operator's movie or episode template (Sonarr/Radarr-style tokens such as {Movie Title}, {Release Year}, {season:00}, {episode:00}, {Quality Full}) and freezes that as an organization plan. Returns the organization id and the plan's fingerprint, which organize.execute needs. Planning again with other files or names re-freezes the same organization under a new fingerprint. Changes no file.",
        tags: &["organize", "policy.library", "library", "import", "rename"],
        aliases: &[
            "organize",
            "import",
            "rename",
            "plan import",
            "move to library",
            "整理",
            "入库",
            "重命名",
            "整理计划",
            "导入媒体库",
        ],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: PlanInput) -> Result<Outcome<PlanOutput>, Failure> {
        let id = input.download_task_id.trim();
        if id.is_empty() {
            return Err(Failure::InvalidInput("downloadTaskId must not be empty".into()));
        }
        let mode = mode(input.mode)?;
        let templates = templates()?;
        let subject = Subject::load(id)?;
        // An unknown status is not completed either.
        if subject.status != DownloadStatus::Completed {
            return Err(Failure::Conflict(format!(
                "download {id} is {}; only a completed download can be organized",
                subject.status
            )));
        }
        let content_path = subject
            .content_path
            .clone()
            .ok_or_else(|| Failure::Conflict(format!("download {id} has no content path yet")))?;
        let media = content::media_files(&content_path)?;
        let items = plan::items(&subject, &media, &templates)?;
        let drafted = domain::call::<OrganizationPlanDraft>(&draft(&subject.download_id, mode, &items)?)?;
        Ok(Outcome::Succeeded(PlanOutput {
            organization_id: drafted.organization.id,
            fingerprint: drafted.artifact.payload_hash,
            revision: drafted.organization.revision,
            replaces: drafted.organization.replaces,
            mode,
            items,
        }))
    }
}

capstan_sdk::export_capability!(OrganizePlan);
