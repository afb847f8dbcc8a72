//! What the series suites share: a pipeline host whose TMDB is the mock
//! catalogue and whose grant lets the sweep fetch, TV listings for the
//! mock indexer, and calls made as a person or as a task.

use capstan::pipeline::Origin;
use capstan::runtime::EffectClass;
use capstan::tasks::TaskStatus;
use capstan_tests::db::Backend;
use capstan_tests::host::TestHost;
use capstan_tests::mock_tmdb::{Catalog, MockTmdb};
use capstan_tests::mock_torznab::{Indexer, Item, MockTorznab};
use capstan_tests::qbittorrent::QBittorrent;
use serde_json::Value;

use super::pipeline::{Env, run, start_with};

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

/// A season-1 release of series `tmdb_id` the indexer lists: one episode,
/// or the whole season when `episode` is `None`.
pub(super) fn tv_item(title: &str, hash: &str, tmdb_id: u64, episode: Option<u32>, seeders: u32) -> Item {
    Item {
        title: leak(title),
        size: 60_000,
        seeders,
        peers: seeders + 2,
        infohash: Some(leak(hash)),
        categories: &[5000, 5040],
        tmdb_id: Some(tmdb_id),
        season: Some(1),
        episode,
        pub_date: "Sat, 02 Mar 2024 09:00:00 +0000",
        ..Item::default()
    }
}

/// An indexer offering typed TV search, listing `items`.
pub(super) fn tv_indexer(items: Vec<Item>) -> Indexer {
    Indexer {
        title: "Loopback indexer",
        movie_params: Some("q,imdbid,tmdbid"),
        tv_params: Some("q,season,ep,tvdbid,tmdbid"),
        items,
    }
}

/// A pipeline host on `backend` with `indexer`, the mock TMDB (kept alive
/// in the answer) and a grant for everything.
pub(super) async fn start_with_tmdb(backend: Backend, qbt: &QBittorrent, indexer: MockTorznab) -> (Env, MockTmdb) {
    let tmdb = MockTmdb::start(super::titles::KEY, Catalog::sample()).await;
    let mut host = TestHost::new();
    host.config.services.insert("tmdb".into(), super::titles::tmdb_service(&tmdb));
    let env = start_with(backend, qbt, indexer, host).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    (env, tmdb)
}

/// Calls `library.want` as a person at the command line; it must succeed.
pub(super) async fn want(env: &Env, input: Value) -> Value {
    let inv = env.caps.invoke(&Origin::cli(EffectClass::Execute), "library.want", &input).await.unwrap();
    assert!(inv.error.is_none(), "{input}: {:?}", inv.error);
    inv.output.unwrap()
}

/// Runs a task of `kind` to success; its result.
pub(super) async fn task_result(env: &Env, kind: &str, payload: Value) -> Value {
    let task = run(env, kind, payload).await;
    assert_eq!(task.status, TaskStatus::Succeeded, "{:?}", task.last_error);
    task.result.unwrap()
}
