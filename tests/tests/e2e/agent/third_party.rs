//! One run per provider against a model server nobody here wrote: fakellm
//! (PyPI), installed by `scripts/setup.sh --tests`, with rules that call a
//! tool and then answer. Its streams are cut as it cuts them (text split
//! on spaces, arguments in pieces, no usage on OpenAI's), so this checks
//! the clients against a second reading of each API.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::agent::runs::{ended, set, start};
use crate::storage::ledger::env;

const RULES: &str = r#"version: 1
rules:
  # The follow-up (the message before the last is the tool call) first:
  # messages_contain looks at every message.
  - name: answer_after_the_tool
    when:
      previous_message_role: assistant
    respond:
      content: "Your library holds nothing yet."
  - name: call_the_tool
    when:
      messages_contain: "what does my library hold"
      tools_include: inventory_query
    respond:
      content: ""
      tool_calls:
        - name: inventory_query
          arguments: {}
"#;

struct FakeLlm {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fakellm_bin() -> PathBuf {
    let bin = capstan_tests::host::target_dir().join("test-tools/venv/bin/fakellm");
    assert!(bin.exists(), "{} is missing: run scripts/setup.sh --tests", bin.display());
    bin
}

async fn start_fakellm() -> FakeLlm {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("fakellm.yaml");
    std::fs::write(&rules, RULES).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(fakellm_bin())
        .args(["serve", "--host", "127.0.0.1", "--port", &port.to_string(), "--config", rules.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut server = FakeLlm { child, port, _dir: dir };
    let started = Instant::now();
    loop {
        if let Ok(resp) = reqwest::get(format!("http://127.0.0.1:{port}/_fakellm/stats")).await
            && resp.status().is_success()
        {
            return server;
        }
        assert!(server.child.try_wait().unwrap().is_none(), "fakellm exited");
        assert!(started.elapsed() < Duration::from_secs(60), "fakellm did not come up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_per_provider_against_a_third_party_mock_server() {
    for provider in ["anthropic", "openai-compatible"] {
        let server = start_fakellm().await;
        let env = env(Backend::Sqlite).await;
        let base = format!("http://127.0.0.1:{}", server.port);
        let base = if provider == "anthropic" { base } else { format!("{base}/v1") };
        let settings = [
            ("model.provider", json!(provider)),
            ("model.model", json!(if provider == "anthropic" { "claude-sonnet-4-5" } else { "gpt-4o-mini" })),
            ("model.base_url", json!(base)),
            ("model.api_key", json!("sk-unused")),
        ];
        set(&env.app, &settings).await;
        let api = start(&env).await;
        let (_, run) =
            api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
        let body = crate::agent::runs::wait_run(&api, run["id"].as_str().unwrap(), "ended", ended).await;
        assert_eq!(body["run"]["status"], "succeeded", "{provider}: {body}");
        assert_eq!(body["run"]["finalText"], "Your library holds nothing yet.", "{provider}");
        let finished: Vec<(&str, &str)> = body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "agent.tool_call" && e["payload"]["phase"] == "finished")
            .map(|e| (e["payload"]["name"].as_str().unwrap(), e["payload"]["status"].as_str().unwrap()))
            .collect();
        assert_eq!(finished, [("inventory.query", "succeeded")], "{provider}: {body}");
        let stats: Value = reqwest::get(format!("http://127.0.0.1:{}/_fakellm/stats", server.port))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(stats["total_requests"], 2, "{provider}: {stats}");
    }
}
