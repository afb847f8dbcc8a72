//! The registry: an immutable [`Snapshot`] of the active capabilities, the
//! held replacements and the refused files, swapped atomically on every
//! rescan. Calls clone the `Arc` of the entry they use, so a call in flight
//! finishes on the version it started with.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde::Serialize;

use super::loader::{Loaded, Source};

/// A replacement waiting for `capstan capabilities accept`.
#[derive(Clone)]
pub struct Held {
    pub candidate: Arc<Loaded>,
    pub reason: String,
}

/// A file the loader refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub file: PathBuf,
    pub reason: String,
}

/// One consistent view of what is loaded.
#[derive(Clone, Default)]
pub struct Snapshot {
    pub active: BTreeMap<String, Arc<Loaded>>,
    pub held: BTreeMap<String, Held>,
    pub refused: Vec<Refusal>,
    /// Files being compiled in the background; a file that provided a
    /// version before keeps serving it meanwhile.
    pub compiling: Vec<super::compiling::Compiling>,
}

impl Snapshot {
    pub fn get(&self, id: &str) -> Option<Arc<Loaded>> {
        self.active.get(id).cloned()
    }

    /// The active entry that came from `file`, if any.
    pub(crate) fn loaded_from(&self, file: &PathBuf) -> Option<Arc<Loaded>> {
        self.active.values().find(|l| matches!(&l.source, Source::Directory(p) if p == file)).cloned()
    }
}

/// The current snapshot behind a lock held only to clone or swap the `Arc`.
#[derive(Default)]
pub struct Registry {
    current: RwLock<Arc<Snapshot>>,
}

impl Registry {
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the snapshot and returns the previous one.
    pub fn swap(&self, next: Snapshot) -> Arc<Snapshot> {
        let mut guard = self.current.write().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *guard, Arc::new(next))
    }
}
