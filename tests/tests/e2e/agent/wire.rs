//! Requests real model APIs accept. The mock model servers refuse, with a
//! 400 as the real services do, what their documented rules refuse
//! (`capstan_tests::llm_rules`); against them: every loaded capability's
//! schema is sent in a form both APIs take, a default run offering every
//! tool is accepted by both, an answer with nothing in it is never sent
//! back, a whole JSON answer is read like a stream, OpenAI-style tool-call
//! fragments are grouped however a server cuts them, and reasoning asks
//! for `max_completion_tokens`.

use capstan::agent::providers::openai::OpenAiCompatible;
use capstan::agent::providers::schema::for_wire;
use capstan::agent::providers::{Message, ModelRequest, Provider, ToolSpec};
use capstan_tests::both_backends;
use capstan_tests::components;
use capstan_tests::db::Backend;
use capstan_tests::host::TestHost;
use capstan_tests::llm_rules::tool_schema;
use capstan_tests::mock_llm::{MockLlm, Reply, sse};
use serde_json::{Value, json};

use crate::agent::runs::{ended, set, start};
use crate::storage::ledger::env;

#[tokio::test(flavor = "multi_thread")]
async fn every_loaded_capabilitys_schema_is_sent_in_a_form_both_apis_accept() {
    let host = TestHost::new();
    host.drop_plugin(components::PROBE, "probe.wasm");
    host.drop_plugin(components::QBITTORRENT_CLIENT, "qbittorrent-client.wasm");
    let runtime = host.start().await.unwrap();
    let snapshot = runtime.snapshot();
    let mut refused_as_written = Vec::new();
    for (id, loaded) in &snapshot.active {
        let original = &loaded.descriptor.input_schema;
        if tool_schema(original, true).is_err() {
            refused_as_written.push(id.clone());
        }
        let wire = for_wire(original);
        for openai in [false, true] {
            tool_schema(&wire.schema, openai)
                .unwrap_or_else(|e| panic!("{id} (openai: {openai}): {e}: {}", wire.schema));
        }
    }
    // The tagged unions: refused as schemars writes them, accepted as sent.
    for id in ["catalog.lookup", "test.probe"] {
        assert!(
            refused_as_written.contains(&id.to_string()),
            "{id} was expected to need reshaping: {refused_as_written:?}"
        );
    }
    let lookup = for_wire(&snapshot.get("catalog.lookup").unwrap().descriptor.input_schema);
    assert!(!lookup.wrapped, "a tagged union is flattened, not wrapped");
    assert!(lookup.schema["properties"]["action"]["enum"].as_array().unwrap().len() >= 2, "{}", lookup.schema);
}

fn anthropic_text(text: &str) -> Reply {
    let mut events =
        vec![("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 9}}}))];
    if !text.is_empty() {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ));
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    Reply::Stream(vec![sse(&events)])
}

fn openai_text(text: &str) -> Reply {
    let chunk = json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]});
    Reply::Stream(vec![format!("data: {chunk}\n\ndata: [DONE]\n\n").into_bytes()])
}

async fn use_provider(app: &capstan::app::App, provider: &str, llm: &MockLlm) {
    let base = if provider == "anthropic" { llm.base_url() } else { format!("{}/v1", llm.base_url()) };
    let settings = [
        ("model.provider", json!(provider)),
        ("model.model", json!("test-model")),
        ("model.base_url", json!(base)),
        ("model.api_key", json!("sk-test")),
    ];
    set(app, &settings).await;
}

async fn a_default_run_offering_every_tool_is_accepted_by_both_apis(backend: Backend) {
    for provider in ["anthropic", "openai-compatible"] {
        let env = env(backend).await;
        let reply = if provider == "anthropic" {
            anthropic_text("Nothing to change.")
        } else {
            openai_text("Nothing to change.")
        };
        let llm = MockLlm::start(vec![reply]).await;
        use_provider(&env.app, provider, &llm).await;
        let api = start(&env).await;
        let (_, run) =
            api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
        let body = crate::agent::runs::wait_run(&api, run["id"].as_str().unwrap(), "ended", ended).await;
        assert_eq!(body["run"]["status"], "succeeded", "{provider}: {body}");
        let sent = &llm.requests()[0].body;
        let tools = sent["tools"].as_array().unwrap();
        let lookup = tools
            .iter()
            .find(|t| t["name"] == "catalog_lookup" || t["function"]["name"] == "catalog_lookup")
            .unwrap_or_else(|| panic!("{provider}: catalog.lookup was not offered"));
        let schema = if provider == "anthropic" { &lookup["input_schema"] } else { &lookup["function"]["parameters"] };
        assert_eq!(schema["type"], "object", "{provider}: {schema}");
    }
}

async fn an_answer_with_nothing_in_it_is_asked_again_never_sent_back(backend: Backend) {
    let env = env(backend).await;
    let llm =
        MockLlm::start(vec![anthropic_text(""), anthropic_text("Here it is."), anthropic_text(""), anthropic_text("")])
            .await;
    use_provider(&env.app, "anthropic", &llm).await;
    let api = start(&env).await;
    let (_, run) = api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let body = crate::agent::runs::wait_run(&api, &id, "ended", ended).await;
    assert_eq!(body["run"]["status"], "succeeded", "{body}");
    assert_eq!(body["run"]["finalText"], "Here it is.");
    assert_eq!(llm.requests().len(), 2, "asked once more, and the mock refused nothing");

    // Twice nothing: the run fails saying so, rather than asking for ever.
    let (_, run) = api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
    let body = crate::agent::runs::wait_run(&api, run["id"].as_str().unwrap(), "ended", ended).await;
    assert_eq!(body["run"]["status"], "failed", "{body}");
    assert!(body["run"]["error"].as_str().unwrap().contains("neither text nor a tool call"), "{body}");
}

async fn whole_json_answers_are_read_like_streams(backend: Backend) {
    let anthropic = [
        Reply::Json(json!({"type": "message", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "inventory_query", "input": {}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 5}})),
        Reply::Json(
            json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Empty so far."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 30, "output_tokens": 4}}),
        ),
    ];
    let openai = [
        Reply::Json(json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "inventory_query", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5}})),
        Reply::Json(json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Empty so far."}}]})),
    ];
    for (provider, replies) in [("anthropic", anthropic), ("openai-compatible", openai)] {
        let env = env(backend).await;
        let llm = MockLlm::start(replies.to_vec()).await;
        use_provider(&env.app, provider, &llm).await;
        let api = start(&env).await;
        let (_, run) =
            api.post("/agent/runs", json!({"goal": "What does my library hold?", "mode": "plan_only"})).await;
        let body = crate::agent::runs::wait_run(&api, run["id"].as_str().unwrap(), "ended", ended).await;
        assert_eq!(body["run"]["status"], "succeeded", "{provider}: {body}");
        assert_eq!(body["run"]["finalText"], "Empty so far.", "{provider}");
        let calls: Vec<&Value> = body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "agent.tool_call" && e["payload"]["phase"] == "finished")
            .collect();
        assert_eq!(calls.len(), 1, "{provider}: {body}");
        assert_eq!(
            (calls[0]["payload"]["name"].as_str(), calls[0]["payload"]["status"].as_str()),
            (Some("inventory.query"), Some("succeeded"))
        );
    }
}

both_backends!(
    a_default_run_offering_every_tool_is_accepted_by_both_apis,
    an_answer_with_nothing_in_it_is_asked_again_never_sent_back,
    whole_json_answers_are_read_like_streams,
);

fn chunks(deltas: &[Value]) -> Reply {
    let mut out = String::new();
    for d in deltas {
        let chunk =
            json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": null}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    let last = json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    out.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
    Reply::Stream(vec![out.into_bytes()])
}

fn two_tools() -> ModelRequest {
    let tool =
        |name: &str| ToolSpec { name: name.into(), description: "t".into(), input_schema: json!({"type": "object"}) };
    ModelRequest {
        system: "s".into(),
        messages: vec![Message::user_text("go")],
        tools: vec![tool("release.search"), tool("catalog.lookup")].into(),
        max_tokens: 100,
    }
}

#[tokio::test]
async fn tool_call_fragments_are_grouped_however_a_server_cuts_them() {
    let call = |f: Value| json!({"tool_calls": [f]});
    let servers = [
        // No index at all; the name repeated in every fragment.
        vec![
            call(json!({"id": "call_a", "function": {"name": "release_search", "arguments": "{\"query\":"}})),
            call(json!({"function": {"name": "release_search", "arguments": "\"Dune\"}"}})),
            call(json!({"id": "call_b", "function": {"name": "catalog_lookup", "arguments": "{\"action\":"}})),
            call(json!({"function": {"name": "catalog_lookup", "arguments": "\"search\"}"}})),
        ],
        // Every call at index 0, told apart by their ids.
        vec![
            call(
                json!({"index": 0, "id": "call_a", "function": {"name": "release_search", "arguments": "{\"query\":\"Dune\"}"}}),
            ),
            call(
                json!({"index": 0, "id": "call_b", "function": {"name": "catalog_lookup", "arguments": "{\"action\":\"search\"}"}}),
            ),
        ],
        // Every call at index 0 with no ids: a new object starts a new call.
        vec![
            call(json!({"index": 0, "function": {"name": "release_search", "arguments": "{\"query\":\"Dune\"}"}})),
            call(json!({"index": 0, "function": {"name": "catalog_lookup", "arguments": "{\"action\":\"search\"}"}})),
        ],
        // A name cut in two; the second call's name alone, then its arguments.
        vec![
            call(json!({"index": 0, "id": "call_a", "function": {"name": "release_", "arguments": ""}})),
            call(json!({"index": 0, "function": {"name": "search", "arguments": "{\"query\":\"Dune\"}"}})),
            call(json!({"function": {"name": "catalog_lookup"}})),
            call(json!({"function": {"arguments": "{\"action\":\"search\"}"}})),
        ],
    ];
    for (n, deltas) in servers.into_iter().enumerate() {
        let server = MockLlm::start(vec![chunks(&deltas)]).await;
        let client = OpenAiCompatible::new(&format!("{}/v1", server.base_url()), "m", "k".into()).unwrap();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let done = client.complete(&two_tools(), tx).await.unwrap();
        let got: Vec<(&str, Value)> =
            done.tool_calls.iter().map(|c| (c.name.as_str(), c.input.clone().unwrap_or(Value::Null))).collect();
        assert_eq!(
            got,
            [("release.search", json!({"query": "Dune"})), ("catalog.lookup", json!({"action": "search"}))],
            "server {n}"
        );
        assert!(done.tool_calls.iter().all(|c| !c.id.is_empty()), "every call can be answered");
    }
}

#[tokio::test]
async fn reasoning_asks_for_max_completion_tokens() {
    let server = MockLlm::start(vec![openai_text("ok")]).await;
    let mut client = OpenAiCompatible::new(&format!("{}/v1", server.base_url()), "o-test", "k".into()).unwrap();
    client.endpoint.thinking = capstan::agent::providers::wire::Thinking::parse("medium").unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let done = client.complete(&two_tools(), tx).await.expect("the mock, like the API, takes it");
    assert_eq!(done.text, "ok");
    let sent = &server.requests()[0].body;
    assert_eq!(sent["reasoning_effort"], "medium");
    assert!(sent.get("max_tokens").is_none(), "{sent}");
    assert_eq!(sent["max_completion_tokens"], 100 + 8_192);
}

#[tokio::test]
async fn a_wrapped_tool_goes_out_wrapped_and_comes_back_as_the_capability_takes_it() {
    let reply = json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_2", "function": {"name": "pick_one", "arguments": "{\"input\": \"b\"}"}}]}, "finish_reason": "tool_calls"}]});
    let server =
        MockLlm::start(vec![Reply::Stream(vec![format!("data: {reply}\n\ndata: [DONE]\n\n").into_bytes()])]).await;
    let client = OpenAiCompatible::new(&format!("{}/v1", server.base_url()), "m", "k".into()).unwrap();
    let pick = ToolSpec { name: "pick.one".into(), description: "t".into(), input_schema: json!({"enum": ["a", "b"]}) };
    let request = ModelRequest {
        system: "s".into(),
        messages: vec![
            Message::user_text("go"),
            Message {
                role: capstan::agent::providers::Role::Assistant,
                content: vec![capstan::agent::providers::Block::ToolUse {
                    id: "call_1".into(),
                    name: "pick.one".into(),
                    input: json!("a"),
                }],
            },
            Message {
                role: capstan::agent::providers::Role::User,
                content: vec![capstan::agent::providers::Block::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "ok".into(),
                    is_error: false,
                }],
            },
        ],
        tools: vec![pick].into(),
        max_tokens: 100,
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let done = client.complete(&request, tx).await.unwrap();
    assert_eq!(done.tool_calls[0].input, Ok(json!("b")), "unwrapped for the capability");
    let sent = &server.requests()[0].body;
    assert_eq!(sent["tools"][0]["function"]["parameters"]["required"], json!(["input"]));
    let earlier = &sent["messages"][2]["tool_calls"][0]["function"]["arguments"];
    assert_eq!(
        serde_json::from_str::<Value>(earlier.as_str().unwrap()).unwrap(),
        json!({"input": "a"}),
        "the history as the model sent it"
    );
}
