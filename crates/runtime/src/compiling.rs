//! Components compiled in the background: a plugin file dropped into the
//! watched folder whose code is not known yet is compiled off the scan (a
//! Python component takes seconds), shown as `compiling` meanwhile, and
//! swapped in by a rescan when it is done (where a scan must wait for it,
//! at the start of `serve`, the log says what is compiling and for how
//! long). The compiler's worker threads
//! (where the work of compiling runs) are at a low CPU priority, so
//! calls to the capabilities already loaded keep their latency while it
//! works.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::Runtime;
use super::loader::{LoadError, Source};

/// A component file being compiled.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Compiling {
    pub file: PathBuf,
    pub bytes: u64,
    /// When compiling began, milliseconds since the Unix epoch.
    pub started_ms: u64,
}

/// How long a refusal that depends on the moment (a `describe` deadline
/// missed on a busy machine) stands before the bytes are compiled again. A
/// rescan comes often (the scan's own state file wakes the watcher), so
/// without a wait such a component would be compiled over and over.
const RETRY_MOMENTARY: Duration = Duration::from_secs(60);

/// Background refusals remembered before the memory is cleared.
const MAX_REFUSALS: usize = 1024;

/// The compiles under way and the refusals they ended with, by the digest
/// of the bytes.
#[derive(Default)]
pub(crate) struct Compiles {
    running: Mutex<HashMap<String, Compiling>>,
    /// Why bytes compiled in the background were refused, and when: kept
    /// while the bytes stay the same (a momentary reason for
    /// [`RETRY_MOMENTARY`]).
    refused: Mutex<HashMap<String, (LoadError, Instant)>>,
}

impl Compiles {
    /// Why the background compile of `digest` was refused, while that
    /// stands.
    pub(crate) fn refusal(&self, digest: &str) -> Option<String> {
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        let (reason, at) = refused.get(digest)?;
        if reason.is_momentary() && at.elapsed() >= RETRY_MOMENTARY {
            refused.remove(digest);
            return None;
        }
        Some(reason.to_string())
    }

    fn refuse(&self, digest: String, reason: LoadError) {
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if refused.len() >= MAX_REFUSALS {
            refused.clear();
        }
        refused.insert(digest, (reason, Instant::now()));
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
    /// then rescans so the result takes its place. Answers the entry the
    /// registry lists meanwhile.
    pub(crate) fn compile_in_background(self: &Arc<Self>, digest: String, bytes: Vec<u8>, file: PathBuf) -> Compiling {
        let entry = {
            let mut running = self.compiles.running.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(under_way) = running.get(&digest) {
                return under_way.clone();
            }
            let started_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
            let entry = Compiling { file: file.clone(), bytes: bytes.len() as u64, started_ms };
            running.insert(digest.clone(), entry.clone());
            entry
        };
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
                Err(reason) => runtime.compiles.refuse(digest.clone(), reason.clone()),
            }
            runtime.compiles.running.lock().unwrap_or_else(|e| e.into_inner()).remove(&digest);
            let rescan: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>> =
                Box::pin(runtime.rescan_watched());
            if let Err(e) = rescan.await {
                tracing::error!(target: "capstan::component", error = %e, "rescan after compiling failed");
            }
        });
        entry
    }
}

/// How long loading a file in a scan may take before the log says it is
/// compiling: reading compiled code back from the cache takes a fraction of
/// a second, a first compile of a Python component many seconds.
const SAY_COMPILING_AFTER: Duration = Duration::from_secs(1);

impl Runtime {
    /// Loads a plugin file where the scan waits for it (the start of
    /// `serve`, one-shot commands). One that takes a while is said to be
    /// compiling, with its file and size, and then how long it took, so a
    /// start that waits for a Python component shows why.
    pub(super) async fn load_in_scan(&self, bytes: &[u8], file: &Path) -> Result<Arc<super::Loaded>, LoadError> {
        let started = Instant::now();
        let load = self.load_cached(bytes, Source::Directory(file.to_path_buf()), None);
        tokio::pin!(load);
        tokio::select! {
            loaded = &mut load => return loaded,
            _ = tokio::time::sleep(SAY_COMPILING_AFTER) => {}
        }
        tracing::info!(
            target: "capstan::component",
            file = %file.display(),
            bytes = bytes.len(),
            "compiling a component before going on (the first load of these bytes; later loads read the \
             compiled code from the cache, and `capstan capabilities check FILE` compiles it there ahead)"
        );
        let loaded = load.await;
        if let Ok(loaded) = &loaded {
            tracing::info!(
                target: "capstan::component",
                file = %file.display(),
                id = %loaded.descriptor.id,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "compiled a component"
            );
        }
        loaded
    }
}

/// The nice value of the compiler's worker threads. At 10 a compile gets
/// about a tenth of a core that calls keep busy (the scheduler weighs nice
/// 10 at 110 against 1024 for the calls' threads), so the calls keep their
/// latency and the compile still ends on a busy machine; at 19 it would get
/// about 1.5% and a Python component would take many minutes to load.
const COMPILE_NICE: i32 = 10;

/// Lowers the CPU priority of the compiler's worker threads (wasmtime
/// compiles a component's functions in parallel on rayon's global pool) to
/// [`COMPILE_NICE`], so a compile uses the cores mostly when nothing else
/// wants them. Set once, before the first compile; a pool already built by
/// someone else is left as it is.
pub(crate) fn lower_compile_priority() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let built = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("capstan-compile-{i}"))
            .start_handler(|_| {
                // Linux gives each thread its own nice value.
                let tid = rustix::thread::gettid();
                if let Err(e) = rustix::process::setpriority_process(Some(tid), COMPILE_NICE) {
                    tracing::debug!(error = %e, "could not lower a compiler thread's priority");
                }
            })
            .build_global();
        if let Err(e) = built {
            tracing::debug!(error = %e, "the compiler's thread pool was built before Capstan could lower its priority");
        }
    });
}
