//! Three `capstan` processes on one PostgreSQL, each with a data folder of
//! its own and no folder shared: an agent run fetching a movie is in
//! progress on node A, which is SIGKILLed while `download.submit` is in
//! flight; another node takes the run over once A's lease lapses, checks
//! the write A left open read-only first, and finishes it with nothing
//! written twice — real qBittorrent receives one add; the console of node
//! C streams every event of the run, in order; the run's session log is in
//! the database, not in any node's folder, and the plugin given to the
//! first node ran on the others from the cluster's catalog.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capstan::runtime::EffectClass;
use capstan_tests::binary::{Serving, capstan_bin};
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::proxy::Proxy;
use capstan_tests::qbittorrent::QBittorrent;
use capstan_tests::torrent;

use capstan::acquisition::EVALUATE_ACQUISITION;
use capstan::tasks::{Task, TaskStatus};

use super::media::{ADD, RELEASE, start_over, start_run, torrents, wait_run};
use crate::http::events::SseReader;

struct Node(Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A copy of `config` with a data folder of its own, `data-<name>`.
fn node_config(config: &Path, name: &str) -> (PathBuf, PathBuf) {
    let dir = config.parent().unwrap();
    let data = dir.join(format!("data-{name}"));
    let text = std::fs::read_to_string(config).unwrap();
    let own: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with("data_dir = ") { format!("data_dir = {:?}", data.display().to_string()) } else { l.into() }
        })
        .collect();
    let path = dir.join(format!("capstan-{name}.toml"));
    std::fs::write(&path, own.join("\n")).unwrap();
    (path, data)
}

fn worker(config: &Path) -> Node {
    let child = Command::new(capstan_bin())
        .args(["--config", config.to_str().unwrap(), "worker"])
        .env("RUST_LOG", "warn")
        .env_remove("AGENT_SESSION_DIR")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Node(child)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_killed_mid_run_is_replaced_and_another_nodes_console_streams_it_all() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 47));
    let proxy = Proxy::start(&qbt.base_url()).await;
    let url = fresh_url(Backend::Postgres, qbt.downloads().parent().unwrap()).await;
    let env = start_over(&proxy.base_url(), &qbt, &dune, Some(url)).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let key = capstan::http::keys::create(&env.svc.db, "watcher", &[EffectClass::Read], "test").await.unwrap();

    // Node A takes the run; the add reaches qBittorrent and A never hears back.
    proxy.withhold(ADD);
    let run = start_run(&env, "fetch Dune: Part Two").await;
    let (a_config, a_data) = node_config(&env.config_path, "a");
    let a = worker(&a_config);
    let started = Instant::now();
    while proxy.count(ADD) == 0 || torrents(&qbt).await.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(90), "download.submit never reached qBittorrent from node A");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(a); // SIGKILL, download.submit in flight
    proxy.release();

    // Nodes B and C, with folders of their own; C serves the console.
    let (b_config, b_data) = node_config(&env.config_path, "b");
    let _b = worker(&b_config);
    let (c_config, c_data) = node_config(&env.config_path, "c");
    let dir = env.config_path.parent().unwrap();
    let c = Serving::start(dir, &c_data, &[("CAPSTAN_CONFIG", c_config.to_str().unwrap())]).await;
    let stream = reqwest::Client::new()
        .get(format!("{}/events?after=0", c.base()))
        .bearer_auth(&key)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut reader = SseReader { resp: stream, buffer: String::new() };
    let _moving = capstan_tests::qbittorrent::deliver_the_data(env.svc.clone(), true);

    // C's stream: every event of the run, in order, up to its end.
    let mut streamed: Vec<(i64, i64)> = Vec::new();
    let watching = Instant::now();
    loop {
        let (id, kind, data) = reader.next().await;
        let payload = &data["payload"];
        // The run's own events (others, such as its calls', name it too).
        let Some(run_seq) = payload["runSeq"].as_i64().filter(|_| payload["runId"] == run.id.as_str()) else {
            continue;
        };
        streamed.push((id, run_seq));
        if kind == "agent.run_status" && payload["status"].as_str().is_some_and(|s| s != "running" && s != "waiting") {
            break;
        }
        assert!(watching.elapsed() < Duration::from_secs(240), "the run did not end on C's stream: {streamed:?}");
    }
    let run = wait_run(&env, &run.id, Duration::from_secs(60)).await;
    assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
    let ids: Vec<i64> = streamed.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in the log's order: {ids:?}");
    let recorded: Vec<i64> =
        env.agent.runs().run_events(&run.id, 0, 1000).await.unwrap().iter().map(|e| e.seq).collect();
    let run_seqs: Vec<i64> = streamed.iter().map(|(_, seq)| *seq).collect();
    assert_eq!(run_seqs, recorded, "every event of the run, none missed, none twice");

    // Nothing written twice: one add, one receipt, reconciled by the node
    // that took over.
    super::media::submitted_once_by_the_takeover(&env, &run, &proxy, &qbt).await;

    // The session log is the database's; no node kept one in its folder.
    let lines: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agent_session_entry WHERE run_id = $1")
        .bind(&run.id)
        .fetch_one(&env.svc.db.pool)
        .await
        .unwrap();
    assert!(lines >= 4, "{lines}");
    for data in [&a_data, &b_data, &c_data] {
        assert!(!data.join("agent-sessions").join(format!("{}.jsonl", run.id)).exists(), "{}", data.display());
        assert!(!data.join("capabilities").join("safe.wasm").exists(), "no plugin was copied to {}", data.display());
    }
    let catalog: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM capability_plugin WHERE name = 'safe.wasm'")
        .fetch_one(&env.svc.db.pool)
        .await
        .unwrap();
    assert_eq!(catalog, 1, "the first node's plugin is the cluster's");
}

/// Waits up to 90 s for `check` to answer something.
async fn until<T, F: std::future::Future<Output = Option<T>>>(what: &str, mut check: impl FnMut() -> F) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "{what} within 90 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sweep_runs_on_one_node_at_a_time_and_moves_when_its_node_dies() {
    let qbt = QBittorrent::start().await;
    let dune = torrent::single_file(&qbt.downloads(), RELEASE, &torrent::payload(70_000, 47));
    let url = fresh_url(Backend::Postgres, qbt.downloads().parent().unwrap()).await;
    let env = start_over(&qbt.base_url(), &qbt, &dune, Some(url)).await;
    let (indexer, tasks, db) = (&env._indexer, env.svc.domain.tasks().clone(), env.svc.db.clone());
    // Every node sweeps each second; a node's lease lapses 2 s after its
    // last renewal.
    let sweeping = |name: &str| {
        let (config, _) = node_config(&env.config_path, name);
        let text = std::fs::read_to_string(&config).unwrap();
        // The feeds, read on their own schedule, would be indexer requests
        // of another kind: off, so every request is a sweep's search.
        let sweeps = "pipeline_interval_sec = 1\nfeed_interval_sec = 0";
        std::fs::write(&config, text.replace("pipeline_interval_sec = 0", sweeps)).unwrap();
        worker(&config)
    };
    let sweeps_running = || {
        let tasks = tasks.clone();
        async move {
            let all = tasks.list(None, 500).await.unwrap();
            all.into_iter()
                .filter(|t| t.kind == EVALUATE_ACQUISITION && t.status == TaskStatus::Running)
                .collect::<Vec<Task>>()
        }
    };

    // Node A alone: its sweep's search reaches the indexer and waits there.
    indexer.close_searches();
    let a = sweeping("a");
    until("node A's sweep searching", || async { (indexer.searching() == 1).then_some(()) }).await;
    let held = sweeps_running().await;
    assert_eq!(held.len(), 1, "{held:?}");
    let held = held.into_iter().next().unwrap();
    let a_owner = held.lease_owner.clone().unwrap();

    // Nodes B and C join, each scheduling the sweep too; A dies mid-sweep.
    let _b = sweeping("b");
    let _c = sweeping("c");
    until("three nodes alive beside this one", || async {
        let alive: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM process_heartbeat").fetch_one(&db.pool).await.unwrap();
        (alive >= 4).then_some(())
    })
    .await;
    assert_eq!(indexer.searches().len(), 1, "no other node searched while A's sweep ran");
    drop(a); // SIGKILL
    indexer.hold_searches(Duration::from_millis(300));
    // A search that fails leaves the title due, so every sweep after this
    // one searches again, and each search is held long enough that two at
    // once would be seen.
    indexer.fail_with(Some(capstan_tests::mock_torznab::Failure::SearchServerError));
    indexer.open_searches();

    // Another node takes A's sweep over once A's lease lapses, and finishes it.
    let done = until("A's sweep finished by another node", || async {
        tasks.get(&held.id).await.unwrap().filter(|t| t.status == TaskStatus::Succeeded)
    })
    .await;
    assert_eq!(done.attempts, 2, "claimed once by A and once by the node that took over: {done:?}");
    let audit = capstan::audit::Audit::new(db.clone()).list(0, 10_000).await.unwrap();
    let finished = audit.iter().find(|e| e.event.action == "task.succeeded" && e.event.subject == held.id).unwrap();
    assert!(!finished.event.principal.contains(&a_owner), "finished by {}, not A", finished.event.principal);

    // The schedule goes on without A: more sweeps, still one at a time.
    let searched = indexer.searches().len();
    until("three more sweeps after A died", || async { (indexer.searches().len() >= searched + 3).then_some(()) })
        .await;
    assert_eq!(indexer.most_searching_at_once(), 1, "two sweeps searched at once");
    let owners: std::collections::BTreeSet<String> = audit_owners(&db, &a_owner).await;
    assert!(!owners.is_empty(), "the sweeps after A's death ran on B or C");
}

/// The workers other than `a_owner` that finished a sweep.
async fn audit_owners(db: &capstan::store::Db, a_owner: &str) -> std::collections::BTreeSet<String> {
    let audit = capstan::audit::Audit::new(db.clone()).list(0, 10_000).await.unwrap();
    let sweeps: std::collections::BTreeSet<String> = sqlx::query_scalar("SELECT id FROM task WHERE kind = $1")
        .bind(EVALUATE_ACQUISITION)
        .fetch_all(&db.pool)
        .await
        .unwrap()
        .into_iter()
        .collect();
    audit
        .iter()
        .filter(|e| e.event.action == "task.succeeded" && sweeps.contains(&e.event.subject))
        .map(|e| e.event.principal.clone())
        .filter(|p| !p.contains(a_owner))
        .collect()
}
