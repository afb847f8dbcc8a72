//! Plugins installed and removed through the API rather than by hand. An
//! upload is checked as the loader checks a file before anything is
//! written; it is then placed in this node's capabilities folder under its
//! file name, as a file dropped in would be (on PostgreSQL the rescan
//! publishes it from there to the cluster's catalog, so every node loads
//! it), and the rescan that follows says what became of it: serving, or
//! held until an administrator accepts it. A file the scan's own rules
//! refuse (a core capability's id, an id another file provides) is taken
//! back out, the folder as it was. Changes go one at a time per node.

use std::path::PathBuf;

use super::Runtime;
use super::loader::{self, Source};
use super::registry::Snapshot;

/// Longest plugin file name accepted, `.wasm` included.
const MAX_NAME: usize = 128;

/// What became of an uploaded plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// Its capability serves now.
    Loaded { id: String },
    /// It replaces a capability and asks more than the version before
    /// (which goes on serving): it waits for an administrator's accept.
    Held { id: String, reason: String },
}

/// An upload or removal that did not happen, and why; nothing was changed.
#[derive(Debug)]
pub enum PluginError {
    /// The name is not a plugin file name.
    BadName(String),
    /// The bytes are not a component this host runs, or the scan refused
    /// it; the reason as the operator reads it.
    Refused(String),
    /// A plugin of that name exists and replacing it was not asked for.
    Exists(String),
    /// No plugin of that name on this node or in the cluster.
    NotFound(String),
    /// Writing the folder, or reading the catalog, failed.
    Failed(anyhow::Error),
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginError::BadName(why) | PluginError::Refused(why) => f.write_str(why),
            PluginError::Exists(name) => {
                write!(f, "a plugin named {name} is installed; ask to replace it to install this one over it")
            }
            PluginError::NotFound(name) => write!(f, "no plugin named {name} is installed"),
            PluginError::Failed(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for PluginError {}

impl From<std::io::Error> for PluginError {
    fn from(e: std::io::Error) -> PluginError {
        PluginError::Failed(e.into())
    }
}

/// An installed plugin: its file, its bytes' digest, whether it replaced
/// one of its name, and what became of it.
#[derive(Debug, Clone)]
pub struct PluginInstall {
    pub file: String,
    pub digest: String,
    pub replaced: bool,
    pub outcome: Installed,
}

/// `Ok` when `name` is a plugin file name: letters, digits, `.`, `_` and
/// `-`, not starting with a dot, ending in `.wasm`, at most 128 bytes.
pub fn check_name(name: &str) -> Result<(), PluginError> {
    let fits = name.len() <= MAX_NAME
        && name.len() > ".wasm".len()
        && name.ends_with(".wasm")
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if fits {
        Ok(())
    } else {
        Err(PluginError::BadName(format!(
            "{name:?} is not a plugin file name: letters, digits, '.', '_' and '-', ending in .wasm, \
             at most {MAX_NAME} characters, not starting with a dot"
        )))
    }
}

/// What the snapshot made of the file at `file` with `digest`, if it
/// serves or waits.
fn outcome_of(snapshot: &Snapshot, file: &PathBuf, digest: &str) -> Option<Installed> {
    if let Some(loaded) = snapshot.loaded_from(file).filter(|l| l.digest == digest) {
        return Some(Installed::Loaded { id: loaded.descriptor.id.clone() });
    }
    snapshot
        .held
        .iter()
        .find(|(_, h)| h.candidate.digest == digest && matches!(&h.candidate.source, Source::Directory(p) if p == file))
        .map(|(id, h)| Installed::Held { id: id.clone(), reason: h.reason.clone() })
}

impl Runtime {
    /// The folder file that provides capability `id`, serving or held.
    fn provider_of(&self, id: &str) -> Option<PathBuf> {
        let snapshot = self.snapshot();
        let serving = snapshot.active.get(id).map(|l| l.source.clone());
        let held = snapshot.held.get(id).map(|h| h.candidate.source.clone());
        [serving, held].into_iter().flatten().find_map(|source| match source {
            Source::Directory(path) => Some(path),
            _ => None,
        })
    }

    /// Whether a plugin named `name` is installed: in this node's folder,
    /// or in the cluster's catalog.
    async fn plugin_exists(&self, name: &str) -> Result<Option<String>, PluginError> {
        if let Some(cluster) = &self.cluster {
            let plugins = cluster.catalog.plugins().await.map_err(|e| PluginError::Failed(anyhow::anyhow!(e)))?;
            if let Some(plugin) = plugins.into_iter().find(|p| p.name == name) {
                return Ok(Some(plugin.node));
            }
        }
        let file = self.config.capabilities_dir().join(name);
        Ok(std::fs::symlink_metadata(&file).is_ok().then(String::new))
    }

    /// Installs `bytes` as plugin `name` (replacing one of that name only
    /// when `replace`), and answers what became of it. Nothing is written
    /// when the bytes are refused.
    pub async fn install_plugin(&self, name: &str, bytes: &[u8], replace: bool) -> Result<PluginInstall, PluginError> {
        check_name(name)?;
        let limit = self.config.max_component_bytes();
        if bytes.len() as u64 > limit {
            return Err(PluginError::Refused(format!("the component is over the {limit}-byte limit")));
        }
        let _one = self.plugin_changes.lock().await;
        let existed = self.plugin_exists(name).await?.is_some();
        if existed && !replace {
            return Err(PluginError::Exists(name.to_string()));
        }
        let dir = self.config.capabilities_dir();
        let file = dir.join(name);
        let checked =
            self.check(bytes, file.clone()).await.map_err(|e| PluginError::Refused(e.reason().to_string()))?;
        // Files claim ids in name order, so a new name could take an id
        // from the plugin that serves it: an upload may replace its own
        // file's capability, or override a built-in, but not another file's.
        let id = &checked.descriptor.id;
        if let Some(other) = self.provider_of(id).filter(|other| *other != file) {
            let other = other.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            return Err(PluginError::Refused(format!(
                "capability {id} is provided by the plugin {other}: install over that one \
                 (PUT /api/v1/plugins/{other}?replace=true), or remove it first"
            )));
        }
        std::fs::create_dir_all(&dir)?;
        let before = self.read_plugin(&file).ok();
        capstan_foundation::files::write_whole(&file, bytes)?;
        let digest = loader::digest(bytes);
        let scanned = self.rescan(false).await;
        let snapshot = self.snapshot();
        if let (Ok(_), Some(outcome)) = (&scanned, outcome_of(&snapshot, &file, &digest)) {
            return Ok(PluginInstall { file: name.to_string(), digest, replaced: existed, outcome });
        }
        // Refused by the scan's rules, or the scan failed: the folder goes
        // back to what it was.
        let reason = match &scanned {
            Err(e) => format!("the capabilities could not be scanned: {e:#}"),
            Ok(_) => snapshot
                .refused
                .iter()
                .find(|r| r.file == file)
                .map_or_else(|| "the scan did not load it".to_string(), |r| r.reason.clone()),
        };
        match before {
            Some(before) => capstan_foundation::files::write_whole(&file, &before)?,
            None => std::fs::remove_file(&file)?,
        }
        if let Err(e) = self.rescan(false).await {
            tracing::warn!(error = %e, "rescan after taking back a refused upload failed; the watcher will try again");
        }
        Err(PluginError::Refused(reason))
    }

    /// Removes plugin `name`: from this node's folder, and on a cluster
    /// from the catalog, whichever node published it (a copy left in
    /// another node's folder is published again by that node).
    pub async fn remove_plugin(&self, name: &str) -> Result<(), PluginError> {
        check_name(name)?;
        let _one = self.plugin_changes.lock().await;
        let Some(publisher) = self.plugin_exists(name).await? else {
            return Err(PluginError::NotFound(name.to_string()));
        };
        let file = self.config.capabilities_dir().join(name);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        if let Some(cluster) = &self.cluster
            && !publisher.is_empty()
        {
            cluster.catalog.withdraw(name, &publisher).await.map_err(|e| PluginError::Failed(anyhow::anyhow!(e)))?;
        }
        self.rescan(false).await.map_err(PluginError::Failed)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn plugin_file_names() {
        for good in ["counter.wasm", "my_tool-2.0.wasm", "A.wasm"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let long = format!("{}.wasm", "a".repeat(124));
        for bad in ["", ".wasm", ".hidden.wasm", "../x.wasm", "a/b.wasm", "x.wat", "x y.wasm", "é.wasm", &long] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
