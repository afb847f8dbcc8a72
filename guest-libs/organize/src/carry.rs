//! Carrying out a frozen organization, exactly as planned and only while
//! the plan is current: the body of `organize.execute` (files go where
//! nothing is) and of `organize.replace` (an upgrade: each file the library
//! held for the title goes to the recycle folder as its replacement comes
//! in). Each refuses the other's organizations, so a grant or an approval
//! for placing files never replaces one.
//!
//! Every destination is checked before the organization is started, so a
//! clash leaves nothing created. A replaced file at another path than its
//! replacement is recycled once the replacement is in place; one at the
//! same path is recycled just before. Running again after an interruption
//! finishes what is left: files in place count as done, files already
//! kept are found in the recycle folder.

use capstan_sdk::contract::ops::transitions::{
    OrganizationFinish, OrganizationFinishRecord, OrganizationStart, OrganizationStartRecord,
};
use capstan_sdk::contract::status::OrganizationStatus;
use capstan_sdk::host::domain;
use capstan_sdk::{Failure, Verification};
use serde::{Deserialize, Serialize};

use crate::Item;
use crate::frozen::Frozen;
use crate::place::{self, Existing, Placed};
use crate::recycle::{self, Recycled};

/// Input: the organization to carry out and the fingerprint reviewed.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CarryInput {
    /// The organization id `organize.plan` returned.
    pub plan_id: String,
    /// The fingerprint `organize.plan` returned for that plan.
    pub fingerprint: String,
}

/// Output: what was placed where, and what was kept in the recycle folder.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Carried {
    pub organization_id: String,
    /// `succeeded`.
    pub status: String,
    pub items: Vec<Placed>,
    /// The files replaced, each with where it is kept under the `recycle`
    /// root (an upgrade only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recycled: Vec<Recycled>,
}

/// Which organizations a capability carries out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrying {
    /// Those that replace nothing (`organize.execute`).
    Placing,
    /// Those that replace files the library holds (`organize.replace`).
    Replacing,
}

fn output(org: &Frozen, items: Vec<Placed>, recycled: Vec<Recycled>) -> Carried {
    Carried { organization_id: org.id.clone(), status: OrganizationStatus::Succeeded.as_str().into(), items, recycled }
}

fn in_place(org: &Frozen, item: &Item) -> Placed {
    Placed { source: item.source.clone(), destination: item.destination.clone(), method: org.mode, verified: true }
}

/// `conflict` unless the organization is one `carrying` carries out.
fn check_kind(org: &Frozen, carrying: Carrying) -> Result<(), Failure> {
    match (carrying, org.replaces) {
        (Carrying::Placing, true) => Err(Failure::Conflict(format!(
            "organization {} replaces files the library holds (an upgrade); organize.replace carries it out, \
             keeping the old files in the recycle folder",
            org.id
        ))),
        (Carrying::Replacing, false) => {
            Err(Failure::Conflict(format!("organization {} replaces no file; organize.execute carries it out", org.id)))
        }
        _ => Ok(()),
    }
}

/// Every replaced path, once, in plan order.
fn replaced(org: &Frozen) -> Vec<&str> {
    let mut all: Vec<&str> = Vec::new();
    for path in org.items.iter().flat_map(|i| i.replaces.iter()) {
        if !all.contains(&path.as_str()) {
            all.push(path);
        }
    }
    all
}

fn already_done(org: &Frozen) -> Result<Carried, Failure> {
    let items = org
        .items
        .iter()
        .map(|item| match place::existing(item)? {
            Existing::Same => Ok(in_place(org, item)),
            _ => Err(Failure::Conflict(format!(
                "organization {} succeeded, but {} is no longer in the library",
                org.id, item.destination
            ))),
        })
        .collect::<Result<_, Failure>>()?;
    // Only looked for: a finished organization moves nothing again.
    let mut recycled = Vec::new();
    for path in replaced(org) {
        recycled.extend(recycle::kept(&org.id, path)?);
    }
    Ok(output(org, items, recycled))
}

/// What each item's destination holds before anything is done: absent,
/// already in place, or (a file the plan replaces) to be recycled first.
/// Any other file there is a clash, found before anything is created.
fn looked_at(org: &Frozen) -> Result<Vec<Existing>, Failure> {
    let replaced = replaced(org);
    org.items
        .iter()
        .map(|item| match place::looked_at(item)? {
            Existing::Other if replaced.contains(&item.destination.as_str()) => Ok(Existing::Other),
            Existing::Other => Err(place::clash(item)),
            found => Ok(found),
        })
        .collect()
}

/// Places every item not yet in place, recycling what each replaces; the
/// first failure stops the run. A replaced file at a new file's path is
/// kept just before that file is placed; any other once the item that
/// replaces it is in place. A path some item is placed at is never
/// recycled afterwards, so a run again after an interruption cannot take
/// a new file for an old one.
fn run(org: &Frozen, found: &[Existing]) -> Result<(Vec<Placed>, Vec<Recycled>), Failure> {
    let destinations: Vec<&str> = org.items.iter().map(|i| i.destination.as_str()).collect();
    let mut placed = Vec::new();
    let mut recycled: Vec<Recycled> = Vec::new();
    let keep = |path: &str, recycled: &mut Vec<Recycled>| -> Result<(), Failure> {
        if !recycled.iter().any(|r| r.file == path) {
            recycled.extend(recycle::recycle(&org.id, path)?);
        }
        Ok(())
    };
    for (item, found) in org.items.iter().zip(found) {
        match found {
            Existing::Same => placed.push(in_place(org, item)),
            Existing::Absent => placed.push(place::place(item, org.mode)?),
            Existing::Other => {
                keep(&item.destination, &mut recycled)?;
                placed.push(place::place(item, org.mode)?);
            }
        }
        for path in item.replaces.iter().filter(|p| !destinations.contains(&p.as_str())) {
            keep(path, &mut recycled)?;
        }
    }
    // What an earlier attempt kept, for the answer.
    for path in replaced(org) {
        if !recycled.iter().any(|r| r.file == path) {
            recycled.extend(recycle::kept(&org.id, path)?);
        }
    }
    Ok((placed, recycled))
}

/// Carries out organization `plan_id` as frozen under `fingerprint`.
pub fn invoke(input: &CarryInput, carrying: Carrying) -> Result<Carried, Failure> {
    let id = input.plan_id.trim();
    if id.is_empty() || input.fingerprint.trim().is_empty() {
        return Err(Failure::InvalidInput("planId and fingerprint must not be empty".into()));
    }
    let org = Frozen::load(id)?;
    org.check_fingerprint(&input.fingerprint)?;
    check_kind(&org, carrying)?;
    if org.status == OrganizationStatus::Succeeded {
        // Running a finished organization again changes nothing.
        return already_done(&org);
    }
    org.check_files()?;
    let found = looked_at(&org)?;
    domain::call::<OrganizationStartRecord>(&OrganizationStart {
        id: org.id.clone(),
        fingerprint: org.fingerprint.clone(),
    })?;
    match run(&org, &found) {
        Ok((items, recycled)) => {
            domain::call::<OrganizationFinishRecord>(&OrganizationFinish { id: org.id.clone(), error: None })?;
            Ok(output(&org, items, recycled))
        }
        Err(failure) => {
            // Recorded as failed, the download is back to `completed` and
            // can be planned again; files already placed stay and count as
            // done next time, files already recycled stay kept.
            let error = failure.to_string();
            let finish = OrganizationFinish { id: org.id.clone(), error: Some(error.clone()) };
            domain::call::<OrganizationFinishRecord>(&finish)
                .map_err(|e| Failure::Unavailable(format!("{error}; recording the failure also failed: {e}")))?;
            Err(failure)
        }
    }
}

/// Says from the domain store whether the organization was carried out.
/// Succeeded (with this fingerprint) is done. Anything else is not done —
/// including `running` with every file already in place: the organization
/// is not finished (download not imported, slot not settled) and running
/// again is safe, since files already in place count as done and starting
/// a running organization continues it.
pub fn verify(input: &CarryInput) -> Result<Verification<Carried>, Failure> {
    let org = Frozen::load(input.plan_id.trim())?;
    if org.status != OrganizationStatus::Succeeded || org.check_fingerprint(&input.fingerprint).is_err() {
        return Ok(Verification::NotDone);
    }
    match already_done(&org) {
        Ok(done) => Ok(Verification::Done(done)),
        Err(e) => Ok(Verification::CannotTell(format!(
            "organization {} is recorded as succeeded but the library does not match: {e}",
            org.id
        ))),
    }
}
