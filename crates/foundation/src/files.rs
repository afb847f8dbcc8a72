//! Reading a file an operator dropped in (a component, a skill) without
//! letting what is on the disk stall or swamp the reader, and writing one
//! so that no reader ever sees half of it.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Reads `path` whole if it is a regular file of at most `cap` bytes. It
/// is opened non-blocking, so a FIFO swapped in after a listing cannot
/// stall the reader, and its size is checked on the open file before
/// anything is read (and again while reading, for a file still growing).
/// `what` names the file in the refusal ("a component file").
pub fn read_regular(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|e| format!("cannot read: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > cap {
        return Err(format!("{} bytes, over the cap of {cap} bytes for {what}", meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(format!("over the cap of {cap} bytes for {what}"));
    }
    Ok(bytes)
}

/// Writes `bytes` to a hidden file beside `file` (named `.<name>.<id>.tmp`,
/// which no folder scan takes for the file), flushes it, and renames it
/// over `file`; the folder is flushed too, so the rename survives a crash.
/// A reader sees the old file or the new one, never half of either.
pub fn write_whole(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = file.parent().unwrap_or(Path::new("."));
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = folder.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut out = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        out.write_all(bytes)?;
        out.sync_all()?;
        std::fs::rename(&temp, file)?;
        std::fs::File::open(folder)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
