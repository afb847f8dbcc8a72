//! Capability `organize.execute` (label execute, plan type `organization`):
//! places a completed download's media in the library exactly as its
//! frozen organization plan says — and only while that plan is still
//! current.
//!
//! [`frozen`] reads the plan and re-freezes it (the caller's fingerprint
//! must be the organization's current one; the download's files must be
//! the ones planned), [`place`] puts each file in place without ever
//! overwriting. Every destination is checked before the organization is
//! started, so a clash leaves nothing created. The organization is started
//! and finished through `records`; finishing marks the download imported
//! and the slot satisfied.

pub mod frozen;
pub mod place;

#[cfg(test)]
mod tests;

use capstan_sdk::contract::ops::transitions::{
    OrganizationFinish, OrganizationFinishRecord, OrganizationStart, OrganizationStartRecord,
};
use capstan_sdk::contract::status::OrganizationStatus;
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay, Verification};
use serde::{Deserialize, Serialize};

use frozen::Frozen;
use place::{Existing, Placed};

/// Input: the organization to carry out and the fingerprint reviewed.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecuteInput {
    /// The organization id `organize.plan` returned.
    pub plan_id: String,
    /// The fingerprint `organize.plan` returned for that plan.
    pub fingerprint: String,
}

/// Output: what was placed where.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteOutput {
    pub organization_id: String,
    /// `succeeded`.
    pub status: String,
    pub items: Vec<Placed>,
}

/// The capability.
pub struct OrganizeExecute;

fn output(org: &Frozen, items: Vec<Placed>) -> ExecuteOutput {
    ExecuteOutput { organization_id: org.id.clone(), status: OrganizationStatus::Succeeded.as_str().into(), items }
}

fn already_placed(org: &Frozen) -> Result<Vec<Placed>, Failure> {
    org.items
        .iter()
        .map(|item| match place::existing(item)? {
            Existing::Same => Ok(Placed {
                source: item.source.clone(),
                destination: item.destination.clone(),
                method: org.mode,
                verified: true,
            }),
            Existing::Absent => Err(Failure::Conflict(format!(
                "organization {} succeeded, but {} is no longer in the library",
                org.id, item.destination
            ))),
        })
        .collect()
}

/// Places every item not yet in place; the first failure stops the run.
fn run(org: &Frozen, waiting: &[bool]) -> Result<Vec<Placed>, Failure> {
    org.items
        .iter()
        .zip(waiting)
        .map(|(item, &absent)| {
            if absent {
                place::place(item, org.mode)
            } else {
                Ok(Placed {
                    source: item.source.clone(),
                    destination: item.destination.clone(),
                    method: org.mode,
                    verified: true,
                })
            }
        })
        .collect()
}

impl Capability for OrganizeExecute {
    type Input = ExecuteInput;
    type Output = ExecuteOutput;

    const META: Meta = Meta {
        id: "organize.execute",
        version: 1,
        label: Label::Execute,
        summary: "Carry out an organization plan: hardlink, copy or move a download's files into the library",
        description: "Places a completed download's media in the library exactly as the organization plan made by organize.plan says, given the plan's id and fingerprint. Refuses with a conflict when the plan was re-made since (another fingerprint) or the download's files changed, when a destination already holds a different file, and while another call is carrying out the same organization; nothing is ever overwritten. Hardlinks fall back to a verified copy across devices; copies are verified by SHA-256. Running it again after an interruption finishes what is left. On success the download is imported and the wanted slot satisfied.",
        tags: &["organize", "policy.library", "plan:organization", "library", "import", "rename"],
        aliases: &[
            "organize",
            "import",
            "rename",
            "run import",
            "move to library",
            "hardlink",
            "整理",
            "入库",
            "重命名",
            "执行整理",
            "导入媒体库",
        ],
        replay: Replay::Verify,
        services: &[],
    };

    fn invoke(input: ExecuteInput) -> Result<Outcome<ExecuteOutput>, Failure> {
        let id = input.plan_id.trim();
        if id.is_empty() || input.fingerprint.trim().is_empty() {
            return Err(Failure::InvalidInput("planId and fingerprint must not be empty".into()));
        }
        let org = Frozen::load(id)?;
        org.check_fingerprint(&input.fingerprint)?;
        if org.status == OrganizationStatus::Succeeded {
            // Running a finished organization again changes nothing.
            return Ok(Outcome::Succeeded(output(&org, already_placed(&org)?)));
        }
        org.check_files()?;
        // Every clash is found before anything is created.
        let waiting = org
            .items
            .iter()
            .map(|item| Ok(place::existing(item)? == Existing::Absent))
            .collect::<Result<Vec<bool>, Failure>>()?;
        domain::call::<OrganizationStartRecord>(&OrganizationStart {
            id: org.id.clone(),
            fingerprint: org.fingerprint.clone(),
        })?;
        match run(&org, &waiting) {
            Ok(items) => {
                domain::call::<OrganizationFinishRecord>(&OrganizationFinish { id: org.id.clone(), error: None })?;
                Ok(Outcome::Succeeded(output(&org, items)))
            }
            Err(failure) => {
                // Recorded as failed, the download is back to `completed`
                // and can be planned again; files already placed stay and
                // count as done next time.
                let error = failure.to_string();
                let finish = OrganizationFinish { id: org.id.clone(), error: Some(error.clone()) };
                domain::call::<OrganizationFinishRecord>(&finish)
                    .map_err(|e| Failure::Unavailable(format!("{error}; recording the failure also failed: {e}")))?;
                Err(failure)
            }
        }
    }

    /// Says from the domain store whether the organization was carried out.
    /// Succeeded (with this fingerprint) is done. Anything else is not done
    /// — including `running` with every file already in place: the
    /// organization is not finished (download not imported, slot not
    /// satisfied) and running again is safe, since files already in place
    /// count as done and starting a running organization continues it.
    /// Answering `done` there would leave it running for good, and
    /// `cannot-tell` would leave a human to do what a re-run does.
    fn verify(input: ExecuteInput) -> Result<Verification<ExecuteOutput>, Failure> {
        let org = Frozen::load(input.plan_id.trim())?;
        if org.status != OrganizationStatus::Succeeded || org.check_fingerprint(&input.fingerprint).is_err() {
            return Ok(Verification::NotDone);
        }
        match already_placed(&org) {
            Ok(items) => Ok(Verification::Done(output(&org, items))),
            Err(e) => Ok(Verification::CannotTell(format!(
                "organization {} is recorded as succeeded but the library does not match: {e}",
                org.id
            ))),
        }
    }
}

capstan_sdk::export_capability!(OrganizeExecute);
