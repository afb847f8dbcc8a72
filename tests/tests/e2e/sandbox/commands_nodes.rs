//! Command output across nodes of one PostgreSQL, with no folder shared:
//! a run whose command one node started reads, on another node, how it
//! stands, waits for its end and pages through all it wrote — a 20 MB
//! archive included — while another run finds nothing; a process whose
//! node went silent is `unknown`, never `running` for ever; and pruning
//! on any node removes what is old.

use std::time::Duration;

use capstan::pipeline::Origin;
use capstan::runtime::{Actor, EffectClass, Status};
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use serde_json::json;

use super::commands::{Env, call, env_over};

fn in_run(actor: Actor, run: &str) -> Origin {
    Origin {
        actor,
        principal: format!("{}:{run}", if actor == Actor::Subagent { "subagent" } else { "agent" }),
        run_id: Some(run.to_string()),
        ..Origin::cli(EffectClass::Execute)
    }
}

async fn two_nodes() -> (Env, Env) {
    let first = TestHost::new();
    let url = fresh_url(Backend::Postgres, first.dir.path()).await;
    let a = env_over(first, &url, 3151, |_| {}).await;
    let b = env_over(TestHost::new(), &url, 3151, |_| {}).await;
    assert_ne!(a._host.dir.path(), b._host.dir.path(), "each node has its own data folder");
    capstan_tests::grants::allow_everything(&a.svc).await;
    (a, b)
}

async fn start(node: &Env, command: &str) -> String {
    let input = json!({"action": "start", "command": command});
    let started = call(node, &in_run(Actor::Agent, "r1"), "system.command", input).await;
    assert_eq!(started.status, Status::Succeeded, "{:?}", started.error);
    started.output.unwrap()["handle"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn another_node_reads_waits_for_and_pages_through_what_a_command_wrote() {
    let (a, b) = two_nodes().await;
    let reader = in_run(Actor::Subagent, "r1");

    let handle = start(&a, "chatty").await;
    let status = call(&b, &reader, "system.command-output", json!({"action": "status", "handle": handle})).await;
    assert_eq!(status.status, Status::Succeeded, "the other node knows the handle at once: {:?}", status.error);

    let wait = json!({"action": "wait", "handle": handle, "timeout_ms": 20_000});
    let waited = call(&b, &reader, "system.command-output", wait.clone()).await;
    assert_eq!(waited.status, Status::Succeeded, "{:?}", waited.error);
    let out = waited.output.unwrap();
    assert_eq!((out["execution_outcome"].as_str(), out["exit_code"].as_i64()), (Some("exited"), Some(0)), "{out}");
    assert_eq!(out["output"], "first\nsecond\n");
    let page = json!({"action": "read", "handle": handle, "offset": 6, "limit": 100});
    let read = call(&b, &reader, "system.command-output", page).await;
    assert_eq!(read.output.unwrap()["text"], "second\n");
    let other = call(&b, &in_run(Actor::Subagent, "r2"), "system.command-output", wait).await;
    assert_eq!(other.error.unwrap().kind, "not-found", "another run's process is not there");

    // 20 MB, written in pages: any offset reads back, on the other node
    // as the agent's `read_tool_result` does.
    let flood = start(&a, "flood").await;
    let wait = json!({"action": "wait", "handle": flood, "timeout_ms": 60_000});
    let out = call(&b, &reader, "system.command-output", wait).await.output.unwrap();
    assert_eq!((out["execution_outcome"].as_str(), out["output_bytes"].as_u64()), (Some("exited"), Some(20_000_000)));
    let runtime = b.caps.runtime();
    let (bytes, kept) = runtime.command_output("run:r1", &format!("{flood}.log"), 262_140, 10).await.unwrap().unwrap();
    assert_eq!((bytes.as_slice(), kept), (b"xxxxxxxxxx".as_slice(), 20_000_000), "across a page's edge");
    let (tail, _) = runtime.command_output("run:r1", &flood, 19_999_990, 100).await.unwrap().unwrap();
    assert_eq!(tail, b"xxxxxxxxxx");
    assert!(runtime.command_output("run:r2", &flood, 0, 10).await.is_none(), "not another run's");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_whose_node_went_silent_is_unknown_and_old_output_is_pruned() {
    let (a, b) = two_nodes().await;
    let reader = in_run(Actor::Subagent, "r1");
    // A node that died while its command ran wrote its last heartbeat
    // long ago, and never its end.
    let handle = start(&a, "hello").await;
    let wait = json!({"action": "wait", "handle": handle, "timeout_ms": 20_000});
    let ended = call(&b, &reader, "system.command-output", wait.clone()).await.output.unwrap();
    assert_eq!(ended["execution_outcome"], "exited");
    let silent = capstan::store::now_ms() - capstan::runtime::host::STALE_AFTER.as_millis() as i64 - 1_000;
    sqlx::query("UPDATE command_output SET outcome = NULL, seen_at = $1 WHERE handle = $2")
        .bind(silent)
        .bind(&handle)
        .execute(&b.db.pool)
        .await
        .unwrap();
    let seen = call(&b, &reader, "system.command-output", wait).await;
    assert_eq!(seen.status, Status::Unknown, "its end cannot be confirmed: {:?}", seen.error);
    assert_eq!(seen.output.unwrap()["execution_outcome"], "unknown");

    // Pruning on either node removes what was last heard of before the
    // retention, the pages with it.
    let month_ago = capstan::store::now_ms() - 31 * 86_400_000;
    sqlx::query("UPDATE command_output SET seen_at = $1").bind(month_ago).execute(&b.db.pool).await.unwrap();
    let removed = b.caps.runtime().prune_command_output(Duration::from_secs(30 * 86_400)).await;
    assert!(removed >= 1, "{removed}");
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM command_output_page").fetch_one(&b.db.pool).await.unwrap();
    assert_eq!(left, 0);
    let status = json!({"action": "status", "handle": handle});
    let gone = call(&b, &reader, "system.command-output", status).await;
    assert_eq!(gone.error.unwrap().kind, "not-found");
}
