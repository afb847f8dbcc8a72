//! File helpers of the mock host: plain `std::fs` on the mapped roots, with
//! the same refusals as the host for absolute paths and `..`.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use crate::host::{FileInfo, HostError};

pub(crate) struct MockFiles<'a> {
    pub(crate) roots: &'a HashMap<String, PathBuf>,
}

fn io(e: std::io::Error) -> HostError {
    match e.kind() {
        std::io::ErrorKind::NotFound => HostError::NotFound(e.to_string()),
        std::io::ErrorKind::AlreadyExists => HostError::Conflict(e.to_string()),
        _ => HostError::Unavailable(e.to_string()),
    }
}

impl MockFiles<'_> {
    fn resolve(&self, root: &str, path: &str) -> Result<PathBuf, HostError> {
        let base = self.roots.get(root).ok_or_else(|| HostError::Invalid(format!("unknown root {root}")))?;
        let rel = Path::new(path);
        if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(HostError::Denied(format!("path {path} leaves root {root}")));
        }
        Ok(base.join(rel))
    }

    fn info(&self, path: &str, full: &Path) -> Result<FileInfo, HostError> {
        let meta = std::fs::metadata(full).map_err(io)?;
        let modified_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as u64);
        Ok(FileInfo { path: path.to_string(), is_dir: meta.is_dir(), size: meta.len(), modified_ms })
    }

    pub(crate) fn stat(&self, root: &str, path: &str) -> Result<FileInfo, HostError> {
        let full = self.resolve(root, path)?;
        self.info(path, &full)
    }

    pub(crate) fn list(&self, root: &str, path: &str, limit: u32) -> Result<Vec<FileInfo>, HostError> {
        let full = self.resolve(root, path)?;
        let mut names: Vec<String> = std::fs::read_dir(&full)
            .map_err(io)?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
            .into_iter()
            .take(limit as usize)
            .map(|n| {
                let rel = Path::new(path).join(&n).to_string_lossy().into_owned();
                self.info(&rel, &full.join(&n))
            })
            .collect()
    }

    pub(crate) fn sha256(&self, root: &str, path: &str) -> Result<String, HostError> {
        let full = self.resolve(root, path)?;
        let bytes = std::fs::read(full).map_err(io)?;
        Ok(crate::testing::files::hex_sha256(&bytes))
    }

    pub(crate) fn mkdir(&self, root: &str, path: &str) -> Result<(), HostError> {
        std::fs::create_dir_all(self.resolve(root, path)?).map_err(io)
    }

    fn pair(&self, fr: &str, f: &str, tr: &str, t: &str) -> Result<(PathBuf, PathBuf), HostError> {
        let to = self.resolve(tr, t)?;
        if to.exists() {
            return Err(HostError::Conflict(format!("{t} already exists")));
        }
        Ok((self.resolve(fr, f)?, to))
    }

    pub(crate) fn hardlink(&self, fr: &str, f: &str, tr: &str, t: &str) -> Result<(), HostError> {
        let (from, to) = self.pair(fr, f, tr, t)?;
        std::fs::hard_link(from, to).map_err(io)
    }

    pub(crate) fn copy(&self, fr: &str, f: &str, tr: &str, t: &str) -> Result<u64, HostError> {
        let (from, to) = self.pair(fr, f, tr, t)?;
        std::fs::copy(from, to).map_err(io)
    }

    pub(crate) fn move_file(&self, fr: &str, f: &str, tr: &str, t: &str) -> Result<(), HostError> {
        let (from, to) = self.pair(fr, f, tr, t)?;
        std::fs::rename(from, to).map_err(io)
    }
}

pub(crate) fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
