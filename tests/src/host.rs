//! A runtime over a fresh temporary data directory, with the compiled
//! component cache shared between tests so each component compiles once.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use capstan::{Config, Runtime};
use tempfile::TempDir;

/// The workspace's `target/` folder.
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("target")
}

/// The compiled-component cache shared by all tests.
pub fn shared_cache() -> PathBuf {
    target_dir().join("capstan-test-cache")
}

/// A temporary data directory and a config pointing into it.
pub struct TestHost {
    pub dir: TempDir,
    pub config: Config,
}

impl TestHost {
    pub fn new() -> TestHost {
        let dir = tempfile::tempdir().unwrap();
        let config =
            Config { data_dir: Some(dir.path().join("data")), cache_dir: Some(shared_cache()), ..Config::default() };
        TestHost { dir, config }
    }

    /// A host as the console-setup suites start it: `torznab-3` set in the
    /// configuration file (the console shows it and leaves it alone), and
    /// empty `downloads` and `library` folders, returned beside it.
    pub fn with_a_file_indexer() -> (TestHost, PathBuf, PathBuf) {
        use capstan::config::{Auth, SecretRef, ServiceConfig};
        let mut host = TestHost::new();
        let file_indexer = ServiceConfig {
            base_url: "http://127.0.0.1:9/file".into(),
            auth: Auth::Query { name: "apikey".into(), value: SecretRef("file-key".into()) },
            operations: Vec::new(),
            timeout_ms: 2_000,
            response_cap_bytes: 1 << 20,
        };
        host.config.services.insert("torznab-3".into(), file_indexer);
        let (downloads, library) = (host.dir.path().join("downloads"), host.dir.path().join("library"));
        std::fs::create_dir_all(&downloads).unwrap();
        std::fs::create_dir_all(&library).unwrap();
        (host, downloads, library)
    }

    /// The plugin folder.
    pub fn plugins(&self) -> PathBuf {
        self.config.capabilities_dir()
    }

    /// Copies a component into the plugin folder under `name`.
    pub fn drop_plugin(&self, component: &str, name: &str) -> PathBuf {
        std::fs::create_dir_all(self.plugins()).unwrap();
        let to = self.plugins().join(name);
        // Write then rename, as an operator's copy tool would, so the watcher
        // never sees half a file.
        let tmp = self.plugins().join(format!(".{name}.part"));
        std::fs::copy(component, &tmp).unwrap();
        std::fs::rename(&tmp, &to).unwrap();
        to
    }

    /// Starts the runtime.
    pub async fn start(&self) -> anyhow::Result<Arc<Runtime>> {
        Runtime::start(self.config.clone(), &capstan::BUILT_INS).await
    }

    /// Accepts the held component `id` as an operator would
    /// (`capstan capabilities accept`) and rescans, so it is active.
    pub async fn accept(&self, runtime: &Runtime, id: &str) {
        accept(runtime, id).await
    }
}

/// Accepts the held component `id` as an operator would (`capstan
/// capabilities accept`) and rescans, so it is active. Plugins that act on
/// plans or carry a policy tag are held when first seen. On a node of a
/// cluster that already has it accepted, only rescans.
pub async fn accept(runtime: &Runtime, id: &str) {
    // In a cluster another node may have accepted it already.
    let elsewhere = runtime.clustered() && !runtime.snapshot().held.contains_key(id);
    if !elsewhere {
        runtime.accept(id).await.unwrap_or_else(|e| panic!("{id} is not held: {e}"));
    }
    runtime.rescan(false).await.unwrap();
    assert!(runtime.snapshot().active.contains_key(id), "{id} is not active after acceptance");
}

impl Default for TestHost {
    fn default() -> Self {
        TestHost::new()
    }
}
