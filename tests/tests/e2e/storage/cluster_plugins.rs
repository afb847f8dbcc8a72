//! Plugins across the nodes of one PostgreSQL, with no folder shared: a
//! plugin dropped into one node's folder loads on another whose folder is
//! empty (which notices by itself, polling the catalog); a replacement
//! that widens what it may do is held on every node, none of them running
//! it, until an administrator accepts it once, on any node; and a plugin
//! removed from the folder it came from leaves every node. The same over
//! HTTP from a console session: an upload to one node serves on the
//! other, a widening one waits for an accept, a removal leaves both, and
//! an upload that is refused — not a component, a label its imports
//! exceed, an id another plugin has, a name that is not a file's — says
//! why and changes nothing.

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

#[tokio::test(flavor = "multi_thread")]
async fn plugins_uploaded_over_http_reach_every_node_and_a_refused_upload_changes_nothing() {
    let first = TestHost::new();
    let url = fresh_url(Backend::Postgres, first.dir.path()).await;
    drop(first);
    let (a, b) = (Node::start(&url).await, Node::start(&url).await);
    let _watch = capstan::runtime::watcher::watch(b.runtime().clone()).unwrap();
    let base = capstan_tests::api::serve(a.app.clone()).await;
    let db = a.app.services().db.clone();
    let admin = capstan_tests::api::Api::new(&base).signed_in(&db, "admin").await;
    let wasm = |path: &str| std::fs::read(path).unwrap();

    // Installed on A: it serves on A at once and on B by itself.
    let (status, body) = admin.put_bytes("/plugins/probe.wasm", "application/wasm", wasm(components::PROBE_LITE)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!((body["status"].as_str(), body["capability"].as_str()), (Some("loaded"), Some("test.probe")));
    assert_eq!(a.active("test.probe"), Some(EffectClass::Read));
    until("B loads the plugin uploaded to A", || b.active("test.probe") == Some(EffectClass::Read)).await;

    // Refused uploads say why and change nothing.
    let folder = |name: &str| a.host.plugins().join(name);
    let (status, body) = admin.put_bytes("/plugins/probe.wasm", "application/wasm", wasm(components::PROBE)).await;
    assert_eq!(status, 409, "replacing is asked for, not assumed: {body}");
    let (status, body) =
        admin.put_bytes("/plugins/probe.wasm?replace=true", "application/wasm", b"\0asm not really".to_vec()).await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = admin.put_bytes("/plugins/liar.wasm", "application/wasm", wasm(components::LABEL_LIE)).await;
    assert_eq!(status, 422, "{body}");
    assert!(!folder("liar.wasm").exists());
    let (status, body) =
        admin.put_bytes("/plugins/probe-again.wasm", "application/wasm", wasm(components::PROBE_LITE)).await;
    assert_eq!(status, 422, "an id another plugin provides: {body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("test.probe"), "{body}");
    assert!(!folder("probe-again.wasm").exists(), "the refused file is taken back out");
    let (status, _) = admin.put_bytes("/plugins/x%20y.wasm", "application/wasm", wasm(components::PROBE)).await;
    assert_eq!(status, 400);
    let (status, _) = admin.put_bytes("/plugins/probe.wasm?replace=true", "text/plain", wasm(components::PROBE)).await;
    assert_eq!(status, 415);
    let key = capstan::http::keys::create(&db, "deployer", &[EffectClass::Execute], "test").await.unwrap();
    let (status, _) =
        admin.with_key(&key).put_bytes("/plugins/other.wasm", "application/wasm", wasm(components::PROBE_LITE)).await;
    assert_eq!(status, 403, "plugins are installed from a console session");
    assert_eq!(std::fs::read(folder("probe.wasm")).unwrap(), wasm(components::PROBE_LITE));
    assert_eq!(a.active("test.probe"), Some(EffectClass::Read));
    assert!(!a.held("test.probe"));

    // A replacement that widens what it may do waits on both nodes.
    let (status, body) =
        admin.put_bytes("/plugins/probe.wasm?replace=true", "application/wasm", wasm(components::PROBE)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "held");
    assert!(body["next"].as_str().unwrap().contains("/capabilities/test.probe/accept"), "{body}");
    assert_eq!(a.active("test.probe"), Some(EffectClass::Read), "the accepted version goes on serving");
    until("B holds it too", || b.held("test.probe")).await;
    assert_eq!(b.active("test.probe"), Some(EffectClass::Read));

    // One accept over HTTP lets it in everywhere.
    let (status, body) = admin.post("/capabilities/test.probe/accept", serde_json::Value::Null).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["serving"], true);
    assert_eq!(a.active("test.probe"), Some(EffectClass::Execute));
    until("B runs the accepted replacement", || b.active("test.probe") == Some(EffectClass::Execute)).await;
    let (status, _) = admin.post("/capabilities/test.probe/accept", serde_json::Value::Null).await;
    assert_eq!(status, 404, "nothing waits any more");

    // Removed over HTTP: gone from both nodes.
    let (status, _) = admin.send(reqwest::Method::DELETE, "/plugins/probe.wasm", serde_json::Value::Null).await;
    assert_eq!(status, 204);
    assert_eq!(a.active("test.probe"), None);
    until("B drops it too", || b.active("test.probe").is_none()).await;
    let (status, _) = admin.send(reqwest::Method::DELETE, "/plugins/probe.wasm", serde_json::Value::Null).await;
    assert_eq!(status, 404);

    // Every change is in the audit log.
    let audit = a.app.audit().list(0, 10_000).await.unwrap();
    let actions: Vec<(&str, &str)> = audit
        .iter()
        .filter(|e| e.event.actor_kind == "console-admin")
        .map(|e| (e.event.action.as_str(), e.event.outcome.as_str()))
        .collect();
    for expected in [
        ("plugin.install", "succeeded"),
        ("plugin.install", "refused"),
        ("component.accept", "succeeded"),
        ("plugin.remove", "succeeded"),
    ] {
        assert!(actions.contains(&expected), "{expected:?} in {actions:?}");
    }
}
