//! Operator commands with real programs, through the one invoke path:
//! `system.command` runs only what `[commands.<name>]` names, with the
//! arguments, environment and folder it allows (anything else refused
//! before the call is claimed); its status is how the process ended — a
//! non-zero exit and a timeout are `failed`, with the output kept; a
//! flood of output is previewed and archived whole; cancelling, the owner
//! ending or the call passing its deadline stops the whole process group,
//! a process that ignores SIGTERM included; every start and cancel is in
//! the audit log without a value; and a reader sees a started command's
//! output but cannot start one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::config::{CommandConfig, CommandCwd};
use capstan::pipeline::{Capabilities, Invocation, Origin};
use capstan::runtime::{Actor, EffectClass, Status};
use capstan::store::Db;
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use serde_json::{Value, json};

pub(crate) struct Env {
    pub(crate) _host: TestHost,
    pub(crate) app: Arc<capstan::app::App>,
    pub(crate) caps: Arc<Capabilities>,
    pub(crate) svc: capstan::pipeline::Services,
    pub(crate) db: Db,
    media: PathBuf,
    data: PathBuf,
}

pub(crate) fn command(program: &str, args: &[&str]) -> CommandConfig {
    let mut c: CommandConfig = toml_command(&format!("program = {program:?}"));
    c.args = args.iter().map(|a| a.to_string()).collect();
    c
}

/// A command table as an operator writes it (defaults filled in).
fn toml_command(body: &str) -> CommandConfig {
    #[derive(serde::Deserialize)]
    struct One {
        c: CommandConfig,
    }
    let one: One = toml::from_str(&format!("[c]\n{body}\n")).unwrap();
    one.c
}

/// A host with commands configured: `hello`, `fail`, `chatty` (a line,
/// two seconds, a line), `sleep <n>`, `flood`
/// (20 MB), `where` (env and folder) and `stubborn` (ignores SIGTERM, as
/// do the two `sleep <marker>` it leaves; suites running at once use
/// different markers).
pub(crate) async fn env(marker: u32) -> Env {
    env_with(marker, |_| {}).await
}

/// [`env`], with `adjust` changing the configuration before the host starts.
async fn env_with(marker: u32, adjust: impl FnOnce(&mut capstan::config::Config)) -> Env {
    let host = TestHost::new();
    let url = fresh_url(Backend::Sqlite, host.dir.path()).await;
    env_over(host, &url, marker, adjust).await
}

/// [`env_with`] for `host`, over the database at `url`.
pub(crate) async fn env_over(
    mut host: TestHost,
    url: &str,
    marker: u32,
    adjust: impl FnOnce(&mut capstan::config::Config),
) -> Env {
    let media = host.dir.path().join("media");
    std::fs::create_dir_all(media.join("movies")).unwrap();
    host.config.roots.insert("media".into(), media.clone());
    let mut commands = BTreeMap::new();
    commands.insert("hello".to_string(), command("/bin/sh", &["-c", "echo hello"]));
    commands.insert("fail".to_string(), command("/bin/sh", &["-c", "echo about to fail; exit 3"]));
    commands.insert("chatty".to_string(), command("/bin/sh", &["-c", "echo first; sleep 2; echo second"]));
    let mut sleep = command("/bin/sleep", &[]);
    sleep.append = vec!["[0-9]+".into()];
    commands.insert("sleep".to_string(), sleep);
    commands.insert("flood".to_string(), command("/bin/sh", &["-c", "head -c 20000000 /dev/zero | tr '\\0' x"]));
    let mut where_am_i = command("/bin/sh", &["-c", "printf '%s|%s' \"$GREETING\" \"$(pwd)\""]);
    where_am_i.env = vec!["GREETING".into()];
    where_am_i.cwd = Some(CommandCwd { root: "media".into(), path: String::new() });
    commands.insert("where".to_string(), where_am_i);
    // Ignores SIGTERM, as do the children it leaves behind.
    let script = format!("trap '' TERM; sleep {marker} & sleep {marker} & wait");
    let mut stubborn = command("/bin/sh", &["-c", &script]);
    stubborn.kill_grace_sec = 1;
    commands.insert("stubborn".to_string(), stubborn);
    host.config.commands = commands;
    adjust(&mut host.config);
    let data = host.config.data_dir();
    let db = Db::open(url).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let caps = app.caps().clone();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();
    Env { _host: host, app, caps, svc, db, media, data }
}

fn operator() -> Origin {
    Origin::cli(EffectClass::Execute)
}

pub(crate) async fn call(env: &Env, origin: &Origin, id: &str, input: Value) -> Invocation {
    env.caps.invoke(origin, id, &input).await.unwrap()
}

async fn receipts(env: &Env) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM capability_invocation").fetch_one(&env.db.pool).await.unwrap()
}

/// Processes whose command line is `argv`, words separated by spaces.
pub(crate) fn processes_with(argv: &str) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).trim_end_matches('\0').replace('\0', " ") == argv
        {
            n += 1;
        }
    }
    n
}

pub(crate) async fn until(what: &str, cond: impl Fn() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < Duration::from_secs(30), "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_report_how_they_ended_and_refuse_what_the_operator_did_not_allow() {
    let env = env(3141).await;
    let run = |name: &str| json!({"action": "run", "command": name});

    let hello = call(&env, &operator(), "system.command", run("hello")).await;
    assert_eq!(hello.status, Status::Succeeded, "{:?}", hello.error);
    let out = hello.output.unwrap();
    assert_eq!((out["status"].as_str(), out["exit_code"].as_i64()), (Some("succeeded"), Some(0)));
    assert_eq!(out["output"], "hello\n");

    // A non-zero exit is a failure, whatever was printed; the output stays.
    let failed = call(&env, &operator(), "system.command", run("fail")).await;
    assert_eq!(failed.status, Status::Failed);
    assert!(failed.error.as_ref().unwrap().message.contains("exited with code 3"), "{:?}", failed.error);
    let out = failed.output.unwrap();
    assert_eq!((out["execution_outcome"].as_str(), out["exit_code"].as_i64()), (Some("exited"), Some(3)));
    assert_eq!(out["output"], "about to fail\n");

    // Out of time: stopped, failed, and it says stopping undoes nothing.
    let slow = json!({"action": "run", "command": "sleep", "args": ["30"], "timeout_sec": 1});
    let timed_out = call(&env, &operator(), "system.command", slow).await;
    assert_eq!(timed_out.status, Status::Failed);
    let out = timed_out.output.unwrap();
    assert_eq!(
        (out["execution_outcome"].as_str(), out["timed_out"].as_bool()),
        (Some("killed_after_timeout"), Some(true))
    );
    assert!(out["note"].as_str().unwrap().contains("does not undo"), "{out}");

    // 20 MB: a preview in the result, the whole of it in the archive.
    let flood = call(&env, &operator(), "system.command", run("flood")).await;
    assert_eq!(flood.status, Status::Succeeded, "{:?}", flood.error);
    let out = flood.output.unwrap();
    assert_eq!(out["output_bytes"], 20_000_000);
    assert!(out["output"].as_str().unwrap().len() < 17_000, "a preview, not the output");
    let archived = env.data.join("command-output").join(out["output_file"].as_str().unwrap());
    assert_eq!(std::fs::metadata(&archived).unwrap().len(), 20_000_000);
    let page = json!({"action": "read", "handle": out["handle"], "offset": 19_999_990, "limit": 100});
    let read = call(&env, &operator(), "system.command-output", page).await;
    assert_eq!(read.output.as_ref().unwrap()["text"], "xxxxxxxxxx", "{:?}", read.error);
    // Archives go with age, as receipts do.
    let month_ago = std::time::SystemTime::now() - Duration::from_secs(31 * 86_400);
    std::fs::File::options().write(true).open(&archived).unwrap().set_modified(month_ago).unwrap();
    assert_eq!(env.caps.runtime().prune_command_output(Duration::from_secs(30 * 86_400)).await, 1);
    assert!(!archived.exists());

    // The environment and the folder the operator allows, and only those.
    std::fs::create_dir_all(env.media.join("movies/dune")).unwrap();
    let here = json!({"action": "run", "command": "where", "env": {"GREETING": "hi"}, "cwd": "movies/dune"});
    let out = call(&env, &operator(), "system.command", here).await.output.unwrap();
    let expected = format!("hi|{}", env.media.join("movies/dune").canonicalize().unwrap().display());
    assert_eq!(out["output"], expected.as_str());

    // Refused before anything is claimed: nothing runs, no receipt.
    std::os::unix::fs::symlink("/etc", env.media.join("etc")).unwrap();
    let before = receipts(&env).await;
    for (input, kind) in [
        (run("rm"), "not-found"),
        (json!({"action": "run", "command": "sleep", "args": ["1; reboot"]}), "invalid-input"),
        (json!({"action": "run", "command": "sleep", "args": ["1", "2"]}), "invalid-input"),
        (json!({"action": "run", "command": "hello", "args": ["x"]}), "invalid-input"),
        (json!({"action": "run", "command": "where", "env": {"LD_PRELOAD": "/tmp/x.so"}}), "invalid-input"),
        (json!({"action": "run", "command": "where", "cwd": "../"}), "invalid-input"),
        (json!({"action": "run", "command": "where", "cwd": "etc"}), "invalid-input"),
    ] {
        let refused = call(&env, &operator(), "system.command", input.clone()).await;
        assert_eq!(refused.status, Status::Failed, "{input}");
        assert_eq!(refused.error.as_ref().unwrap().kind, kind, "{input}: {:?}", refused.error);
    }
    assert_eq!(receipts(&env).await, before, "no refused call left a receipt");

    // The audit log has every start — name and counts, never a value —
    // and nothing of the refused ones; its chain holds.
    let rows = env.app.audit().list(0, 10_000).await.unwrap();
    let starts: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.event.action == "command.start")
        .map(|r| (r.event.subject.as_str(), r.event.input_summary.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        starts,
        [
            ("hello", "args:0,env:0"),
            ("fail", "args:0,env:0"),
            ("sleep", "args:1,env:0"),
            ("flood", "args:0,env:0"),
            ("where", "args:0,env:1")
        ]
    );
    let text = serde_json::to_string(&rows).unwrap();
    assert!(!text.contains("\"hi\"") && !text.contains("GREETING") && !text.contains("movies/dune"), "{text}");
    assert!(matches!(env.app.audit().verify().await.unwrap(), capstan::audit::Verdict::Intact { .. }));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_or_the_owner_ending_stops_the_whole_group_even_what_ignores_sigterm() {
    let env = env(3141).await;
    let start = json!({"action": "start", "command": "stubborn"});
    let started = call(&env, &operator(), "system.command", start.clone()).await;
    assert_eq!(started.status, Status::Succeeded, "{:?}", started.error);
    let handle = started.output.unwrap()["handle"].as_str().unwrap().to_string();
    until("the children started", || processes_with("sleep 3141") == 2).await;

    let cancelled = call(&env, &operator(), "system.command", json!({"action": "cancel", "handle": handle})).await;
    assert_eq!(cancelled.status, Status::Succeeded, "the cancel did what it was asked: {:?}", cancelled.error);
    let out = cancelled.output.unwrap();
    assert_eq!((out["execution_outcome"].as_str(), out["status"].as_str()), (Some("cancelled"), Some("failed")));
    until("nothing of its group is left", || processes_with("sleep 3141") == 0).await;
    let rows = env.app.audit().list(0, 10_000).await.unwrap();
    assert!(rows.iter().any(|r| r.event.action == "command.cancel" && r.event.subject == "stubborn"), "{rows:?}");

    // Started again, then its owner ends: stopped the same way.
    let again = call(&env, &operator(), "system.command", start).await.output.unwrap();
    until("the children started again", || processes_with("sleep 3141") == 2).await;
    let owner = format!("principal:{}", operator().principal);
    assert_eq!(env.caps.runtime().stop_commands_of(&owner), 1);
    until("the owner's processes are gone", || processes_with("sleep 3141") == 0).await;
    let status = json!({"action": "wait", "handle": again["handle"], "timeout_ms": 20_000});
    let waited = call(&env, &operator(), "system.command-output", status).await;
    assert_eq!(waited.output.unwrap()["execution_outcome"], "cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subagent_reads_what_its_run_started_and_starts_nothing() {
    let env = env(3141).await;
    capstan_tests::grants::allow_everything(&env.svc).await;
    let agent = |actor: Actor, run: &str| Origin {
        actor,
        principal: format!("{}:{run}", if actor == Actor::Subagent { "subagent" } else { "agent" }),
        run_id: Some(run.to_string()),
        ..operator()
    };
    let started =
        call(&env, &agent(Actor::Agent, "r1"), "system.command", json!({"action": "start", "command": "hello"})).await;
    assert_eq!(started.status, Status::Succeeded, "{:?}", started.error);
    let handle = started.output.unwrap()["handle"].clone();

    let watch = json!({"action": "wait", "handle": handle, "timeout_ms": 20_000});
    let seen = call(&env, &agent(Actor::Subagent, "r1"), "system.command-output", watch.clone()).await;
    assert_eq!(seen.status, Status::Succeeded, "{:?}", seen.error);
    assert_eq!(seen.output.unwrap()["output"], "hello\n");
    let other = call(&env, &agent(Actor::Subagent, "r2"), "system.command-output", watch).await;
    assert_eq!(other.error.unwrap().kind, "not-found", "another run's process is not there");
    let refused =
        call(&env, &agent(Actor::Subagent, "r1"), "system.command", json!({"action": "start", "command": "hello"}))
            .await;
    assert_eq!(refused.error.unwrap().kind, "denied", "a subagent starts nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_past_its_deadline_stops_the_group_and_its_outcome_is_unknown() {
    let env = env_with(3146, |config| {
        let limits = capstan::config::CapabilityConfig { deadline_ms: Some(1500), ..Default::default() };
        config.capabilities.insert("system.command".into(), limits);
    })
    .await;
    let call_at = Instant::now();
    let cut = call(&env, &operator(), "system.command", json!({"action": "run", "command": "stubborn"})).await;
    assert_eq!(cut.status, Status::Unknown, "it may have done its work: {:?}", cut.error);
    assert!(call_at.elapsed() < Duration::from_secs(20), "the call ended at its deadline, not the command's timeout");
    until("nothing of its group is left", || processes_with("sleep 3146") == 0).await;
    let rows = capstan::ledger::by_capability(&env.db, "system.command").await.unwrap();
    assert_eq!(rows[0].status, capstan::ledger::LedgerStatus::Unknown, "{rows:?}");
}

/// The `[commands]` tables of docs/commands.md's example configuration.
fn documented_commands() -> BTreeMap<String, CommandConfig> {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/commands.md")).unwrap();
    let block = page.split("```toml\n").nth(1).and_then(|b| b.split("```").next()).unwrap();
    #[derive(serde::Deserialize)]
    struct Example {
        commands: BTreeMap<String, CommandConfig>,
    }
    toml::from_str::<Example>(block).unwrap().commands
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_example_runs_df_and_lets_through_only_what_ffprobe_allows() {
    let documented = documented_commands();
    let ffprobe = &documented["ffprobe"];
    let allowed = ffprobe.append_patterns();
    assert!(allowed[0].is_match("Dune (2021)/Dune.2021.2160p.mkv"));
    for refused in ["-f", "/etc/passwd", "a/../../etc/passwd", "a/..", ".hidden", "a\nb", "a//b"] {
        assert!(!allowed[0].is_match(refused), "{refused:?}");
    }
    let env = env_with(3144, |config| {
        let mut df = documented["df"].clone();
        // The documented disk, on this machine.
        df.args = vec!["-h".into(), config.data_dir().display().to_string()];
        config.commands.insert("df".into(), df);
    })
    .await;
    let df = call(&env, &operator(), "system.command", json!({"action": "run", "command": "df"})).await;
    assert_eq!(df.status, Status::Succeeded, "{:?}", df.error);
    assert!(df.output.unwrap()["output"].as_str().unwrap().contains("Avail"));
    let extra =
        call(&env, &operator(), "system.command", json!({"action": "run", "command": "df", "args": ["/"]})).await;
    assert_eq!(extra.error.unwrap().kind, "invalid-input", "nothing may be appended to df");
}
