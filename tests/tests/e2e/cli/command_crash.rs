//! A host that dies while an operator command runs, with the real binary:
//! the command's group outlives the killed server only until the next one
//! starts, which stops it; the call's receipt becomes `unknown` (its end
//! cannot be confirmed, and `system.command` is never replayed); what the
//! command wrote before is kept in its archive.

use std::time::{Duration, Instant};

use capstan::ledger::LedgerStatus;
use capstan::store::Db;
use capstan_tests::api::Api;
use capstan_tests::binary::Serving;
use serde_json::json;

use crate::cli::paths::workdir;
use crate::sandbox::commands::processes_with;

async fn until(what: &str, limit: Duration, cond: impl AsyncFn() -> bool) {
    let started = Instant::now();
    while !cond().await {
        assert!(started.elapsed() < limit, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_the_dead_host_left_is_stopped_by_the_next_and_its_receipt_is_unknown() {
    let dir = workdir();
    let data = dir.path().join("data");
    let config = dir.path().join("capstan.toml");
    std::fs::write(
        &config,
        "[commands.slow]\nprogram = \"/bin/sh\"\n\
         args = [\"-c\", \"echo started; trap '' TERM; sleep 3143 & sleep 3143 & wait\"]\n\
         timeout_sec = 600\n[limits]\ndeadline_ms = 600000\n",
    )
    .unwrap();
    let env = [("CAPSTAN_CONFIG", config.to_str().unwrap())];
    let db = Db::open(&Db::default_url(&data)).await.unwrap();
    let server = Serving::start(dir.path(), &data, &env).await;
    let admin = Api::new(&server.base()).signed_in(&db, "admin").await;
    let running = tokio::spawn(async move {
        admin.post("/capabilities/system.command/invoke", json!({"input": {"action": "run", "command": "slow"}})).await
    });
    until("the command runs", Duration::from_secs(60), async || processes_with("sleep 3143") == 2).await;
    let archive = data.join("command-output");
    let wrote = || {
        std::fs::read_dir(&archive)
            .unwrap()
            .flatten()
            .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t == "started\n"))
    };
    until("it wrote its first line", Duration::from_secs(30), async || wrote()).await;

    // The host dies mid-call; its command does not die with it.
    drop(server);
    let _ = running.await;
    assert_eq!(processes_with("sleep 3143"), 2, "the dead host's command is left running");

    // The next host stops it, and the call it was made in is unknown.
    let server = Serving::start(dir.path(), &data, &env).await;
    until("the next host stopped it", Duration::from_secs(30), async || processes_with("sleep 3143") == 0).await;
    let receipt = || async {
        let rows = capstan::ledger::by_capability(&db, "system.command").await.unwrap();
        rows.len() == 1 && rows[0].status == LedgerStatus::Unknown
    };
    until("its receipt became unknown", Duration::from_secs(120), receipt).await;
    assert!(wrote(), "what it wrote is kept");
    assert!(server.log().contains("a host that died"), "{}", server.log());
}
