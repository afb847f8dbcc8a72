//! `capstan:host/files-read` (read) and `files-write` (execute): file work
//! under the operator's named roots, each opened once as a `cap_std` `Dir`,
//! so a path can never resolve outside its root: absolute paths and `..`
//! are refused up front, and symlinks that lead out are refused by cap-std.
//! Only regular files and directories are touched ([`read`]), nothing is
//! ever overwritten ([`place`]), and the blocking work runs on a bounded
//! pool that stops at the call's deadline ([`pool`]).

mod place;
mod pool;
mod read;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::boundary::host_call;
use super::record::debug;
use super::views::FilesView;
use crate::bindings::capstan::host::types::{FileInfo, HostError};
use crate::bindings::capstan::host::{files_read, files_write};
use crate::effects::{interface, interface_class};

const READ: &str = interface::FILES_READ;
const WRITE: &str = interface::FILES_WRITE;

pub(crate) use pool::FilePool;

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

/// Names the host gives its own files while it works (a copy being
/// written, a source being moved): no component may name, list or touch
/// one, so nothing can swap a file under them.
pub(super) const HOST_PREFIX: &str = ".capstan-";

/// A relative path that stays inside its root, or a refusal.
fn confined(path: &str) -> Result<PathBuf, HostError> {
    if path.chars().any(char::is_control) {
        return Err(HostError::Invalid(format!("path {path:?} contains control characters")));
    }
    let p = Path::new(path);
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(seg) if seg.to_string_lossy().starts_with(HOST_PREFIX) => {
                return Err(HostError::Denied(format!("path {path:?} names a file the host is working on")));
            }
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

pub(super) fn io_error(path: &str, e: std::io::Error) -> HostError {
    match e.kind() {
        ErrorKind::NotFound => HostError::NotFound(format!("{path} does not exist")),
        ErrorKind::AlreadyExists => HostError::Conflict(format!("{path} already exists")),
        // cap-std reports an escape through a symlink as PermissionDenied.
        ErrorKind::PermissionDenied => HostError::Denied(format!("{path}: access outside the root or not permitted")),
        ErrorKind::CrossesDevices => {
            HostError::Unavailable(format!("{path}: source and target are on different devices"))
        }
        ErrorKind::NotADirectory => HostError::Invalid(format!("{path}: a part of the path is not a directory")),
        _ => HostError::Unavailable(format!("{path}: {e}")),
    }
}

/// The human text of a host error.
pub(super) fn reason(e: &HostError) -> &str {
    match e {
        HostError::Denied(m)
        | HostError::Invalid(m)
        | HostError::NotFound(m)
        | HostError::Unavailable(m)
        | HostError::TooLarge(m)
        | HostError::Conflict(m)
        | HostError::Internal(m) => m,
    }
}

/// One side of a two-path operation: its root and confined path.
struct Side {
    dir: Arc<Dir>,
    rel: PathBuf,
    shown: String,
}

impl FilesView<'_> {
    fn root(&self, name: &str) -> Result<Arc<Dir>, HostError> {
        self.core
            .setup
            .roots
            .dirs
            .get(name)
            .cloned()
            .ok_or_else(|| HostError::Invalid(format!("no file root named {name:?} is configured")))
    }

    /// Resolves a path, recording a denial when it tries to leave its root.
    fn path(&mut self, import: &str, path: &str) -> Result<PathBuf, HostError> {
        confined(path).inspect_err(|e| {
            if let HostError::Denied(reason) = e {
                self.core.deny(import, interface_class(import), reason.clone());
            }
        })
    }

    fn side(&mut self, import: &str, root: &str, path: String) -> Result<Side, HostError> {
        let dir = self.root(root)?;
        let rel = self.path(import, &path)?;
        // Another caller's command output is not there for this one.
        if self.hides_output(root, &rel) {
            return Err(HostError::NotFound(format!("{path} does not exist")));
        }
        Ok(Side { dir, rel, shown: path })
    }

    /// Runs `job` on the file workers under this call's deadline; a
    /// denial it answers is recorded like any other.
    async fn on_pool<T: Send + 'static>(
        &mut self,
        import: &str,
        job: impl FnOnce(&pool::Stop) -> Result<T, HostError> + Send + 'static,
    ) -> Result<T, HostError> {
        let result = self.pool.run(self.core.deadline, job).await;
        if let Err(HostError::Denied(why)) = &result {
            self.core.deny(import, interface_class(import), why.clone());
        }
        result
    }
}

impl files_read::Host for FilesView<'_> {
    async fn stat(&mut self, root: String, path: String) -> Result<FileInfo, HostError> {
        let args = self.core.args(|| format!("{root}:{path}"));
        host_call!(self, READ, "stat", args, debug, |call| {
            let side = call.side(READ, &root, path)?;
            call.on_pool(READ, move |_| read::stat(&side.dir, &side.rel, side.shown)).await
        })
    }

    async fn list(&mut self, root: String, path: String, limit: u32) -> Result<Vec<FileInfo>, HostError> {
        let args = self.core.args(|| format!("{root}:{path} limit {limit}"));
        host_call!(self, READ, "list", args, |entries: &Vec<FileInfo>| format!("{} entries", entries.len()), |call| {
            let side = call.side(READ, &root, path)?;
            // Command output is listed whole and then cut to the limit, so
            // other callers' archives take none of this caller's places.
            let read_up_to = if root == super::OUTPUT_ROOT { usize::MAX } else { limit as usize };
            let (entries, skipped) =
                call.on_pool(READ, move |stop| read::list(&side.dir, &side.rel, &side.shown, read_up_to, stop)).await?;
            let entries: Vec<FileInfo> = entries
                .into_iter()
                .filter(|e| !call.hides_output(&root, Path::new(&e.path)))
                .take(limit as usize)
                .collect();
            if !skipped.is_empty() {
                tracing::warn!(
                    target: "capstan::files",
                    capability = %call.core.target.id,
                    root,
                    skipped = skipped.len(),
                    entries = %skipped.join("; "),
                    "a listing left out entries it may not show"
                );
                for entry in skipped.iter().filter(|s| s.ends_with("(leads outside the root)")) {
                    call.core.deny(READ, interface_class(READ), format!("list of {root} left out {entry}"));
                }
            }
            Ok(entries)
        },)
    }

    async fn sha256(&mut self, root: String, path: String) -> Result<String, HostError> {
        let args = self.core.args(|| format!("{root}:{path}"));
        host_call!(self, READ, "sha256", args, |hash: &String| hash.clone(), |call| {
            let side = call.side(READ, &root, path)?;
            call.on_pool(READ, move |stop| read::sha256(&side.dir, &side.rel, &side.shown, stop)).await
        },)
    }
}

impl files_write::Host for FilesView<'_> {
    async fn mkdir(&mut self, root: String, path: String) -> Result<(), HostError> {
        let args = self.core.args(|| format!("{root}:{path}"));
        host_call!(self, WRITE, "mkdir", args, |_| String::new(), |call| {
            let side = call.side(WRITE, &root, path)?;
            call.core.mark_effect();
            call.on_pool(WRITE, move |_| side.dir.create_dir_all(&side.rel).map_err(|e| io_error(&side.shown, e))).await
        },)
    }

    async fn hardlink(&mut self, sr: String, s: String, tr: String, t: String) -> Result<(), HostError> {
        let args = self.core.args(|| format!("{sr}:{s} -> {tr}:{t}"));
        host_call!(self, WRITE, "hardlink", args, |_| String::new(), |call| {
            let from = call.side(WRITE, &sr, s)?;
            let to = call.side(WRITE, &tr, t)?;
            call.core.mark_effect();
            call.on_pool(WRITE, move |_| {
                place::hardlink(&from.dir, &from.rel, &from.shown, &to.dir, &to.rel, &to.shown)
            })
            .await
        },)
    }

    async fn copy(&mut self, sr: String, s: String, tr: String, t: String) -> Result<u64, HostError> {
        let args = self.core.args(|| format!("{sr}:{s} -> {tr}:{t}"));
        host_call!(self, WRITE, "copy", args, |bytes| format!("{bytes} bytes"), |call| {
            let from = call.side(WRITE, &sr, s)?;
            let to = call.side(WRITE, &tr, t)?;
            call.core.mark_effect();
            call.on_pool(WRITE, move |stop| {
                place::copy(&from.dir, &from.rel, &from.shown, &to.dir, &to.rel, &to.shown, stop)
            })
            .await
        },)
    }

    async fn move_(&mut self, sr: String, s: String, tr: String, t: String) -> Result<(), HostError> {
        let args = self.core.args(|| format!("{sr}:{s} -> {tr}:{t}"));
        host_call!(self, WRITE, "move", args, |_| String::new(), |call| {
            let from = call.side(WRITE, &sr, s)?;
            let to = call.side(WRITE, &tr, t)?;
            call.core.mark_effect();
            call.on_pool(WRITE, move |stop| {
                place::move_(&from.dir, &from.rel, &from.shown, &to.dir, &to.rel, &to.shown, stop)
            })
            .await
        },)
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
        assert!(confined("a\0b").is_err());
        assert!(confined("Show/.capstan-1234.part").is_err());
        assert!(confined("a\nb").is_err());
    }
}
