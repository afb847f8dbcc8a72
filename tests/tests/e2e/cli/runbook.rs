//! `docs/runbook.md` as an operator follows it: every `sh` block of the
//! page, in order, in one `bash`, against the real binary serving on
//! loopback (a mock TMDB standing in for TMDB's API), with `BASE`,
//! `PASSWORD`, `TMDB_API_KEY`, `TMDB_BASE_URL` and `ANTHROPIC_API_KEY` set
//! as the page says the reader has them, and `capstan` on the `PATH`. Each
//! block's requests must answer 2xx — or, in a block that starts with
//! `# answers NNN`, NNN — and every command must succeed (a block that
//! starts with `# needs …` needs a download client and a drafted plan, and
//! is run by `agent::runbook`, which has them) (the page checks
//! its own steps with `jq -e` and `test`); a block that breaks fails the
//! suite, naming its line. Then what the page says it did is checked
//! through the API: the settings it set, TMDB's connection, the runs with
//! their messages, plans and ends, the decision it answered, the grant it
//! made. The host starts with one published policy (`automation.recover`)
//! for the grant to be bound to, as the page assumes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use capstan::store::Db;
use capstan_tests::api::Api;
use capstan_tests::binary::{Serving, capstan_bin};
use capstan_tests::mock_tmdb::{Catalog, MockTmdb};
use serde_json::{Value, json};

use crate::cli::paths::workdir;

const TMDB_KEY: &str = "runbook-tmdb-v3-key-24c1";
const ANTHROPIC_KEY: &str = "sk-ant-runbook-0123456789";
const PASSWORD: &str = "a long runbook passphrase";

/// One `sh` block of a page: the line its text starts on, the text, and
/// the status its requests must answer (`None`: any 2xx).
#[derive(Debug, Clone)]
struct Block {
    line: usize,
    text: String,
    expect: Option<u16>,
}

/// How a block that needs more than this host has begins.
const NEEDS: &str = "# needs ";

/// The page's `sh` blocks, in order, but those that begin with [`NEEDS`].
fn blocks(page: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in page.lines().enumerate() {
        match open.as_mut() {
            None if line.trim_end() == "```sh" => open = Some(Block { line: i + 2, text: String::new(), expect: None }),
            None => {}
            Some(_) if line.trim_end() == "```" => {
                let mut block = open.take().unwrap();
                // A block that needs what this host does not have (a real
                // download client, a drafted plan) says so on its first
                // line; the suite that has it runs it (`agent::runbook`).
                if block.text.starts_with(NEEDS) {
                    continue;
                }
                block.expect = block
                    .text
                    .lines()
                    .next()
                    .and_then(|first| first.strip_prefix("# answers "))
                    .and_then(|rest| rest.get(..3)?.parse().ok());
                found.push(block);
            }
            Some(block) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
        }
    }
    assert!(open.is_none(), "a block is not closed");
    found
}

/// What one run of a page's blocks printed, block by block.
#[derive(Default)]
struct Printed {
    statuses: BTreeMap<usize, Vec<u16>>,
    output: BTreeMap<usize, String>,
    vars: BTreeMap<String, String>,
    last: Option<usize>,
}

fn parse(stderr: &str, stdout: &str) -> Printed {
    let mut printed = Printed::default();
    let mut at = None;
    for line in stderr.lines() {
        if let Some(n) = line.strip_prefix("runbook-block ") {
            at = n.trim().parse().ok();
            printed.last = at;
        } else if let Some(code) = line.strip_prefix("runbook-status ") {
            printed.statuses.entry(at.unwrap_or(0)).or_default().push(code.trim().parse().unwrap_or(0));
        } else if let Some((name, value)) = line.strip_prefix("runbook-var ").and_then(|v| v.split_once('=')) {
            printed.vars.insert(name.to_string(), value.to_string());
        } else if !line.is_empty() {
            printed.output.entry(at.unwrap_or(0)).or_default().push_str(&format!("stderr: {line}\n"));
        }
    }
    let mut at = None;
    for line in stdout.lines() {
        match line.strip_prefix("runbook-block ") {
            Some(n) => at = n.trim().parse().ok(),
            None => printed.output.entry(at.unwrap_or(0)).or_default().push_str(&format!("{line}\n")),
        }
    }
    printed
}

/// Runs `blocks` in order in one `bash -e -o pipefail` in `cwd` with
/// nothing in its environment but `env`, every request's status noted; answers the values of `keep`
/// afterwards, or what broke: the first block that failed or answered
/// otherwise than it says, with its line, its text and what it printed.
async fn run(
    blocks: &[Block],
    cwd: &Path,
    env: &[(&str, String)],
    keep: &[&str],
) -> Result<BTreeMap<String, String>, String> {
    let mut script = String::from(
        "set -e -o pipefail\n\
         curl() { command curl -q -w '%{stderr}\\nrunbook-status %{http_code}\\n' \"$@\"; }\n",
    );
    for (i, block) in blocks.iter().enumerate() {
        script.push_str(&format!("echo 'runbook-block {i}'; echo 'runbook-block {i}' >&2\n{}", block.text));
    }
    script.push_str("echo 'runbook-block done' >&2\n");
    for name in keep {
        script.push_str(&format!("echo \"runbook-var {name}=${{{name}-}}\" >&2\n"));
    }
    let scratch = tempfile::tempdir().unwrap();
    let (path, out, err) =
        (scratch.path().join("runbook.sh"), scratch.path().join("stdout"), scratch.path().join("stderr"));
    std::fs::write(&path, script).unwrap();
    let mut child = tokio::process::Command::new("bash")
        .arg(&path)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("bash runs the examples");
    // Only a guard against a step that never ends: the page's own waits
    // poll for the state they need.
    let exit = match tokio::time::timeout(Duration::from_secs(600), child.wait()).await {
        Ok(status) => Some(status.unwrap()),
        Err(_) => {
            let _ = child.kill().await;
            None
        }
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let printed = parse(&read(&err), &read(&out));
    let broke = |i: usize, why: String| {
        let block = &blocks[i];
        let said = printed.output.get(&i).map(String::as_str).unwrap_or("");
        format!("docs/runbook.md, the block at line {}: {why}\n{}--- it printed:\n{said}", block.line, block.text)
    };
    if exit.is_none_or(|e| !e.success()) {
        let i = printed.last.unwrap_or(0).min(blocks.len().saturating_sub(1));
        let answered = printed.statuses.get(&i).cloned().unwrap_or_default();
        let why = match exit {
            Some(e) => format!("it exited with {e}; its requests answered {answered:?}"),
            None => format!("it did not end within ten minutes; its requests answered {answered:?}"),
        };
        return Err(broke(i, why));
    }
    for (i, block) in blocks.iter().enumerate() {
        let statuses = printed.statuses.get(&i).cloned().unwrap_or_default();
        if block.text.contains("curl ") && statuses.is_empty() {
            return Err(broke(i, "it made no request".into()));
        }
        let wrong: Vec<u16> = statuses
            .iter()
            .copied()
            .filter(|s| match block.expect {
                Some(expected) => *s != expected,
                None => !(200..300).contains(s),
            })
            .collect();
        if !wrong.is_empty() {
            let expected = block.expect.map_or("2xx".to_string(), |e| e.to_string());
            return Err(broke(i, format!("a request answered {wrong:?} where the page says {expected}")));
        }
    }
    Ok(printed.vars)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_example_fails_naming_its_line() {
    let tmdb = MockTmdb::start("k", Catalog::sample()).await;
    let dir = tempfile::tempdir().unwrap();
    let env = [("TMDB", tmdb.base_url()), ("PATH", std::env::var("PATH").unwrap_or_default())];
    let page = "intro\n\n```sh\nFOUND=$(curl -s \"$TMDB/search/movie?query=Dune\" | jq -r .status_code)\n```\n\n\
                ```sh\n# answers 401: no key\ncurl -s \"$TMDB/search/movie?query=Dune\"\n```\n";
    // Without its key TMDB says 401 where the page promises 2xx.
    let err = run(&blocks(page), dir.path(), &env, &["FOUND"]).await.unwrap_err();
    assert!(err.contains("the block at line 4") && err.contains("answered [401] where the page says 2xx"), "{err}");
    // With it the page holds: the second block says 401 and gets it, and
    // what a block keeps is there after it.
    let fixed = page.replacen("query=Dune\"", "query=Dune&api_key=k\"", 1);
    let vars = run(&blocks(&fixed), dir.path(), &env, &["FOUND"]).await.unwrap();
    assert_eq!(vars["FOUND"], "null");
    // A failing command breaks its block, and the rest is not run.
    let failing = format!("```sh\njq -e '.ok' <<< '{{\"ok\": false}}'\n```\n\n{fixed}");
    let err = run(&blocks(&failing), dir.path(), &env, &[]).await.unwrap_err();
    assert!(err.contains("the block at line 2: it exited with"), "{err}");
}

/// The agent's run `id` as the API answers it.
async fn run_of(api: &Api, id: &str) -> Value {
    api.json(&format!("/agent/runs/{id}")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_runbook_runs_as_written_and_does_what_it_says() {
    let dir = workdir();
    let data = dir.path().join("data");
    let db = Db::open(&Db::default_url(&data)).await.unwrap();
    let authz = capstan::authz::Authz::new(db.clone());
    let draft = authz.draft_policy("automation.recover", &json!({"kind": "automation"}), "admin:admin").await.unwrap();
    authz.publish_policy(&draft.name, draft.revision).await.unwrap();
    let tmdb = MockTmdb::start(TMDB_KEY, Catalog::sample()).await;
    let server = Serving::start(dir.path(), &data, &[]).await;

    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/runbook.md")).unwrap();
    let blocks = blocks(&page);
    assert!(blocks.len() > 15, "only {} blocks", blocks.len());
    let bin = capstan_bin().parent().unwrap().display().to_string();
    let env = [
        ("PATH", format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())),
        ("HOME", dir.path().display().to_string()),
        ("CAPSTAN_DATA_DIR", data.display().to_string()),
        ("BASE", server.base()),
        ("PASSWORD", PASSWORD.into()),
        ("ANTHROPIC_API_KEY", ANTHROPIC_KEY.into()),
        ("TMDB_API_KEY", TMDB_KEY.into()),
        ("TMDB_BASE_URL", tmdb.base_url()),
    ];
    let keep = ["KEY", "RUN", "RUN2", "DECISION", "POLICY"];
    let vars = run(&blocks, dir.path(), &env, &keep).await.unwrap_or_else(|broke| panic!("{broke}"));
    let keyed = Api::new(&server.base()).with_key(&vars["KEY"]);

    // The model: the scripted one from the page's script file, with the
    // limits the page set last; the real model's key kept, encrypted.
    let settings = keyed.json("/settings").await["settings"].clone();
    let script = std::fs::read_to_string(dir.path().join("capstan-script.json")).unwrap();
    assert_eq!(settings["model.provider"], "scripted", "fake is the scripted model");
    assert_eq!(settings["model.script"], script.as_str());
    assert_eq!(
        (settings["agent.max_tool_calls"].as_i64(), settings["agent.max_duration_sec"].as_i64()),
        (Some(20), Some(600))
    );
    assert_eq!(
        (settings["budget.max_runs_per_day"].as_i64(), settings["model.api_key"].clone()),
        (Some(100), json!({"set": true}))
    );
    let stored: String =
        sqlx::query_scalar("SELECT value FROM setting WHERE key = 'model.api_key'").fetch_one(&db.pool).await.unwrap();
    assert!(!stored.contains(ANTHROPIC_KEY), "the key is encrypted at rest");

    // TMDB: stored from the page's metadata, and every request carried the key.
    let setup = keyed.json("/setup").await;
    let view = setup["services"].as_array().unwrap().iter().find(|s| s["name"] == "tmdb").unwrap();
    assert_eq!((view["source"].as_str(), view["secretSet"].as_bool()), (Some("console"), Some(true)), "{view}");
    let sent = tmdb.received();
    assert!(sent.iter().any(|r| r.path == "/3/search/tv"), "the run looked Shōgun up");
    assert!(sent.iter().all(|r| r.query.get("api_key").map(String::as_str) == Some(TMDB_KEY)));

    // The first run: its goal, a follow-up on the same task, a new task.
    let first = run_of(&keyed, &vars["RUN"]).await;
    assert_eq!((first["run"]["status"].as_str(), first["run"]["plan"].clone()), (Some("succeeded"), Value::Null));
    let messages: Vec<(&str, bool)> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["text"].as_str().unwrap(), m["newTask"].as_bool().unwrap()))
        .collect();
    assert_eq!(messages, [("Look Dune up on TMDB", true), ("How far are you?", false), ("Now look Shōgun up", true)]);
    let lookups: Vec<&str> = first["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "agent.tool_call" && e["payload"]["phase"] == "finished")
        .filter(|e| e["payload"]["name"] == "catalog.lookup")
        .map(|e| e["payload"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(lookups, ["succeeded", "succeeded"]);
    let plans: Vec<Value> = first["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "agent.plan")
        .map(|e| e["payload"]["plan"]["goal"].clone())
        .collect();
    assert_eq!(plans, [json!("Look Dune up on TMDB"), Value::Null], "the plan was kept, then dropped by the new task");
    let said = first["run"]["finalText"].as_str().unwrap();
    assert!(said.contains("Shōgun (2024)"), "{said}");

    // The second run: blocked by the day's budget, aborted, continued.
    let second = run_of(&keyed, &vars["RUN2"]).await;
    assert_eq!(second["run"]["status"], "succeeded", "{}", second["run"]);
    let statuses: Vec<&str> = second["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "agent.run_status")
        .filter_map(|e| e["payload"]["status"].as_str())
        .collect();
    let at = |s: &str| statuses.iter().position(|x| *x == s).unwrap_or_else(|| panic!("never {s}: {statuses:?}"));
    assert!(at("budget_exceeded") < at("cancelled") && at("cancelled") < at("succeeded"), "{statuses:?}");
    let decision = keyed.json(&format!("/decisions/{}", vars["DECISION"])).await;
    assert_eq!(
        (decision["kind"].as_str(), decision["subject"].as_str(), decision["status"].as_str()),
        (Some("agent_budget"), Some(vars["RUN2"].as_str()), Some("resolved"))
    );
    assert_eq!(decision["resolution"]["optionId"], "continue", "{decision}");

    // The grant, bound to the published policy, with its reason.
    assert_eq!(vars["POLICY"], "automation.recover@1");
    let admin = Api::new(&server.base()).signed_in(&db, "checker").await;
    let grants = admin.json("/automation-grants").await;
    let grant = grants["grants"].as_array().unwrap().iter().find(|g| g["action"] == "download.recheck").unwrap();
    assert_eq!(
        (grant["policyName"].as_str(), grant["policyRevision"].as_i64(), grant["reason"].as_str()),
        (Some("automation.recover"), Some(1), Some("recover downloads that lost their data"))
    );
    assert!(!server.log().contains(TMDB_KEY) && !server.log().contains(ANTHROPIC_KEY), "a key is in the log");
}
