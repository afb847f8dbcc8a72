//! Looking at files without being tied up by them: only regular files and
//! directories are described or opened, a file is opened non-blocking (a
//! FIFO or device swapped in after the check cannot stall the open) and
//! checked again once open, and long reads stop at the call's deadline.

use std::io::{ErrorKind, Read};
use std::path::Path;

use cap_std::fs::{Dir, File, Metadata, OpenOptions, OpenOptionsExt};
use sha2::{Digest, Sha256};

use super::io_error;
use super::pool::Stop;
use crate::bindings::capstan::host::types::{FileInfo, HostError};

/// Bytes read between two deadline checks.
pub(crate) const CHUNK: usize = 1 << 20;

/// Most entries one listing reads before it gives up.
const MAX_ENTRIES: usize = 100_000;

fn millis(t: std::io::Result<cap_std::time::SystemTime>) -> u64 {
    t.ok()
        .map(|t| t.into_std())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

fn file_info(meta: &Metadata, shown: String) -> FileInfo {
    FileInfo { path: shown, is_dir: meta.is_dir(), size: meta.len(), modified_ms: millis(meta.modified()) }
}

fn not_plain(shown: &str) -> HostError {
    HostError::Invalid(format!("{shown} is not a regular file or directory"))
}

/// Describes a regular file or directory (following symlinks inside the root).
pub fn stat(dir: &Dir, rel: &Path, shown: String) -> Result<FileInfo, HostError> {
    let meta = dir.metadata(rel).map_err(|e| io_error(&shown, e))?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(not_plain(&shown));
    }
    Ok(file_info(&meta, shown))
}

/// Opens a regular file for reading, never blocking on what it finds.
pub(crate) fn open_regular(dir: &Dir, rel: &Path, shown: &str) -> Result<(File, u64), HostError> {
    let before = dir.metadata(rel).map_err(|e| io_error(shown, e))?;
    if !before.is_file() {
        return Err(HostError::Invalid(format!("{shown} is not a regular file")));
    }
    let mut options = OpenOptions::new();
    options.read(true).custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32);
    let file = dir.open_with(rel, &options).map_err(|e| io_error(shown, e))?;
    let meta = file.metadata().map_err(|e| io_error(shown, e))?;
    if !meta.is_file() {
        return Err(HostError::Invalid(format!("{shown} is not a regular file")));
    }
    Ok((file, meta.len()))
}

/// Reads the next chunk, stopping at the deadline.
pub(crate) fn read_chunk(file: &mut File, buf: &mut [u8], stop: &Stop, shown: &str) -> Result<usize, HostError> {
    stop.check(shown)?;
    loop {
        match file.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(shown, e)),
        }
    }
}

pub fn sha256(dir: &Dir, rel: &Path, shown: &str, stop: &Stop) -> Result<String, HostError> {
    let (mut file, _) = open_regular(dir, rel, shown)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = read_chunk(&mut file, &mut buf, stop, shown)?;
        if n == 0 {
            return Ok(hex::encode(hasher.finalize()));
        }
        hasher.update(&buf[..n]);
    }
}

/// A directory's entries, sorted by name, at most `limit`; entries that
/// may not be shown are left out and named in the second list with why.
pub fn list(
    dir: &Dir,
    rel: &Path,
    shown: &str,
    limit: usize,
    stop: &Stop,
) -> Result<(Vec<FileInfo>, Vec<String>), HostError> {
    let mut skipped = Vec::new();
    let mut names = Vec::new();
    for (i, entry) in dir.read_dir(rel).map_err(|e| io_error(shown, e))?.enumerate() {
        if i % 1024 == 0 {
            stop.check(shown)?;
        }
        if i >= MAX_ENTRIES {
            return Err(HostError::TooLarge(format!("{shown} has more than {MAX_ENTRIES} entries")));
        }
        let entry = entry.map_err(|e| io_error(shown, e))?;
        match entry.file_name().into_string() {
            // The host's own files in progress are not the component's to see.
            Ok(name) if name.starts_with(super::HOST_PREFIX) => {}
            Ok(name) => names.push(name),
            Err(raw) => skipped.push(format!("{} (its name is not UTF-8)", raw.to_string_lossy())),
        }
    }
    names.sort();
    let mut out = Vec::new();
    for name in names {
        if out.len() >= limit {
            break;
        }
        let entry_shown = if shown.is_empty() || shown == "." {
            name.clone()
        } else {
            format!("{}/{name}", shown.trim_end_matches('/'))
        };
        match dir.metadata(rel.join(&name)) {
            Ok(meta) if meta.is_file() || meta.is_dir() => out.push(file_info(&meta, entry_shown)),
            Ok(_) => skipped.push(format!("{entry_shown} (not a regular file or directory)")),
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                skipped.push(format!("{entry_shown} (leads outside the root)"))
            }
            Err(e) => skipped.push(format!("{entry_shown} ({})", super::reason(&io_error(&entry_shown, e)))),
        }
    }
    Ok((out, skipped))
}
