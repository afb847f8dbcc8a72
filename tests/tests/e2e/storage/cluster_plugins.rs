//! Plugins across the nodes of one PostgreSQL, with no folder shared: a
//! plugin dropped into one node's folder loads on another whose folder is
//! empty (which notices by itself, polling the catalog); a replacement
//! that widens what it may do is held on every node, none of them running
//! it, until an administrator accepts it once, on any node; and a plugin
//! removed from the folder it came from leaves every node.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::runtime::{EffectClass, Runtime};
use capstan_tests::components;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;

struct Node {
    host: TestHost,
    app: Arc<capstan::app::App>,
}

impl Node {
    async fn start(url: &str) -> Node {
        let host = TestHost::new();
        let db = capstan::store::Db::open(url).await.unwrap();
        let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
        Node { host, app }
    }

    fn runtime(&self) -> &Arc<Runtime> {
        self.app.caps().runtime()
    }

    /// The label `id` runs with here, if it runs.
    fn active(&self, id: &str) -> Option<EffectClass> {
        self.runtime().snapshot().active.get(id).map(|l| l.descriptor.label)
    }

    fn held(&self, id: &str) -> bool {
        self.runtime().snapshot().held.contains_key(id)
    }
}

async fn until(what: &str, cond: impl Fn() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < Duration::from_secs(120), "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_reaches_every_node_and_a_widening_one_waits_for_one_acceptance() {
    let first = TestHost::new();
    let url = fresh_url(Backend::Postgres, first.dir.path()).await;
    drop(first);
    let (a, b) = (Node::start(&url).await, Node::start(&url).await);
    // B rescans by itself, as a serving node does: its folder stays empty.
    let _watch = capstan::runtime::watcher::watch(b.runtime().clone()).unwrap();

    a.host.drop_plugin(components::PROBE_LITE, "probe.wasm");
    a.runtime().rescan(false).await.unwrap();
    assert_eq!(a.active("test.probe"), Some(EffectClass::Read));
    until("B loads the plugin A was given", || b.active("test.probe") == Some(EffectClass::Read)).await;
    assert!(!b.host.plugins().join("probe.wasm").exists(), "nothing was copied into B's folder");

    // A replacement dropped on B that raises the label: held on both,
    // each still running the version accepted before.
    tokio::time::sleep(Duration::from_millis(20)).await;
    b.host.drop_plugin(components::PROBE, "probe.wasm");
    b.runtime().rescan(false).await.unwrap();
    assert!(b.held("test.probe"), "{:?}", b.runtime().snapshot().held.keys().collect::<Vec<_>>());
    assert_eq!(b.active("test.probe"), Some(EffectClass::Read), "B runs the accepted version");
    a.runtime().rescan(false).await.unwrap();
    assert!(a.held("test.probe"), "held on the node that did not see the file too");
    assert_eq!(a.active("test.probe"), Some(EffectClass::Read), "A never runs what was not accepted");

    // One acceptance, on A: B lets it in by itself.
    a.runtime().accept("test.probe").await.unwrap();
    a.runtime().rescan(false).await.unwrap();
    assert_eq!(a.active("test.probe"), Some(EffectClass::Execute));
    until("B runs the accepted replacement", || b.active("test.probe") == Some(EffectClass::Execute)).await;
    assert!(!b.held("test.probe"));
    let nothing = b.runtime().accept("test.probe").await;
    assert!(nothing.unwrap_err().to_string().contains("no replacement"), "accepted once is accepted");

    // Removed from the folders it was dropped into: gone from every node.
    std::fs::remove_file(a.host.plugins().join("probe.wasm")).unwrap();
    std::fs::remove_file(b.host.plugins().join("probe.wasm")).unwrap();
    a.runtime().rescan(false).await.unwrap();
    b.runtime().rescan(false).await.unwrap();
    a.runtime().rescan(false).await.unwrap();
    assert_eq!(a.active("test.probe"), None);
    until("B drops it too", || b.active("test.probe").is_none()).await;
}
