//! Keeping a file an upgrade replaces: it is moved from `library` to the
//! `recycle` root (the host's recycle folder in its data directory) under
//! the organization's id, never deleted. Moving it again finds it already
//! kept; a name already taken in the recycle folder (an earlier attempt
//! that copied across devices and stopped) gets a numbered folder beside
//! it, so nothing there is overwritten either.

use capstan_sdk::host::{HostError, files};
use capstan_sdk::{Failure, JsonSchema};
use serde::Serialize;

use crate::{LIBRARY, RECYCLE};

/// One replaced file and where it is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recycled {
    /// Where it was, under the `library` root.
    pub file: String,
    /// Where it is kept, under the `recycle` root.
    pub kept_as: String,
}

/// How many numbered folders are tried beside a taken name.
const ATTEMPTS: usize = 10;

fn kept_name(organization: &str, attempt: usize, file: &str) -> String {
    match attempt {
        0 => format!("{organization}/{file}"),
        n => format!("{organization}-{n}/{file}"),
    }
}

fn exists(root: &str, path: &str) -> Result<bool, Failure> {
    match files::stat(root, path) {
        Ok(_) => Ok(true),
        Err(HostError::NotFound(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Where organization `organization` kept `file`, if it did.
pub fn kept(organization: &str, file: &str) -> Result<Option<Recycled>, Failure> {
    for attempt in 0..ATTEMPTS {
        let kept_as = kept_name(organization, attempt, file);
        if exists(RECYCLE, &kept_as)? {
            return Ok(Some(Recycled { file: file.to_string(), kept_as }));
        }
    }
    Ok(None)
}

/// Moves `file` (under `library`) to the recycle folder for
/// `organization`. `None` when it is no longer in the library and not kept
/// by this organization either (someone removed it): nothing to keep.
pub fn recycle(organization: &str, file: &str) -> Result<Option<Recycled>, Failure> {
    if !exists(LIBRARY, file)? {
        // Kept by an earlier attempt of this organization, or gone.
        return kept(organization, file);
    }
    for attempt in 0..ATTEMPTS {
        let kept_as = kept_name(organization, attempt, file);
        let dir = kept_as.rsplit_once('/').map_or(organization, |(dir, _)| dir);
        let moved = files::mkdir(RECYCLE, dir).and_then(|()| files::move_file(LIBRARY, file, RECYCLE, &kept_as));
        match moved {
            Ok(()) => return Ok(Some(Recycled { file: file.to_string(), kept_as })),
            Err(HostError::Conflict(_)) => continue,
            Err(HostError::Invalid(m)) if m.contains("root") => {
                return Err(Failure::Unavailable(format!(
                    "there is no recycle folder to keep {file} in, so it was not replaced: {m}"
                )));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(Failure::Conflict(format!(
        "{file} could not be kept: {ATTEMPTS} names for it in the recycle folder are taken; nothing was replaced"
    )))
}
