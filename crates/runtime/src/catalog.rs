//! The plugins of a cluster. On SQLite one machine serves, and what it
//! runs is its capabilities folder and its data folder's state file. On
//! PostgreSQL several nodes share the database and nothing else, so the
//! runtime is handed a [`Catalog`] and:
//!
//! - each node's folder is an inbox: a file dropped in (or replaced) there
//!   is published by its name, its bytes stored by digest, when its copy
//!   changed after the one the catalog has; a file its node had published
//!   and that is gone from that folder is withdrawn;
//! - every node loads the catalog's plugins, not its folder, so a plugin
//!   reaches every node and a node never runs bytes the others do not see;
//! - the record of what is known, held, accepted and refused
//!   ([`State`]) is the catalog's, written only if no other node wrote it
//!   since it was read (a rescan that loses the race runs again), so a
//!   replacement held on one node is held on all, and one acceptance lets
//!   it in everywhere; the first node to write it starts from its own
//!   state file, so an install that moves to a cluster keeps what was
//!   accepted;
//! - a change anywhere moves the catalog's version, which every node's
//!   watcher polls ([`super::watcher`]).
//!
//! The node's own identity (which of the catalog's plugins it published)
//! is a name kept in its data folder.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;

use super::Runtime;
use super::loader;
use super::state::State;

/// A plugin of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogPlugin {
    /// Its file name, as it was dropped in.
    pub name: String,
    pub digest: String,
    /// The node that published it.
    pub node: String,
    /// When its copy last changed there (ms since the epoch).
    pub changed_ms: i64,
}

/// Where a cluster's plugins and their record are kept (the database on
/// PostgreSQL). Errors are words.
pub trait Catalog: Send + Sync {
    /// The record ([`State`] as JSON; `None` before the first) and the
    /// catalog's version.
    fn state(&self) -> BoxFuture<'_, Result<(Option<String>, i64), String>>;
    /// Replaces the record when the version is still `version`; `false`
    /// when another node changed the catalog first. Bytes no plugin and
    /// no digest of `keep` names are dropped.
    fn save_state<'a>(&'a self, json: &'a str, version: i64, keep: &'a [String])
    -> BoxFuture<'a, Result<bool, String>>;
    fn plugins(&self) -> BoxFuture<'_, Result<Vec<CatalogPlugin>, String>>;
    /// Adds or replaces `plugin`, with its bytes.
    fn publish<'a>(&'a self, plugin: &'a CatalogPlugin, bytes: &'a [u8]) -> BoxFuture<'a, Result<(), String>>;
    /// Removes plugin `name` if `node` published it.
    fn withdraw<'a>(&'a self, name: &'a str, node: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// The bytes stored under `digest`.
    fn bytes<'a>(&'a self, digest: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, String>>;
    /// A number that moves whenever the plugins or the record change.
    fn version(&self) -> BoxFuture<'_, Result<i64, String>>;
}

/// A catalog and what this node remembers of it.
pub(crate) struct Cluster {
    pub catalog: Arc<dyn Catalog>,
    /// This node's name in the catalog.
    pub node: String,
    /// Plugin bytes fetched from the catalog, by digest: those of the
    /// catalog's plugins as last listed ([`Cluster::keep_only`]).
    fetched: Mutex<HashMap<String, Arc<Vec<u8>>>>,
}

impl Cluster {
    /// The catalog with this node named by `<data_dir>/node-id`, made the
    /// first time.
    pub fn new(catalog: Arc<dyn Catalog>, data_dir: &Path) -> anyhow::Result<Cluster> {
        std::fs::create_dir_all(data_dir)?;
        let path = data_dir.join("node-id");
        let node = match std::fs::read_to_string(&path) {
            Ok(id) if !id.trim().is_empty() => id.trim().to_string(),
            _ => {
                let id = format!("node-{}", capstan_foundation::store::new_id());
                std::fs::write(&path, &id)?;
                id
            }
        };
        Ok(Cluster { catalog, node, fetched: Mutex::new(HashMap::new()) })
    }

    async fn fetch(&self, digest: &str) -> Result<Arc<Vec<u8>>, String> {
        if let Some(bytes) = self.fetched.lock().unwrap_or_else(|e| e.into_inner()).get(digest) {
            return Ok(bytes.clone());
        }
        let bytes =
            self.catalog.bytes(digest).await?.ok_or_else(|| format!("the catalog has no bytes for {digest}"))?;
        if loader::digest(&bytes) != digest {
            return Err(format!("the catalog's bytes for {digest} do not match their digest"));
        }
        let bytes = Arc::new(bytes);
        let mut fetched = self.fetched.lock().unwrap_or_else(|e| e.into_inner());
        fetched.insert(digest.to_string(), bytes.clone());
        Ok(bytes)
    }

    /// Forgets fetched bytes no plugin of `plugins` has, so the memory
    /// held is the catalog's plugins, not every version ever fetched.
    fn keep_only(&self, plugins: &[CatalogPlugin]) {
        let mut fetched = self.fetched.lock().unwrap_or_else(|e| e.into_inner());
        fetched.retain(|digest, _| plugins.iter().any(|p| p.digest == *digest));
    }
}

/// The `.wasm` entries directly in `dir`, sorted by name, whatever their
/// type: one that is not a regular file is refused with a reason rather
/// than left out silently.
pub(crate) fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "wasm") && !p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A plugin file to load: where it is (in the catalog, where it would be
/// in this node's folder) and its bytes, or why they cannot be read.
pub(crate) type Entry = (PathBuf, Result<Arc<Vec<u8>>, String>);

impl Runtime {
    pub(crate) fn read_plugin(&self, file: &Path) -> Result<Vec<u8>, String> {
        capstan_foundation::files::read_regular(file, self.config.max_component_bytes(), "a component file")
    }

    /// The record of what is known, held, accepted and refused, and the
    /// catalog's version it was read at (`None` without a catalog).
    pub(crate) async fn load_state(&self) -> anyhow::Result<(State, Option<i64>)> {
        match &self.cluster {
            Some(cluster) => {
                let (json, version) = cluster.catalog.state().await.map_err(anyhow::Error::msg)?;
                let state = match json {
                    Some(json) => serde_json::from_str(&json)
                        .map_err(|e| anyhow::anyhow!("the catalog's capability record is corrupt: {e}"))?,
                    // A cluster whose record was never written (its first
                    // start, or its first after an upgrade) starts from
                    // this node's state file, so what its operator had
                    // accepted stays accepted.
                    None => State::load(&State::path(&self.config.data_dir()))?,
                };
                Ok((state, Some(version)))
            }
            None => Ok((State::load(&State::path(&self.config.data_dir()))?, None)),
        }
    }

    /// Writes `state`; `false` when another node changed the catalog
    /// since `version` was read.
    pub(crate) async fn save_state(&self, state: &State, version: Option<i64>) -> anyhow::Result<bool> {
        match (&self.cluster, version) {
            (Some(cluster), Some(version)) => {
                let json = serde_json::to_string(state)?;
                let keep: Vec<String> = state
                    .known
                    .values()
                    .map(|k| k.digest.clone())
                    .chain(state.accepted.values().cloned())
                    .chain(state.held.values().cloned())
                    .collect();
                cluster.catalog.save_state(&json, version, &keep).await.map_err(anyhow::Error::msg)
            }
            _ => {
                state.save(&State::path(&self.config.data_dir()))?;
                Ok(true)
            }
        }
    }

    /// Publishes what changed in this node's folder: a file whose copy is
    /// newer than the catalog's plugin of its name (or that it has none
    /// of), and withdraws what this node had published and is gone from
    /// it. Nothing without a catalog.
    pub(crate) async fn publish_folder(&self) -> anyhow::Result<()> {
        let Some(cluster) = &self.cluster else { return Ok(()) };
        let plugins = cluster.catalog.plugins().await.map_err(anyhow::Error::msg)?;
        let by_name: BTreeMap<&str, &CatalogPlugin> = plugins.iter().map(|p| (p.name.as_str(), p)).collect();
        let files = wasm_files(&self.config.capabilities_dir());
        let mut present = Vec::new();
        for file in &files {
            let Some(name) = file.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
            present.push(name.clone());
            let changed_ms = std::fs::metadata(file)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as i64);
            let known = by_name.get(name.as_str());
            if known.is_some_and(|k| k.changed_ms >= changed_ms) {
                continue; // the catalog's copy is as new as this one
            }
            // Unreadable bytes are not published: the file is refused
            // where it lies, when this node lists it.
            let Ok(bytes) = self.read_plugin(file) else { continue };
            let digest = loader::digest(&bytes);
            if known.is_some_and(|k| k.digest == digest) {
                continue;
            }
            let plugin = CatalogPlugin { name: name.clone(), digest, node: cluster.node.clone(), changed_ms };
            cluster.catalog.publish(&plugin, &bytes).await.map_err(anyhow::Error::msg)?;
            tracing::info!(target: "capstan::component", file = %name, digest = %&plugin.digest[..12],
                "published a plugin from this node's folder to the cluster");
        }
        for gone in plugins.iter().filter(|p| p.node == cluster.node && !present.contains(&p.name)) {
            cluster.catalog.withdraw(&gone.name, &cluster.node).await.map_err(anyhow::Error::msg)?;
            tracing::info!(target: "capstan::component", file = %gone.name,
                "withdrew from the cluster a plugin removed from this node's folder");
        }
        Ok(())
    }

    /// The plugins to load, in name order: this node's folder without a
    /// catalog, else the catalog's (bytes from the folder when its copy
    /// is the same, else from the catalog).
    pub(crate) async fn plugin_entries(&self) -> anyhow::Result<Vec<Entry>> {
        let dir = self.config.capabilities_dir();
        let Some(cluster) = &self.cluster else {
            return Ok(wasm_files(&dir).into_iter().map(|f| (f.clone(), self.read_plugin(&f).map(Arc::new))).collect());
        };
        let mut plugins = cluster.catalog.plugins().await.map_err(anyhow::Error::msg)?;
        plugins.sort_by(|a, b| a.name.cmp(&b.name));
        cluster.keep_only(&plugins);
        let mut entries = Vec::new();
        for plugin in plugins {
            let file = dir.join(&plugin.name);
            let local = self.read_plugin(&file).ok().filter(|b| loader::digest(b) == plugin.digest);
            let bytes = match local {
                Some(bytes) => Ok(Arc::new(bytes)),
                None => cluster.fetch(&plugin.digest).await,
            };
            entries.push((file, bytes));
        }
        Ok(entries)
    }

    /// The bytes of the last accepted version with `digest`: the retained
    /// copy in the data folder, or the catalog's.
    pub(crate) async fn retained_bytes(&self, digest: &str) -> Option<(Vec<u8>, PathBuf)> {
        let path = self.config.data_dir().join("retained").join(format!("{digest}.wasm"));
        match &self.cluster {
            Some(cluster) => cluster.fetch(digest).await.ok().map(|b| (b.as_ref().clone(), path)),
            None => std::fs::read(&path).ok().map(|b| (b, path)),
        }
    }

    /// The catalog's version, when there is one.
    pub(crate) async fn catalog_version(&self) -> Option<Result<i64, String>> {
        match &self.cluster {
            Some(cluster) => Some(cluster.catalog.version().await),
            None => None,
        }
    }

    /// Whether plugins come from a catalog rather than this node's folder.
    pub fn clustered(&self) -> bool {
        self.cluster.is_some()
    }
}
