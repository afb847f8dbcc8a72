//! Changing files without ever replacing or losing one. A new name is only
//! ever made by an operation that fails when the name exists —
//! `renameat2(RENAME_NOREPLACE)`, or `linkat` where the file system has no
//! such rename — so two calls racing for one target cannot both win. A
//! copy is written to a temporary file in the target's directory (created
//! exclusively, synced) and only then given its name. A move that cannot be
//! one rename first *claims* its source — renames it to a host name no
//! component can see or touch ([`super::HOST_PREFIX`]) — so what it copies
//! and later removes is exactly what it claimed, whatever other calls do
//! meanwhile; if it cannot finish, the source gets its name back.
//! Symbolic links are never moved or linked: their meaning changes with
//! their place, so one could point out of the roots after the move.

use std::io::Write;
use std::path::{Component, Path};

use cap_std::fs::{Dir, OpenOptions};
use rustix::fs::{AtFlags, RenameFlags};
use rustix::io::Errno;

use super::pool::Stop;
use super::read::{CHUNK, open_regular, read_chunk};
use super::{HOST_PREFIX, io_error};
use crate::bindings::capstan::host::types::HostError;

/// A fresh host name for a file in progress (`kind`: `part`, `moving`).
fn host_name(kind: &str) -> String {
    format!("{HOST_PREFIX}{}.{kind}", uuid::Uuid::new_v4().simple())
}

/// The directory holding `rel` (opened inside the root) and its last name.
fn parent_of(dir: &Dir, rel: &Path, shown: &str) -> Result<(Dir, String), HostError> {
    let name = match rel.components().next_back() {
        Some(Component::Normal(name)) => {
            name.to_str().ok_or_else(|| HostError::Invalid(format!("{shown}: the name is not UTF-8")))?.to_string()
        }
        _ => return Err(HostError::Invalid(format!("{shown} does not name a file"))),
    };
    let parent = rel.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let parent = dir.open_dir(parent).map_err(|e| io_error(shown, e))?;
    Ok((parent, name))
}

fn errno_error(shown: &str, e: Errno) -> HostError {
    io_error(shown, std::io::Error::from_raw_os_error(e.raw_os_error()))
}

/// Gives `from` (in `from_dir`) the new name `to` (in `to_dir`) unless
/// `to` exists. `Err(EXDEV)` is passed up for the caller's fallback.
fn rename_noreplace(from_dir: &Dir, from: &str, to_dir: &Dir, to: &str, is_dir: bool) -> Result<(), Errno> {
    match rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
        // The file system has no no-replace rename: a hard link is just as
        // exclusive, for files (a directory cannot be linked). The source is
        // claimed first, so the name removed afterwards is the one linked.
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) if !is_dir => {
            let claimed = claim(from_dir, from)?;
            match rustix::fs::linkat(from_dir, claimed.as_str(), to_dir, to, AtFlags::empty()) {
                Ok(()) => rustix::fs::unlinkat(from_dir, claimed.as_str(), AtFlags::empty()),
                Err(e) => {
                    give_back(from_dir, &claimed, from);
                    Err(e)
                }
            }
        }
        other => other,
    }
}

/// Renames `name` to a fresh host name (which cannot exist, so a plain
/// rename replaces nothing) and returns that name.
fn claim(dir: &Dir, name: &str) -> Result<String, Errno> {
    let claimed = host_name("moving");
    rustix::fs::renameat(dir, name, dir, claimed.as_str())?;
    Ok(claimed)
}

/// Gives a claimed file its name back unless that name was taken meanwhile
/// (then it stays under the host name, logged, rather than replace anything).
fn give_back(dir: &Dir, claimed: &str, name: &str) {
    match rustix::fs::renameat_with(dir, claimed, dir, name, RenameFlags::NOREPLACE) {
        Ok(()) => {}
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP)
            if rustix::fs::linkat(dir, claimed, dir, name, AtFlags::empty()).is_ok() =>
        {
            let _ = rustix::fs::unlinkat(dir, claimed, AtFlags::empty());
        }
        Err(e) => tracing::error!(
            target: "capstan::files",
            file = name,
            kept_as = claimed,
            error = %e,
            "a file being moved could not get its name back; it is kept under the host's name"
        ),
    }
}

/// Refuses a symlink as the thing to move or link.
fn not_a_symlink(dir: &Dir, rel: &Path, shown: &str) -> Result<cap_std::fs::Metadata, HostError> {
    let meta = dir.symlink_metadata(rel).map_err(|e| io_error(shown, e))?;
    if meta.file_type().is_symlink() {
        return Err(HostError::Denied(format!(
            "{shown} is a symbolic link; only regular files and directories are moved or linked"
        )));
    }
    if !meta.is_file() && !meta.is_dir() {
        return Err(HostError::Invalid(format!("{shown} is not a regular file or directory")));
    }
    Ok(meta)
}

/// Refuses a directory holding a symlink that, moved with it, could point
/// somewhere else: an absolute one, or a relative one climbing out of it.
fn links_stay_inside(dir: &Dir, rel: &Path, shown: &str, depth: usize, stop: &Stop) -> Result<(), HostError> {
    stop.check(shown)?;
    for entry in dir.read_dir(rel).map_err(|e| io_error(shown, e))? {
        let entry = entry.map_err(|e| io_error(shown, e))?;
        let path = rel.join(entry.file_name());
        let kind = entry.file_type().map_err(|e| io_error(shown, e))?;
        if kind.is_dir() {
            links_stay_inside(dir, &path, shown, depth + 1, stop)?;
        } else if kind.is_symlink() {
            let target = dir.read_link(&path).map_err(|e| io_error(shown, e))?;
            let mut level = depth as i64;
            let mut escapes = target.is_absolute();
            for c in target.components() {
                match c {
                    Component::ParentDir => level -= 1,
                    Component::Normal(_) => level += 1,
                    _ => {}
                }
                escapes |= level < 0;
            }
            if escapes {
                return Err(HostError::Denied(format!(
                    "{shown} holds a symbolic link ({}) that points outside it; it is not moved",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Writes `from` to a new temporary file beside `to_name`, synced, and
/// gives it that name unless it exists. Returns the bytes copied.
fn copy_into_place(
    from_dir: &Dir,
    from: &Path,
    s: &str,
    to_parent: &Dir,
    to_name: &str,
    t: &str,
    stop: &Stop,
) -> Result<u64, HostError> {
    let (mut source, expected) = open_regular(from_dir, from, s)?;
    let tmp = host_name("part");
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let mut out = to_parent.open_with(&tmp, &options).map_err(|e| io_error(t, e))?;
    let result = (|| {
        let mut buf = vec![0u8; CHUNK];
        let mut copied = 0u64;
        loop {
            let n = read_chunk(&mut source, &mut buf, stop, s)?;
            if n == 0 {
                break;
            }
            out.write_all(&buf[..n]).map_err(|e| io_error(t, e))?;
            copied += n as u64;
        }
        if copied != expected {
            return Err(HostError::Unavailable(format!(
                "copy of {s} is incomplete ({copied} of {expected} bytes): it changed while being copied"
            )));
        }
        out.sync_all().map_err(|e| io_error(t, e))?;
        stop.check(t)?;
        rename_noreplace(to_parent, &tmp, to_parent, to_name, false).map_err(|e| errno_error(t, e))?;
        Ok(copied)
    })();
    if result.is_err() {
        // Only the host can name its temporary files: this is ours.
        let _ = rustix::fs::unlinkat(to_parent, tmp.as_str(), AtFlags::empty());
    }
    let _ = rustix::fs::fsync(to_parent);
    result
}

pub fn copy(
    from_dir: &Dir,
    from: &Path,
    s: &str,
    to_dir: &Dir,
    to: &Path,
    t: &str,
    stop: &Stop,
) -> Result<u64, HostError> {
    let (to_parent, to_name) = parent_of(to_dir, to, t)?;
    if to_parent.symlink_metadata(&to_name).is_ok() {
        return Err(HostError::Conflict(format!("{t} already exists")));
    }
    copy_into_place(from_dir, from, s, &to_parent, &to_name, t, stop)
}

pub fn hardlink(from_dir: &Dir, from: &Path, s: &str, to_dir: &Dir, to: &Path, t: &str) -> Result<(), HostError> {
    let meta = not_a_symlink(from_dir, from, s)?;
    if !meta.is_file() {
        return Err(HostError::Invalid(format!("{s} is not a regular file")));
    }
    let (from_parent, from_name) = parent_of(from_dir, from, s)?;
    let (to_parent, to_name) = parent_of(to_dir, to, t)?;
    // linkat never replaces: an existing target is EEXIST, atomically.
    rustix::fs::linkat(&from_parent, from_name.as_str(), &to_parent, to_name.as_str(), AtFlags::empty())
        .map_err(|e| errno_error(t, e))?;
    let _ = rustix::fs::fsync(&to_parent);
    Ok(())
}

pub fn move_(
    from_dir: &Dir,
    from: &Path,
    s: &str,
    to_dir: &Dir,
    to: &Path,
    t: &str,
    stop: &Stop,
) -> Result<(), HostError> {
    let meta = not_a_symlink(from_dir, from, s)?;
    if meta.is_dir() {
        links_stay_inside(from_dir, from, s, 0, stop)?;
    }
    let (from_parent, from_name) = parent_of(from_dir, from, s)?;
    let (to_parent, to_name) = parent_of(to_dir, to, t)?;
    match rename_noreplace(&from_parent, &from_name, &to_parent, &to_name, meta.is_dir()) {
        Ok(()) => {
            let _ = rustix::fs::fsync(&to_parent);
            let _ = rustix::fs::fsync(&from_parent);
            Ok(())
        }
        Err(Errno::XDEV) if meta.is_dir() => Err(HostError::Unavailable(format!(
            "{s} is a directory on another device than {t}; move its files one by one"
        ))),
        Err(Errno::XDEV) => move_across_devices(&from_parent, &from_name, s, &to_parent, &to_name, t, stop),
        Err(Errno::INVAL) if meta.is_dir() => Err(HostError::Invalid(format!(
            "{s} cannot be moved to {t}: a directory cannot move into itself, and this file system cannot rename a directory without risking replacing one"
        ))),
        Err(e) => Err(errno_error(t, e)),
    }
}

/// A file move between devices: claim the source, copy it into place, and
/// only then remove the claimed source — or give it its name back.
fn move_across_devices(
    from_parent: &Dir,
    from_name: &str,
    s: &str,
    to_parent: &Dir,
    to_name: &str,
    t: &str,
    stop: &Stop,
) -> Result<(), HostError> {
    if to_parent.symlink_metadata(to_name).is_ok() {
        return Err(HostError::Conflict(format!("{t} already exists")));
    }
    let claimed = claim(from_parent, from_name).map_err(|e| errno_error(s, e))?;
    match copy_into_place(from_parent, Path::new(&claimed), s, to_parent, to_name, t, stop) {
        Ok(_) => {
            // The copy is complete, synced and named: only now may the source go.
            rustix::fs::unlinkat(from_parent, claimed.as_str(), AtFlags::empty()).map_err(|e| {
                HostError::Unavailable(format!(
                    "{t} is in place but {s} could not be removed: {}",
                    std::io::Error::from_raw_os_error(e.raw_os_error())
                ))
            })?;
            let _ = rustix::fs::fsync(from_parent);
            Ok(())
        }
        Err(e) => {
            give_back(from_parent, &claimed, from_name);
            Err(e)
        }
    }
}
