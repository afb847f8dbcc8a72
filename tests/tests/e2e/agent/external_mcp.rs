//! An external MCP server's tools as capabilities, against a server nobody
//! here wrote: `tests/mcp/server.py`, built with the protocol's Python SDK
//! (PyPI `mcp`, installed by `scripts/setup.sh --tests`). The host links to
//! it with the operator's bearer token and offers its tools as
//! `mcp.notes.<tool>`, classed as the operator said — `execute` for a tool
//! that claims to be read-only but is not named — so a subagent reaches
//! only the read one and the server never hears the rest. A call is one
//! invoke like any other: the server's `isError` is `failed` with its
//! words, input the schema refuses is never sent, a call the server sits
//! on past the deadline is `unknown` and not repeated, an answer past the
//! result cap is refused (the link opens a new session) and a large one is paged to the model with
//! `read_tool_result`. The token is nowhere the host records. The
//! Services page shows the server's state and tools and tests it, and
//! sets up, tests and forgets another one. When the
//! server rewrites a tool and adds another mid-session, both are held —
//! offered to nobody — until the operator accepts each.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::config::McpServerConfig;
use capstan::pipeline::{Capabilities, Invocation, Origin};
use capstan::runtime::{Actor, EffectClass, Status};
use capstan::store::Db;
use capstan::tasks::{Tasks, Worker, WorkerConfig};
use capstan_tests::api::{Api, serve};
use capstan_tests::db::{Backend, fresh_url};
use capstan_tests::host::TestHost;
use serde_json::{Value, json};

use super::runs::{ended, set, wait_run};

pub(crate) const TOKEN: &str = "notes-token-8d1f2c";

/// The Python server on a free loopback port, answering.
pub(crate) async fn start_server(dir: &Path) -> (tokio::process::Child, String, PathBuf) {
    let python = capstan_tests::host::target_dir().join("test-tools/mcp/bin/python");
    assert!(python.exists(), "{} is missing: run scripts/setup.sh --tests", python.display());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let calls = dir.join("calls.jsonl");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp/server.py");
    let child = tokio::process::Command::new(python)
        .args([script, &port.to_string(), TOKEN, calls.to_str().unwrap()])
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(60), "the MCP server did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (child, format!("http://127.0.0.1:{port}/mcp"), calls)
}

/// The tools the server was called with, in order.
fn calls_seen(calls: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(calls).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["tool"].as_str().unwrap().to_string()).collect()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { files.extend(files_under(&path)) } else { files.push(path) }
    }
    files
}

async fn until(what: &str, cond: impl Fn() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < Duration::from_secs(60), "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn call(caps: &Capabilities, origin: &Origin, id: &str, input: Value) -> Invocation {
    caps.invoke(origin, id, &input).await.unwrap()
}

fn subagent() -> Origin {
    Origin { actor: Actor::Subagent, principal: "subagent:r1".into(), run_id: Some("r1".into()), ..operator() }
}

fn operator() -> Origin {
    Origin::cli(EffectClass::Execute)
}

const SCRIPT: &str = r#"{"scripts": [
  {"match": ["notes"], "steps": [
     {"tools": [{"name": "mcp.notes.huge", "input": {"kb": 200}}]},
     {"tools": [{"name": "read_tool_result", "input": {"result_id": "{{mcp.notes.huge.result_id}}", "offset": 150000}}]}],
   "finalText": "From 150000 on it says {{read_tool_result.text}}"}
]}"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_external_mcp_servers_tools_are_capabilities_under_the_hosts_authority() {
    let mut host = TestHost::new();
    let (_server, url, calls) = start_server(host.dir.path()).await;
    let notes: McpServerConfig = toml::from_str(&format!(
        r#"url = "{url}"
           auth = {{ kind = "header", name = "Authorization", prefix = "Bearer ", value = "{TOKEN}" }}
           classes = {{ lookup = "read", huge = "read" }}
           timeout_ms = 3000
           refresh_sec = 1"#
    ))
    .unwrap();
    host.config.mcp.servers.insert("notes".into(), notes);
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let runtime = app.caps().runtime().clone();
    let caps = app.caps().clone();
    let svc = app.services().clone();
    svc.ledger.heartbeat().await.unwrap();

    // Discovery: every tool, as the class the operator gave it.
    until("the server's tools are offered", || runtime.snapshot().get("mcp.notes.change").is_some()).await;
    let snapshot = runtime.snapshot();
    for tool in ["lookup", "add", "fail", "hang", "huge", "change"] {
        assert!(snapshot.get(&format!("mcp.notes.{tool}")).is_some(), "mcp.notes.{tool} is not offered");
    }
    assert_eq!(snapshot.get("mcp.notes.lookup").unwrap().descriptor.label, EffectClass::Read);
    let add = snapshot.get("mcp.notes.add").unwrap();
    assert_eq!(add.descriptor.label, EffectClass::Execute, "its readOnlyHint is a claim, not a class");
    assert!(add.descriptor.description.contains("claims readOnlyHint: true"), "{}", add.descriptor.description);
    assert!(add.descriptor.description.contains("in the server's words"), "{}", add.descriptor.description);
    let status = &app.external_tools().statuses()[0];
    assert_eq!((status.state, status.tools), ("connected", 6), "{status:?}");

    // The Services page: the server's state and tools, and a Test that
    // connects afresh and says what the host would offer, as what.
    let base = serve(app.clone()).await;
    let admin = Api::new(&base).signed_in(&db, "admin").await;
    let setup = admin.json("/setup").await;
    let server = &setup["mcpServers"][0];
    assert_eq!(
        (&server["status"]["name"], &server["status"]["state"]),
        (&json!("notes"), &json!("connected")),
        "{setup}"
    );
    assert!(
        server["offered"].as_array().unwrap().contains(&json!({
            "id": "mcp.notes.lookup", "class": "read", "summary": "Reads the note stored under KEY. (MCP server notes)"
        })),
        "{server}"
    );
    let (code, tested) = admin.post("/setup/mcp/notes/test", json!(null)).await;
    assert_eq!((code, &tested["ok"]), (200, &json!(true)), "{tested}");
    let found = tested["found"].as_str().unwrap();
    assert!(found.contains("mcp.notes.lookup (read)") && found.contains("mcp.notes.add (execute)"), "{found}");
    assert_eq!(admin.post("/setup/mcp/nowhere/test", json!(null)).await.0, 404);
    set_up_in_the_console(&admin, &runtime, &url).await;

    // A read: the server's answer is the output.
    let looked = call(&caps, &operator(), "mcp.notes.lookup", json!({"key": "dune"})).await;
    assert_eq!(looked.status, Status::Succeeded, "{:?}", looked.error);
    // The SDK answers a `str` as structured content, `{"result": ...}`.
    assert_eq!(looked.output.unwrap()["result"], "Dune: Part Two (2024), wanted in 2160p");

    // A subagent reaches the read only; the server never hears the rest.
    let read = call(&caps, &subagent(), "mcp.notes.lookup", json!({"key": "dune"})).await;
    assert_eq!(read.status, Status::Succeeded, "{:?}", read.error);
    let refused = call(&caps, &subagent(), "mcp.notes.add", json!({"key": "k", "text": "sub"})).await;
    assert_eq!(refused.status, Status::Failed);
    assert_eq!(refused.error.as_ref().unwrap().kind, "denied", "{:?}", refused.error);
    assert!(!calls_seen(&calls).contains(&"add".to_string()), "a subagent's call reached the server");

    // The operator's execute call runs once, recorded.
    let added = call(&caps, &operator(), "mcp.notes.add", json!({"key": "k", "text": "from the operator"})).await;
    assert_eq!(added.status, Status::Succeeded, "{:?}", added.error);
    assert!(added.invocation_id.is_some(), "an execute call has a ledger row");

    // isError: failed, in the server's words, nothing uncertain.
    let failed = call(&caps, &operator(), "mcp.notes.fail", json!({"reason": "the disk is full"})).await;
    assert_eq!(failed.status, Status::Failed);
    let error = failed.error.unwrap();
    assert!(
        error.message.contains("the tool reported an error") && error.message.contains("the disk is full"),
        "{error:?}"
    );

    // Input the schema refuses is never sent.
    let before = calls_seen(&calls).len();
    let bad = call(&caps, &operator(), "mcp.notes.add", json!({"key": 3})).await;
    assert_eq!((bad.status, bad.error.unwrap().kind.as_str()), (Status::Failed, "invalid-input"));
    assert_eq!(calls_seen(&calls).len(), before, "refused input reached the server");

    // A server that sits on a call past the deadline: unknown, and not
    // called again.
    let hung = call(&caps, &operator(), "mcp.notes.hang", json!({"seconds": 30})).await;
    assert_eq!(hung.status, Status::Unknown, "{:?}", hung.error);
    let rows = capstan::ledger::by_capability(&db, "mcp.notes.hang").await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, capstan::ledger::LedgerStatus::Unknown);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(calls_seen(&calls).iter().filter(|c| *c == "hang").count(), 1, "an uncertain call was repeated");

    // An answer past the result cap is refused; a large one is paged to
    // the model.
    let flood = call(&caps, &operator(), "mcp.notes.huge", json!({"kb": 2048})).await;
    assert_eq!(flood.status, Status::Failed);
    let error = flood.error.unwrap();
    assert!(error.message.contains("result cap"), "{error:?}");
    // The session it ended is opened again.
    let started = Instant::now();
    while call(&caps, &operator(), "mcp.notes.lookup", json!({"key": "dune"})).await.status != Status::Succeeded {
        assert!(started.elapsed() < Duration::from_secs(60), "the link did not come back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    paged_to_a_model(&app, &db, &base).await;

    // The token is in no record the host keeps: not in the database (its
    // write-ahead log included), the data folder or a descriptor.
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&db.pool).await.unwrap();
    for file in files_under(host.dir.path()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(!bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()), "the token is in {}", file.display());
    }
    assert!(runtime.snapshot().active.values().all(|l| !l.descriptor.description.contains(TOKEN)));

    // Mid-session the server rewrites `add` and adds `wipe`: both are held,
    // offered to nobody, until the operator accepts each.
    let changed = call(&caps, &operator(), "mcp.notes.change", json!({})).await;
    assert_eq!(changed.status, Status::Succeeded, "{:?}", changed.error);
    until("the changed tools are held", || {
        let s = runtime.snapshot();
        s.held.contains_key("mcp.notes.add") && s.held.contains_key("mcp.notes.wipe")
    })
    .await;
    let snapshot = runtime.snapshot();
    assert!(snapshot.get("mcp.notes.add").is_none() && snapshot.get("mcp.notes.wipe").is_none());
    assert!(
        snapshot.held["mcp.notes.add"].reason.contains("changed this tool"),
        "{}",
        snapshot.held["mcp.notes.add"].reason
    );
    assert!(snapshot.held["mcp.notes.wipe"].reason.contains("added this tool"));
    let held = admin.json("/setup").await["mcpServers"][0]["held"].clone();
    assert!(held.as_array().unwrap().iter().any(|h| h["id"] == "mcp.notes.wipe"), "{held}");
    assert!(caps.invoke(&operator(), "mcp.notes.wipe", &json!({})).await.is_err(), "a held tool was called");
    assert!(!calls_seen(&calls).contains(&"wipe".to_string()));
    runtime.accept("mcp.notes.add").await.unwrap();
    runtime.rescan(false).await.unwrap();
    let accepted = runtime.snapshot().get("mcp.notes.add").expect("accepted, it is offered again");
    assert!(accepted.descriptor.description.contains("mails every note to a stranger"));
    assert!(runtime.snapshot().held.contains_key("mcp.notes.wipe"), "accepting one accepts only that one");
}

/// The same server set up on the Services page under another name: tested
/// with the form's values, saved (its token stored, never shown), linked,
/// then forgotten and its tools withdrawn. A name capstan.toml uses is the
/// file's.
async fn set_up_in_the_console(admin: &Api, runtime: &capstan::Runtime, url: &str) {
    let form = json!({"url": url, "token": TOKEN, "classes": {"lookup": "read"}, "tools": ["lookup", "add"]});
    let (code, tested) = admin.post("/setup/mcp/notes-two/test", form.clone()).await;
    assert_eq!((code, &tested["ok"]), (200, &json!(true)), "{tested}");
    assert!(tested["used"].as_str().unwrap().contains("not saved"), "{tested}");
    let wrong = json!({"url": url, "token": "not-the-token"});
    let (_, refused) = admin.post("/setup/mcp/notes-two/test", wrong).await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert_eq!(admin.send(reqwest::Method::PUT, "/setup/mcp/notes", form.clone()).await.0, 409, "the file's");
    let (code, bad) = admin.send(reqwest::Method::PUT, "/setup/mcp/notes-two", json!({"url": "ftp://x/mcp"})).await;
    assert_eq!(code, 422, "{bad}");

    let (code, setup) = admin.send(reqwest::Method::PUT, "/setup/mcp/notes-two", form).await;
    assert_eq!(code, 200, "{setup}");
    assert!(!setup.to_string().contains(TOKEN), "the token is shown: {setup}");
    let server = setup["mcpServers"].as_array().unwrap().iter().find(|s| s["name"] == "notes-two").unwrap().clone();
    assert_eq!((&server["source"], &server["stored"]["tokenSet"]), (&json!("console"), &json!(true)), "{server}");
    until("the console's server is linked", || runtime.snapshot().get("mcp.notes-two.lookup").is_some()).await;
    assert!(runtime.snapshot().get("mcp.notes-two.fail").is_none(), "only the tools it offers");
    let (_, tested) = admin.post("/setup/mcp/notes-two/test", json!(null)).await;
    assert_eq!(tested["ok"], true, "the saved token is used: {tested}");

    let (code, _) = admin.send(reqwest::Method::DELETE, "/setup/mcp/notes-two", json!(null)).await;
    assert_eq!(code, 200);
    until("a forgotten server's tools are withdrawn", || runtime.snapshot().get("mcp.notes-two.lookup").is_none())
        .await;
    assert_eq!(admin.send(reqwest::Method::DELETE, "/setup/mcp/notes-two", json!(null)).await.0, 404);
}

/// An agent run calls the read tool for 200 KB of text and reads on past
/// the preview with `read_tool_result`.
async fn paged_to_a_model(app: &Arc<capstan::app::App>, db: &Db, base: &str) {
    set(app, &[("model.script", json!(SCRIPT))]).await;
    let config = WorkerConfig { poll: Duration::from_millis(50), lease: Duration::from_secs(5), concurrency: 2 };
    let mut worker = Worker::new(Tasks::new(db.clone()), "external-mcp".into(), config);
    let agent = Arc::new(app.new_agent());
    capstan::agent::task::register(&mut worker, &agent);
    // The waker a process runs beside its worker (`App::run`).
    tokio::spawn(capstan::agent::task::wake_due_runs(agent.clone(), Default::default()));
    tokio::spawn(Arc::new(worker).run(std::future::pending()));
    let key = capstan::http::keys::create(db, "runner", &[EffectClass::Execute], "admin:test").await.unwrap();
    let api = Api::new(base).with_key(&key);
    let (status, run) = api.post("/agent/runs", json!({"goal": "read the notes"})).await;
    let id = run["id"].as_str().unwrap_or_else(|| panic!("{status} {run}")).to_string();
    let body = wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    let text = body["run"]["finalText"].as_str().unwrap_or_else(|| panic!("{body}"));
    assert!(text.starts_with("From 150000 on it says xxxx"), "{text}");
}
