//! Putting one planned file in the library, and knowing whether it is
//! already there.
//!
//! Nothing is ever overwritten: a destination that exists with the source's
//! content counts as done (so an interrupted run can simply run again), a
//! destination with other content is a `conflict`. A hardlink that the host
//! refuses as `unavailable` (which is how it reports source and destination
//! on different devices) becomes a copy; every copy is verified by comparing
//! the SHA-256 of source and destination.

use capstan_sdk::host::{HostError, files};
use capstan_sdk::{Failure, JsonSchema};
use serde::Serialize;

use crate::frozen::source_exists;
use crate::{DOWNLOADS, Item, LIBRARY, OrganizeMode};

/// One placed file, as reported to the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placed {
    /// Path under the `downloads` root.
    pub source: String,
    /// Path under the `library` root.
    pub destination: String,
    /// How it got there: the plan's mode, or `copy` when a hardlink was not
    /// possible across devices.
    pub method: OrganizeMode,
    /// Whether the destination was checked to hold the source's content:
    /// by SHA-256 for copies and for files found already in place, by size
    /// for a fresh hardlink or move (the same file under a new name cannot
    /// differ from itself).
    pub verified: bool,
}

/// What is at an item's destination before anything is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Absent,
    /// The source's content is already there.
    Same,
    /// A file with other content: the one an upgrade replaces, or a clash.
    Other,
}

fn placed(item: &Item, method: OrganizeMode, verified: bool) -> Placed {
    Placed { source: item.source.clone(), destination: item.destination.clone(), method, verified }
}

pub(crate) fn clash(item: &Item) -> Failure {
    Failure::Conflict(format!(
        "{} already exists in the library with other content; nothing was overwritten",
        item.destination
    ))
}

/// Whether the destination is free, already holds the source's content,
/// or (`conflict`) holds something else.
pub fn existing(item: &Item) -> Result<Existing, Failure> {
    match looked_at(item)? {
        Existing::Other => Err(clash(item)),
        found => Ok(found),
    }
}

/// What is at the destination; a directory counts as another file.
pub fn looked_at(item: &Item) -> Result<Existing, Failure> {
    let there = match files::stat(LIBRARY, &item.destination) {
        Ok(info) => info,
        Err(HostError::NotFound(_)) => return Ok(Existing::Absent),
        Err(e) => return Err(e.into()),
    };
    if there.is_dir || there.size != item.size {
        return Ok(Existing::Other);
    }
    if !source_exists(item)? {
        // Moved by an earlier attempt: the frozen size is all there is to
        // compare with, and the re-freeze check allowed it.
        return Ok(Existing::Same);
    }
    if files::sha256(DOWNLOADS, &item.source)? == files::sha256(LIBRARY, &item.destination)? {
        Ok(Existing::Same)
    } else {
        Ok(Existing::Other)
    }
}

fn parent(path: &str) -> Option<&str> {
    path.rsplit_once('/').map(|(dir, _)| dir).filter(|d| !d.is_empty())
}

/// Places `item` by `mode`; the destination was found absent just before.
pub fn place(item: &Item, mode: OrganizeMode) -> Result<Placed, Failure> {
    if let Some(dir) = parent(&item.destination) {
        files::mkdir(LIBRARY, dir)?;
    }
    match mode {
        OrganizeMode::Hardlink => match files::hardlink(DOWNLOADS, &item.source, LIBRARY, &item.destination) {
            Ok(()) => Ok(placed(item, OrganizeMode::Hardlink, sized(item)?)),
            // Across devices (or a link the file system will not make): a
            // verified copy does the job, unless the link did land after all.
            Err(HostError::Unavailable(_)) => match existing(item)? {
                Existing::Same => Ok(placed(item, OrganizeMode::Hardlink, true)),
                _ => copy(item),
            },
            Err(HostError::Conflict(_)) => raced(item, OrganizeMode::Hardlink),
            Err(e) => Err(e.into()),
        },
        OrganizeMode::Copy => copy(item),
        OrganizeMode::Move => match files::move_file(DOWNLOADS, &item.source, LIBRARY, &item.destination) {
            Ok(()) => Ok(placed(item, OrganizeMode::Move, sized(item)?)),
            Err(HostError::Conflict(_)) => raced(item, OrganizeMode::Move),
            Err(e) => Err(e.into()),
        },
    }
}

/// The destination appeared between the check and the write.
fn raced(item: &Item, method: OrganizeMode) -> Result<Placed, Failure> {
    match existing(item)? {
        Existing::Same => Ok(placed(item, method, true)),
        _ => Err(Failure::Unavailable(format!("{} could not be placed", item.destination))),
    }
}

fn copy(item: &Item) -> Result<Placed, Failure> {
    match files::copy(DOWNLOADS, &item.source, LIBRARY, &item.destination) {
        Ok(_) => {}
        Err(HostError::Conflict(_)) => return raced(item, OrganizeMode::Copy),
        Err(e) => return Err(e.into()),
    }
    let source = files::sha256(DOWNLOADS, &item.source)?;
    let copied = files::sha256(LIBRARY, &item.destination)?;
    if source != copied {
        return Err(Failure::Unavailable(format!(
            "the copy {} differs from its source {} (sha256 {copied} vs {source})",
            item.destination, item.source
        )));
    }
    Ok(placed(item, OrganizeMode::Copy, true))
}

/// Whether the destination has the planned size after a link or a move.
fn sized(item: &Item) -> Result<bool, Failure> {
    Ok(files::stat(LIBRARY, &item.destination)?.size == item.size)
}
