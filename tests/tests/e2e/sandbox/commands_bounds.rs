//! Operator commands stay inside their bounds, with real programs: a
//! descendant that starts a session of its own (out of the command's
//! process group) and keeps the output pipe open is stopped with the
//! command — at its timeout, at a cancel, or when the command exits by
//! itself — and the call ends when the command does, not when that
//! descendant lets go of the pipe; what the host adopts of a command's
//! orphans leaves no zombie; another command keeps running. And a read
//! component listing the `command-output` root sees only the archives of
//! its own caller's commands.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::pipeline::{Capabilities, Invocation, Origin};
use capstan::runtime::{Actor, CallOutcome, EffectClass, Grant, Status};
use capstan::store::Db;
use capstan_tests::components;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use serde_json::{Value, json};

use super::commands::{command, processes_with, until};

struct Env {
    _host: TestHost,
    caps: Arc<Capabilities>,
    data: std::path::PathBuf,
}

/// A host with the probe component and these commands: `escape <n>`
/// leaves `sleep <n>` in a session of its own holding the output, prints
/// `started` and sleeps `<n>` itself; `leave <n>` does the same with a
/// `sleep <n>` its parent already left (`setsid -f`), prints `left` and
/// exits 0; `sleep <n>`; `hello`.
async fn env() -> Env {
    let mut host = TestHost::new();
    let mut escape = command("/bin/sh", &["-c", "setsid sleep \"$1\" & echo started; sleep \"$1\"", "sh"]);
    escape.append = vec!["[0-9]+".into()];
    let mut leave = command("/bin/sh", &["-c", "setsid -f sleep \"$1\"; echo left", "sh"]);
    leave.append = vec!["[0-9]+".into()];
    let mut sleep = command("/bin/sleep", &[]);
    sleep.append = vec!["[0-9]+".into()];
    host.config.commands.insert("escape".into(), escape);
    host.config.commands.insert("leave".into(), leave);
    host.config.commands.insert("sleep".into(), sleep);
    host.config.commands.insert("hello".into(), command("/bin/sh", &["-c", "echo hello"]));
    host.drop_plugin(components::PROBE, "probe.wasm");
    let data = host.config.data_dir();
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db, capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    app.services().ledger.heartbeat().await.unwrap();
    Env { _host: host, caps, data }
}

fn operator(principal: &str) -> Origin {
    Origin { principal: principal.into(), ..Origin::cli(EffectClass::Execute) }
}

async fn call(env: &Env, origin: &Origin, id: &str, input: Value) -> Invocation {
    env.caps.invoke(origin, id, &input).await.unwrap()
}

/// Children of this process (the host) that ended and were never reaped.
fn zombie_children() -> usize {
    let me = std::process::id().to_string();
    let mut n = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 2..]) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        n += usize::from(fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str()));
    }
    n
}

#[tokio::test(flavor = "multi_thread")]
async fn a_descendant_in_a_session_of_its_own_is_stopped_with_its_command_and_holds_up_nothing() {
    let env = env().await;
    let me = operator("cli:operator");
    // Counted from what is there before, so a run stopped halfway that
    // left these behind does not decide the next.
    let before = |n: u32| processes_with(&format!("sleep {n}"));
    let (escaped, left_behind, cancelled_ones) = (before(3151), before(3152), before(3153));
    let others = processes_with("/bin/sleep 3154");
    // Another command, running all along: nothing here may touch it.
    let other =
        call(&env, &me, "system.command", json!({"action": "start", "command": "sleep", "args": ["3154"]})).await;
    assert_eq!(other.status, Status::Succeeded, "{:?}", other.error);
    until("the other command runs", || processes_with("/bin/sleep 3154") == others + 1).await;

    // Out of time after 2 s: the call ends then, though the escaped sleep
    // held the pipe, and the escaped sleep is stopped too.
    let at = Instant::now();
    let run = json!({"action": "run", "command": "escape", "args": ["3151"], "timeout_sec": 2});
    let timed_out = call(&env, &me, "system.command", run).await;
    let took = at.elapsed();
    assert_eq!(timed_out.status, Status::Failed, "{:?}", timed_out.error);
    let out = timed_out.output.unwrap();
    assert_eq!(out["execution_outcome"], "killed_after_timeout", "{out}");
    // What it wrote before is kept; the shell may add its own word on the
    // signal that stopped its child ("Terminated"), depending on which of
    // them the signal reached first.
    let written = out["output"].as_str().unwrap_or_default();
    assert!(written.starts_with("started\n"), "what it wrote before is kept: {out}");
    assert!(took < Duration::from_secs(5), "a 2 s timeout ended the call after {took:?}");
    until("the escaped sleep of the timed-out command is gone", || before(3151) == escaped).await;

    // Exiting by itself at once: the call answers at once, and what it left
    // behind (a sleep whose parent already exited) is stopped.
    let at = Instant::now();
    let left = call(&env, &me, "system.command", json!({"action": "run", "command": "leave", "args": ["3152"]})).await;
    let took = at.elapsed();
    assert_eq!(left.status, Status::Succeeded, "{:?}", left.error);
    assert_eq!(left.output.unwrap()["output"], "left\n");
    assert!(took < Duration::from_secs(3), "a command that exited at once held the call for {took:?}");
    until("what the exited command left is gone", || before(3152) == left_behind).await;

    // Started, then cancelled: the escaped sleep goes with it.
    let start = json!({"action": "start", "command": "escape", "args": ["3153"]});
    let started = call(&env, &me, "system.command", start).await.output.unwrap();
    until("both sleeps of the started command run", || before(3153) == cancelled_ones + 2).await;
    let cancel = json!({"action": "cancel", "handle": started["handle"]});
    let cancelled = call(&env, &me, "system.command", cancel).await;
    assert_eq!(cancelled.output.unwrap()["execution_outcome"], "cancelled", "{:?}", cancelled.error);
    until("the cancelled command's escaped sleep is gone", || before(3153) == cancelled_ones).await;

    until("no orphan the host adopted is left a zombie", || zombie_children() == 0).await;
    assert_eq!(processes_with("/bin/sleep 3154"), others + 1, "the other command was left alone");
    let stop = json!({"action": "cancel", "handle": other.output.unwrap()["handle"]});
    call(&env, &me, "system.command", stop).await;
    until("the other command is stopped at last", || processes_with("/bin/sleep 3154") == others).await;
}

/// What the probe component answers for `input` in a read call made by
/// `principal`: `Ok(output)` or `Err(kind)`.
async fn probe(env: &Env, principal: &str, input: Value) -> Result<Value, String> {
    let mut grant = Grant::new(Actor::Cli, EffectClass::Read);
    grant.principal = principal.into();
    let report = env.caps.runtime().call("test.probe", &input.to_string(), grant).await.unwrap();
    match report.outcome {
        CallOutcome::Succeeded { output } => Ok(output["result"].clone()),
        CallOutcome::Failed { failure } => Err(failure.kind),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_of_the_command_output_root_sees_only_its_own_callers_archives() {
    let env = env().await;
    let mut archives = Vec::new();
    for who in ["cli:alice", "cli:bob"] {
        let ran = call(&env, &operator(who), "system.command", json!({"action": "run", "command": "hello"})).await;
        assert_eq!(ran.status, Status::Succeeded, "{:?}", ran.error);
        archives.push(ran.output.unwrap()["output_file"].as_str().unwrap().to_string());
    }
    // A file in the root that is no command's archive is everyone's to see.
    std::fs::write(env.data.join("command-output/notes.txt"), "shared").unwrap();
    let list = json!({"action": "list", "root": "command-output", "path": "", "limit": 100});

    let (alice, bob) = (&archives[0], &archives[1]);
    assert_eq!(probe(&env, "cli:alice", list.clone()).await, Ok(json!([alice, "notes.txt"])));
    assert_eq!(probe(&env, "cli:bob", list.clone()).await, Ok(json!([bob, "notes.txt"])));
    assert_eq!(probe(&env, "cli:carol", list).await, Ok(json!(["notes.txt"])), "nobody else's either");
    let one = json!({"action": "list", "root": "command-output", "path": ".", "limit": 1});
    assert_eq!(probe(&env, "cli:bob", one).await, Ok(json!([bob])), "others' archives take no place in the limit");

    // Named outright, another's archive is not there.
    for action in ["stat", "sha256"] {
        let bobs = json!({"action": action, "root": "command-output", "path": bob});
        assert_eq!(probe(&env, "cli:alice", bobs.clone()).await, Err("not-found".into()), "{action}");
        assert!(probe(&env, "cli:bob", bobs).await.is_ok(), "{action} of one's own");
    }
    let hidden = json!({"action": "stat", "root": "command-output", "path": format!("./{bob}")});
    assert_eq!(probe(&env, "cli:alice", hidden).await, Err("not-found".into()), "however it is spelled");
}
