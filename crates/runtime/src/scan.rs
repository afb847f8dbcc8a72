//! Rescanning: builds the next registry snapshot from the built-ins and the
//! capabilities directory, applying the rules for overrides, duplicates,
//! refusals (keep the last good version), held replacements and the core
//! set, then swaps it in and logs every change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::Runtime;
use super::builtins::CORE_CAPABILITIES;
use super::loader::{self, LoadError, Loaded, Source};
use super::registry::{Held, Refusal, Snapshot};
use super::state::{Known, State};

/// Scans in a row another node may win before a rescan gives up.
const MAX_SCAN_RACES: usize = 8;

/// Refusals remembered by digest before the memory is cleared.
const MAX_REMEMBERED_REFUSALS: usize = 1024;

/// What a rescan found.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ScanReport {
    pub refused: Vec<Refusal>,
    /// Changes not seen before by this data directory, for the log and the
    /// audit chain.
    pub events: Vec<ComponentEvent>,
}

/// A component change worth an audit event: `component.loaded`,
/// `component.removed`, `component.held` or `component.refused`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ComponentEvent {
    pub action: &'static str,
    /// The capability id, or the refused file.
    pub subject: String,
    pub detail: String,
}

fn known_of(l: &Loaded) -> Known {
    Known {
        label: l.descriptor.label,
        services: l.descriptor.services.clone(),
        digest: l.digest.clone(),
        tags: Some(l.descriptor.tags.clone()),
        replay: Some(l.descriptor.replay),
        verify: Some(l.has_verifier),
    }
}

/// Keeps what `file` provided before while its new bytes are refused or
/// still compiling: the version it served, or the replacement from it that
/// waits for the operator (which goes on waiting, the version before it
/// serving, from memory or its retained copy).
fn keep_last_good(
    previous: &Snapshot,
    file: &Path,
    claimed_by: &mut BTreeMap<String, PathBuf>,
    from_dir: &mut BTreeMap<String, Arc<Loaded>>,
) {
    let file = file.to_path_buf();
    let held = previous
        .held
        .values()
        .find(|h| matches!(&h.candidate.source, Source::Directory(p) if *p == file))
        .map(|h| h.candidate.clone());
    if let Some(last) = previous.loaded_from(&file).or(held) {
        claimed_by.entry(last.descriptor.id.clone()).or_insert(file);
        from_dir.entry(last.descriptor.id.clone()).or_insert(last);
    }
}

/// The changes this data directory has not recorded yet: a digest it did
/// not know, a capability gone since the last scan, a newly held
/// replacement, a newly refused file. Updates the held/refused records.
/// External servers' records are kept as they are by a process that does
/// not link them (`linked` names those this one does): a command line
/// that rescans must not forget what the serving process holds.
fn unseen_events(state: &mut State, previous: &Snapshot, next: &Snapshot, linked: &[String]) -> Vec<ComponentEvent> {
    let mut events = Vec::new();
    for (id, l) in &next.active {
        if state.known.get(id).is_none_or(|k| k.digest != l.digest) {
            let detail = format!(
                "version {} digest {} from {} (class {})",
                l.descriptor.version, l.digest, l.source, l.imports.class
            );
            events.push(ComponentEvent { action: "component.loaded", subject: id.clone(), detail });
        }
    }
    for id in previous.active.keys().filter(|id| !next.active.contains_key(*id)) {
        events.push(ComponentEvent { action: "component.removed", subject: id.clone(), detail: String::new() });
    }
    let held: BTreeMap<String, String> =
        next.held.iter().map(|(id, h)| (id.clone(), h.candidate.digest.clone())).collect();
    for (id, h) in &next.held {
        if state.held.get(id) != Some(&h.candidate.digest) {
            events.push(ComponentEvent { action: "component.held", subject: id.clone(), detail: h.reason.clone() });
        }
    }
    let refused: BTreeMap<String, String> =
        next.refused.iter().map(|r| (r.file.display().to_string(), r.reason.clone())).collect();
    for (file, reason) in &refused {
        if state.refused.get(file) != Some(reason) {
            events.push(ComponentEvent { action: "component.refused", subject: file.clone(), detail: reason.clone() });
        }
    }
    let unlinked = |id: &str| {
        let server = id
            .strip_prefix("mcp.")
            .or_else(|| id.strip_prefix("mcp server "))
            .map(|rest| rest.split(['.', ' ']).next().unwrap_or_default());
        server.is_some_and(|server| !linked.iter().any(|l| l == server))
    };
    let kept_held: Vec<(String, String)> =
        state.held.iter().filter(|(id, _)| unlinked(id)).map(|(k, v)| (k.clone(), v.clone())).collect();
    let kept_refused: Vec<(String, String)> =
        state.refused.iter().filter(|(file, _)| unlinked(file)).map(|(k, v)| (k.clone(), v.clone())).collect();
    state.held = held;
    state.held.extend(kept_held);
    state.refused = refused;
    state.refused.extend(kept_refused);
    events
}

/// Logs each change once, when this data directory first sees it.
fn log_events(events: &[ComponentEvent]) {
    for e in events {
        match e.action {
            "component.loaded" | "component.removed" => {
                tracing::info!(target: "capstan::component", event = e.action, subject = %e.subject, detail = %e.detail, "component change")
            }
            _ => {
                tracing::warn!(target: "capstan::component", event = e.action, subject = %e.subject, detail = %e.detail, "component change")
            }
        }
    }
}

impl Runtime {
    /// Component changes not yet written to the audit log, oldest first.
    pub fn take_component_events(&self) -> Vec<ComponentEvent> {
        std::mem::take(&mut *self.component_events.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Resolves when new component events may be waiting.
    pub async fn component_events_changed(&self) {
        self.component_events_ready.notified().await
    }

    /// Loads `bytes` (a built-in when `builtin` holds its name and the code
    /// compiled for it), once per digest and source.
    pub(crate) async fn load_cached(
        &self,
        bytes: &[u8],
        source: Source,
        builtin: Option<(&str, &'static [u8])>,
    ) -> Result<Arc<Loaded>, LoadError> {
        let digest = loader::digest(bytes);
        if let Some(hit) = self.loads.lock().unwrap_or_else(|e| e.into_inner()).get(&digest)
            && hit.source == source
        {
            return Ok(hit.clone());
        }
        // Bytes refused once are refused again without compiling them again.
        if let Some(reason) = self.refusals.lock().unwrap_or_else(|e| e.into_inner()).get(&digest) {
            return Err(reason.clone());
        }
        let cache = self.config.cache_dir();
        let loading = match builtin {
            Some((name, precompiled)) => {
                let builtin = (name, bytes, precompiled);
                let fits = self.builtins_precompiled;
                loader::load_builtin(&self.engine, &self.linker, &self.loading, builtin, fits, &cache).await
            }
            None => loader::load(&self.engine, &self.linker, &self.loading, bytes, source, &cache).await,
        };
        let loaded = match loading {
            Ok(loaded) => Arc::new(loaded),
            Err(reason) => {
                // A refusal that depends on the moment (a deadline missed on
                // a busy machine) is tried again next time.
                if !reason.is_momentary() {
                    let mut refusals = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
                    if refusals.len() >= MAX_REMEMBERED_REFUSALS {
                        refusals.clear();
                    }
                    refusals.insert(digest, reason.clone());
                }
                return Err(reason);
            }
        };
        self.loads.lock().unwrap_or_else(|e| e.into_inner()).insert(digest, loaded.clone());
        Ok(loaded)
    }

    /// Rebuilds the registry, loading every file before it returns (a file
    /// not compiled yet is compiled now). At `startup`, a broken built-in or
    /// a missing or duplicated core capability is an error; later it only
    /// refuses files.
    pub async fn rescan(&self, startup: bool) -> anyhow::Result<ScanReport> {
        self.rescan_with(startup, None, true).await
    }

    /// Rebuilds the registry as the folder watcher does: a file whose code
    /// is not known yet is compiled in the background and listed as
    /// compiling; the rescan that follows its compile swaps it in.
    pub(crate) async fn rescan_watched(self: &Arc<Self>) -> anyhow::Result<ScanReport> {
        self.rescan_with(false, Some(self.clone()), true).await
    }

    /// A rescan; `background` compiles files not known yet off the scan.
    /// Without `record`, it only builds the registry: the data directory's
    /// state (known, held and refused components, retained copies) is left
    /// to the process that serves it, and no change is logged.
    /// With a catalog, this node's folder is published to it first, and a
    /// scan whose record another node changed meanwhile runs again.
    pub(super) async fn rescan_with(
        &self,
        startup: bool,
        background: Option<Arc<Runtime>>,
        record: bool,
    ) -> anyhow::Result<ScanReport> {
        let _guard = self.scan_lock.lock().await;
        self.rescans.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if record {
            self.publish_folder().await?;
        }
        for _ in 0..MAX_SCAN_RACES {
            if let Some(report) = self.scan_once(startup, background.clone(), record).await? {
                return Ok(report);
            }
        }
        anyhow::bail!(
            "other nodes kept changing the capability record during {MAX_SCAN_RACES} scans; the next will try again"
        )
    }

    /// One scan; `None` when another node changed the record it read.
    async fn scan_once(
        &self,
        startup: bool,
        background: Option<Arc<Runtime>>,
        record: bool,
    ) -> anyhow::Result<Option<ScanReport>> {
        let previous = self.registry.snapshot();
        let (mut state, version) = self.load_state().await?;
        let recorded = state.clone();
        let mut report = ScanReport::default();

        let mut builtins: BTreeMap<String, Arc<Loaded>> = BTreeMap::new();
        // Built-ins are loaded from the code compiled with the binary. When
        // this engine cannot use it (another machine's CPU features, or
        // `compile_builtins`), those never compiled on this data folder take
        // a while each: say so, and how far it got. (A later scan finds them
        // loaded already.)
        let cache = self.config.cache_dir();
        let fits = self.builtins_precompiled;
        let components = self.builtins.components;
        let uncompiled: Vec<&str> = if startup && !fits {
            components
                .iter()
                .filter(|(_, bytes, _)| !super::preinit::cached_path(&cache, &loader::digest(bytes)).exists())
                .map(|(name, _, _)| *name)
                .collect()
        } else {
            Vec::new()
        };
        if startup && fits {
            tracing::info!(count = components.len(), "loading the built-in components compiled with the binary");
        }
        if !uncompiled.is_empty() {
            tracing::info!(
                count = uncompiled.len(),
                of = components.len(),
                cache = %cache.display(),
                "compiling built-in components (the code built with the binary does not fit this engine; later starts load them from the cache)"
            );
        }
        let compiling_since = std::time::Instant::now();
        let mut compiled = 0;
        for (name, bytes, precompiled) in components {
            let loaded = self
                .load_cached(bytes, Source::BuiltIn(name.to_string()), Some((name, precompiled)))
                .await
                .map_err(|e| anyhow::anyhow!("built-in {name} cannot be loaded: {e}"))?;
            if uncompiled.contains(name) {
                compiled += 1;
                tracing::info!(
                    component = name,
                    done = compiled,
                    of = uncompiled.len(),
                    elapsed_ms = compiling_since.elapsed().as_millis() as u64,
                    "compiled a built-in component"
                );
            }
            let id = loaded.descriptor.id.clone();
            if builtins.insert(id.clone(), loaded).is_some() {
                anyhow::bail!("two built-in components declare the id {id}");
            }
        }

        // Directory files, in name order; the first file to claim an id wins.
        let mut from_dir: BTreeMap<String, Arc<Loaded>> = BTreeMap::new();
        let mut claimed_by: BTreeMap<String, PathBuf> = BTreeMap::new();
        let mut bytes_by_digest: BTreeMap<String, Arc<Vec<u8>>> = BTreeMap::new();
        let mut compiling = Vec::new();
        for (file, read) in self.plugin_entries().await? {
            let result = match read {
                Ok(bytes) => {
                    let digest = loader::digest(&bytes);
                    if let Some(reason) = self.compiles.refusal(&digest) {
                        report.refused.push(Refusal { file: file.clone(), reason });
                        keep_last_good(&previous, &file, &mut claimed_by, &mut from_dir);
                        continue;
                    }
                    if let Some(runtime) = background.as_ref().filter(|_| !self.knows(&digest)) {
                        compiling.push(runtime.compile_in_background(digest, bytes.to_vec(), file.clone()));
                        keep_last_good(&previous, &file, &mut claimed_by, &mut from_dir);
                        continue;
                    }
                    let result = self.load_in_scan(&bytes, &file).await;
                    if let Ok(loaded) = &result {
                        bytes_by_digest.insert(loaded.digest.clone(), bytes);
                    }
                    result
                }
                Err(reason) => Err(LoadError::from(reason)),
            };
            let loaded = match result {
                Ok(loaded) => loaded,
                Err(reason) => {
                    report.refused.push(Refusal { file: file.clone(), reason: reason.to_string() });
                    keep_last_good(&previous, &file, &mut claimed_by, &mut from_dir);
                    continue;
                }
            };
            let id = loaded.descriptor.id.clone();
            if id.starts_with("mcp.") {
                let reason = format!("id {id}: ids under mcp. name the tools of external MCP servers");
                report.refused.push(Refusal { file, reason });
                continue;
            }
            if let Some(first) = claimed_by.get(&id) {
                let reason = format!("duplicate id {id}: already provided by {}", first.display());
                if startup && CORE_CAPABILITIES.contains(&id.as_str()) {
                    anyhow::bail!("core capability {id} is provided twice: {} and {}", first.display(), file.display());
                }
                report.refused.push(Refusal { file, reason });
                continue;
            }
            claimed_by.insert(id.clone(), file);
            from_dir.insert(id, loaded);
        }

        let mut next =
            Snapshot { active: builtins.clone(), held: BTreeMap::new(), refused: report.refused.clone(), compiling };
        for (id, candidate) in from_dir {
            let baseline = builtins.get(&id).map(|b| known_of(b));
            let reason = state.hold_reason(&id, &known_of(&candidate), baseline.as_ref());
            match reason {
                None => {
                    next.active.insert(id, candidate);
                }
                Some(reason) => {
                    // Keep serving what ran before: from memory, or from the
                    // retained copy after a restart, or the built-in.
                    let prev = match previous.get(&id).filter(|p| p.digest != candidate.digest) {
                        Some(prev) => Some(prev),
                        None => self.load_retained(&state, &id).await,
                    };
                    if let Some(prev) = prev {
                        next.active.insert(id.clone(), prev);
                    }
                    next.held.insert(id, Held { candidate, reason });
                }
            }
        }

        let external = self.external_sets();
        let linked: Vec<String> = external.iter().map(|(server, _)| server.clone()).collect();
        super::external::add_external_tools(&mut next, &mut report, &state, external);

        let missing: Vec<&str> =
            CORE_CAPABILITIES.iter().copied().filter(|id| !next.active.contains_key(*id)).collect();
        if !missing.is_empty() {
            anyhow::bail!("core capabilities missing: {}", missing.join(", "));
        }

        if !record {
            self.registry.swap(next);
            return Ok(Some(report));
        }
        report.events = unseen_events(&mut state, &previous, &next, &linked);
        for (id, loaded) in &next.active {
            state.known.insert(id.clone(), known_of(loaded));
            if state.accepted.get(id).is_some_and(|d| *d == loaded.digest) {
                state.accepted.remove(id);
            }
        }
        // Written only when it changed: the watcher sees the file (or the
        // catalog's version), and an unchanged rewrite would start the
        // next rescan, for ever.
        if state != recorded && !self.save_state(&state, version).await? {
            return Ok(None);
        }
        if !self.clustered() {
            self.retain(&next, &bytes_by_digest, &state);
        }
        log_events(&report.events);
        self.registry.swap(next);
        self.component_events.lock().unwrap_or_else(|e| e.into_inner()).extend(report.events.iter().cloned());
        self.component_events_ready.notify_one();
        Ok(Some(report))
    }

    fn retained_dir(&self) -> PathBuf {
        self.config.data_dir().join("retained")
    }

    /// Keeps a copy of every active plugin's bytes, so that after a restart
    /// a held replacement does not leave its capability without a version.
    /// Copies no longer recorded as active are removed.
    fn retain(&self, next: &Snapshot, bytes_by_digest: &BTreeMap<String, Arc<Vec<u8>>>, state: &State) {
        let dir = self.retained_dir();
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        for loaded in next.active.values().filter(|l| matches!(l.source, Source::Directory(_))) {
            let path = dir.join(format!("{}.wasm", loaded.digest));
            if let (false, Some(bytes)) = (path.exists(), bytes_by_digest.get(&loaded.digest)) {
                let tmp = path.with_extension("wasm.tmp");
                if std::fs::write(&tmp, bytes.as_slice()).is_ok() {
                    let _ = std::fs::rename(&tmp, &path);
                }
            }
        }
        let wanted: Vec<String> = state.known.values().map(|k| format!("{}.wasm", k.digest)).collect();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !wanted.contains(&name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// Loads the retained copy of the last accepted version of `id`.
    async fn load_retained(&self, state: &State, id: &str) -> Option<Arc<Loaded>> {
        let known = state.known.get(id)?;
        let (bytes, path) = self.retained_bytes(&known.digest).await?;
        self.load_cached(&bytes, Source::Retained(path), None).await.ok()
    }

    /// Records the operator's acceptance of the held replacement for `id`
    /// (as this process holds it, or as the serving process last recorded
    /// it: an external server's tools are held only where it is linked);
    /// the next rescan activates it.
    /// With a catalog the acceptance is the cluster's: every node lets
    /// it in at its next rescan.
    pub async fn accept(&self, id: &str) -> anyhow::Result<String> {
        for _ in 0..MAX_SCAN_RACES {
            let (mut state, version) = self.load_state().await?;
            let snapshot = self.snapshot();
            let digest = match snapshot.held.get(id) {
                Some(held) => held.candidate.digest.clone(),
                None => state
                    .held
                    .get(id)
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("no replacement for {id} is waiting to be accepted"))?,
            };
            state.accepted.insert(id.to_string(), digest.clone());
            if self.save_state(&state, version).await? {
                return Ok(digest);
            }
        }
        anyhow::bail!("other nodes kept changing the capability record; accept {id} again")
    }
}
