//! `capstan:host/files-read` (read) and `files-write` (execute): file work
//! under the operator's named roots, each opened once as a `cap_std` `Dir`,
//! so a path can never resolve outside its root: absolute paths and `..`
//! are refused up front, and symlinks that lead out are refused by cap-std.
//! Blocking file work runs on tokio's blocking pool.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use sha2::{Digest, Sha256};

use crate::runtime::bindings::capstan::host::types::{FileInfo, HostError};
use crate::runtime::bindings::capstan::host::{files_read, files_write};
use crate::runtime::call_state::CallState;
use crate::runtime::effects::EffectClass;

const READ: &str = "capstan:host/files-read";
const WRITE: &str = "capstan:host/files-write";

/// The named roots, opened.
#[derive(Default)]
pub struct Roots {
    dirs: BTreeMap<String, Arc<Dir>>,
}

impl Roots {
    pub fn open(config: &BTreeMap<String, PathBuf>) -> anyhow::Result<Roots> {
        let mut dirs = BTreeMap::new();
        for (name, path) in config {
            let dir = Dir::open_ambient_dir(path, ambient_authority())
                .map_err(|e| anyhow::anyhow!("cannot open root {name} at {}: {e}", path.display()))?;
            dirs.insert(name.clone(), Arc::new(dir));
        }
        Ok(Roots { dirs })
    }
}

/// A relative path that stays inside its root, or a refusal.
fn confined(path: &str) -> Result<PathBuf, HostError> {
    let p = Path::new(path);
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(seg) => out.push(seg),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(HostError::Denied(format!("path {path:?} uses .., which is not allowed")));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(HostError::Denied(format!("path {path:?} is absolute; paths are relative to a root")));
            }
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    Ok(out)
}

fn io_error(path: &str, e: std::io::Error) -> HostError {
    match e.kind() {
        ErrorKind::NotFound => HostError::NotFound(format!("{path} does not exist")),
        ErrorKind::AlreadyExists => HostError::Conflict(format!("{path} already exists")),
        // cap-std reports an escape through a symlink as PermissionDenied.
        ErrorKind::PermissionDenied => HostError::Denied(format!("{path}: access outside the root or not permitted")),
        ErrorKind::CrossesDevices => {
            HostError::Unavailable(format!("{path}: source and target are on different devices"))
        }
        _ => HostError::Unavailable(format!("{path}: {e}")),
    }
}

fn millis(t: std::io::Result<cap_std::time::SystemTime>) -> u64 {
    t.ok()
        .map(|t| t.into_std())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

fn info(dir: &Dir, rel: &Path, shown: String) -> Result<FileInfo, HostError> {
    let meta = dir.metadata(rel).map_err(|e| io_error(&shown, e))?;
    Ok(FileInfo { path: shown, is_dir: meta.is_dir(), size: meta.len(), modified_ms: millis(meta.modified()) })
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, HostError> + Send + 'static,
) -> Result<T, HostError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| Err(HostError::Internal(format!("file task failed: {e}"))))
}

impl CallState {
    fn root(&mut self, import: &str, class: EffectClass, name: &str) -> Result<Arc<Dir>, HostError> {
        self.check(import, class)?;
        self.services
            .roots
            .dirs
            .get(name)
            .cloned()
            .ok_or_else(|| HostError::Invalid(format!("no file root named {name:?} is configured")))
    }

    /// Resolves a path, recording a denial when it tries to leave its root.
    fn path(&mut self, import: &str, class: EffectClass, path: &str) -> Result<PathBuf, HostError> {
        confined(path).inspect_err(|e| {
            if let HostError::Denied(reason) = e {
                self.deny(import, class, reason.clone());
            }
        })
    }

    fn pair(
        &mut self,
        sr: &str,
        s: &str,
        tr: &str,
        t: &str,
    ) -> Result<(Arc<Dir>, PathBuf, Arc<Dir>, PathBuf), HostError> {
        let from_dir = self.root(WRITE, EffectClass::Execute, sr)?;
        let to_dir = self.root(WRITE, EffectClass::Execute, tr)?;
        let from = self.path(WRITE, EffectClass::Execute, s)?;
        let to = self.path(WRITE, EffectClass::Execute, t)?;
        Ok((from_dir, from, to_dir, to))
    }
}

fn no_overwrite(dir: &Dir, rel: &Path, shown: &str) -> Result<(), HostError> {
    match dir.symlink_metadata(rel) {
        Ok(_) => Err(HostError::Conflict(format!("{shown} already exists"))),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(shown, e)),
    }
}

impl files_read::Host for CallState {
    async fn stat(&mut self, root: String, path: String) -> Result<FileInfo, HostError> {
        let dir = self.root(READ, EffectClass::Read, &root)?;
        let rel = self.path(READ, EffectClass::Read, &path)?;
        blocking(move || info(&dir, &rel, path)).await
    }

    async fn list(&mut self, root: String, path: String, limit: u32) -> Result<Vec<FileInfo>, HostError> {
        let dir = self.root(READ, EffectClass::Read, &root)?;
        let rel = self.path(READ, EffectClass::Read, &path)?;
        blocking(move || {
            let mut names: Vec<String> = dir
                .read_dir(&rel)
                .map_err(|e| io_error(&path, e))?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
                .into_iter()
                .take(limit as usize)
                .map(|name| {
                    let shown = if path.is_empty() || path == "." {
                        name.clone()
                    } else {
                        format!("{}/{name}", path.trim_end_matches('/'))
                    };
                    info(&dir, &rel.join(&name), shown)
                })
                .collect()
        })
        .await
    }

    async fn sha256(&mut self, root: String, path: String) -> Result<String, HostError> {
        let dir = self.root(READ, EffectClass::Read, &root)?;
        let rel = self.path(READ, EffectClass::Read, &path)?;
        blocking(move || {
            let mut file = dir.open(&rel).map_err(|e| io_error(&path, e))?;
            let mut hasher = Sha256::new();
            std::io::copy(&mut file, &mut hasher).map_err(|e| io_error(&path, e))?;
            Ok(hex::encode(hasher.finalize()))
        })
        .await
    }
}

impl files_write::Host for CallState {
    async fn mkdir(&mut self, root: String, path: String) -> Result<(), HostError> {
        let dir = self.root(WRITE, EffectClass::Execute, &root)?;
        let rel = self.path(WRITE, EffectClass::Execute, &path)?;
        self.mark_effect();
        blocking(move || dir.create_dir_all(&rel).map_err(|e| io_error(&path, e))).await
    }

    async fn hardlink(&mut self, sr: String, s: String, tr: String, t: String) -> Result<(), HostError> {
        let (from_dir, from, to_dir, to) = self.pair(&sr, &s, &tr, &t)?;
        self.mark_effect();
        blocking(move || {
            no_overwrite(&to_dir, &to, &t)?;
            from_dir.hard_link(&from, &to_dir, &to).map_err(|e| io_error(&t, e))
        })
        .await
    }

    async fn copy(&mut self, sr: String, s: String, tr: String, t: String) -> Result<u64, HostError> {
        let (from_dir, from, to_dir, to) = self.pair(&sr, &s, &tr, &t)?;
        self.mark_effect();
        blocking(move || {
            no_overwrite(&to_dir, &to, &t)?;
            let expected = from_dir.metadata(&from).map_err(|e| io_error(&s, e))?.len();
            let copied = from_dir.copy(&from, &to_dir, &to).map_err(|e| io_error(&t, e))?;
            let written = to_dir.metadata(&to).map_err(|e| io_error(&t, e))?.len();
            if copied != expected || written != expected {
                let _ = to_dir.remove_file(&to);
                return Err(HostError::Unavailable(format!(
                    "copy of {s} is incomplete ({written} of {expected} bytes)"
                )));
            }
            Ok(copied)
        })
        .await
    }

    async fn move_(&mut self, sr: String, s: String, tr: String, t: String) -> Result<(), HostError> {
        let (from_dir, from, to_dir, to) = self.pair(&sr, &s, &tr, &t)?;
        self.mark_effect();
        blocking(move || {
            no_overwrite(&to_dir, &to, &t)?;
            match from_dir.rename(&from, &to_dir, &to) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == ErrorKind::CrossesDevices => {
                    // Across devices a move is a verified copy, then removal.
                    let expected = from_dir.metadata(&from).map_err(|e| io_error(&s, e))?.len();
                    let copied = from_dir.copy(&from, &to_dir, &to).map_err(|e| io_error(&t, e))?;
                    if copied != expected {
                        let _ = to_dir.remove_file(&to);
                        return Err(HostError::Unavailable(format!("move of {s} is incomplete")));
                    }
                    from_dir.remove_file(&from).map_err(|e| io_error(&s, e))
                }
                Err(e) => Err(io_error(&t, e)),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::confined;

    #[test]
    fn paths_stay_inside_their_root() {
        assert!(confined("movies/Dune (2021)/Dune.mkv").is_ok());
        assert!(confined("../etc/passwd").is_err());
        assert!(confined("a/../../b").is_err());
        assert!(confined("/etc/passwd").is_err());
        assert_eq!(confined("").unwrap().to_str(), Some("."));
    }
}
