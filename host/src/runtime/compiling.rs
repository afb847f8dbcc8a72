//! Components compiled in the background: a plugin file dropped into the
//! watched folder whose code is not known yet is compiled off the scan (a
//! Python component takes seconds), shown as `compiling` meanwhile, and
//! swapped in by a rescan when it is done. The compiler's worker threads
//! run at the lowest CPU priority, so calls to the capabilities already
//! loaded keep their latency while it works.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::Runtime;
use super::loader::Source;

/// A component file being compiled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Compiling {
    pub file: PathBuf,
    pub bytes: u64,
    /// When compiling began, milliseconds since the Unix epoch.
    pub started_ms: u64,
}

/// The compiles under way and the outcomes not yet taken by a rescan, by
/// the digest of the bytes.
#[derive(Default)]
pub(crate) struct Compiles {
    running: Mutex<HashMap<String, Compiling>>,
    /// Refusals found in the background, reported once by the next rescan
    /// (a refusal that depends on the moment is tried again after that).
    refused: Mutex<HashMap<String, String>>,
}

impl Compiles {
    pub(crate) fn running(&self) -> Vec<Compiling> {
        let mut list: Vec<Compiling> =
            self.running.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        list.sort_by(|a, b| a.file.cmp(&b.file));
        list
    }

    /// The refusal a background compile of `digest` ended with, once.
    pub(crate) fn take_refusal(&self, digest: &str) -> Option<String> {
        self.refused.lock().unwrap_or_else(|e| e.into_inner()).remove(digest)
    }
}

impl Runtime {
    /// Whether `digest` would load without compiling: loaded or refused
    /// before in this process.
    pub(crate) fn knows(&self, digest: &str) -> bool {
        self.loads.lock().unwrap_or_else(|e| e.into_inner()).contains_key(digest)
            || self.refusals.lock().unwrap_or_else(|e| e.into_inner()).contains_key(digest)
    }

    /// Compiles `bytes` from `file` in the background (once per digest),
    /// then rescans so the result takes its place.
    pub(crate) fn compile_in_background(self: &Arc<Self>, digest: String, bytes: Vec<u8>, file: PathBuf) {
        {
            let mut running = self.compiles.running.lock().unwrap_or_else(|e| e.into_inner());
            if running.contains_key(&digest) {
                return;
            }
            let started_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
            running.insert(digest.clone(), Compiling { file: file.clone(), bytes: bytes.len() as u64, started_ms });
        }
        tracing::info!(
            target: "capstan::component",
            file = %file.display(),
            bytes = bytes.len(),
            "compiling a component; the capabilities loaded meanwhile keep serving"
        );
        let runtime = self.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let outcome = runtime.load_cached(&bytes, Source::Directory(file.clone()), None).await;
            let elapsed_ms = started.elapsed().as_millis() as u64;
            match &outcome {
                Ok(loaded) => tracing::info!(
                    target: "capstan::component",
                    file = %file.display(),
                    id = %loaded.descriptor.id,
                    elapsed_ms,
                    "compiled a component"
                ),
                Err(reason) => {
                    runtime
                        .compiles
                        .refused
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(digest.clone(), reason.clone());
                }
            }
            runtime.compiles.running.lock().unwrap_or_else(|e| e.into_inner()).remove(&digest);
            let rescan: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>> =
                Box::pin(runtime.rescan_watched());
            if let Err(e) = rescan.await {
                tracing::error!(target: "capstan::component", error = %e, "rescan after compiling failed");
            }
        });
    }
}

/// Lowers the CPU priority of the compiler's worker threads (wasmtime
/// compiles a component's functions in parallel on rayon's global pool) to
/// the lowest, so a compile uses the cores only while nothing else wants
/// them. Set once, before the first compile; a pool already built by
/// someone else is left as it is.
pub(crate) fn lower_compile_priority() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let built = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("capstan-compile-{i}"))
            .start_handler(|_| {
                // Linux gives each thread its own nice value.
                let tid = rustix::thread::gettid();
                if let Err(e) = rustix::process::setpriority_process(Some(tid), 19) {
                    tracing::debug!(error = %e, "could not lower a compiler thread's priority");
                }
            })
            .build_global();
        if let Err(e) = built {
            tracing::debug!(error = %e, "the compiler's thread pool was built before Capstan could lower its priority");
        }
    });
}
