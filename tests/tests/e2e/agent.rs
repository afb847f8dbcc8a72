//! The scripted model: the demo reads the inventory and reports only what
//! the result says; scripts are chosen by the user's words, fill
//! `{{capability.path}}` from real results (never inventing a figure), and
//! a malformed script file is refused with the reason.

use capstan::agent::providers::scripted::Scripted;
use capstan::agent::providers::{
    Block, Message, ModelRequest, Provider, ProviderError, Role, StopReason, StreamEvent,
};
use serde_json::{Value, json};

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest { system: "You manage a media library.".into(), messages, tools: Vec::new(), max_tokens: 1024 }
}

/// The conversation after the model called `name` (id `id`) and got `result`.
fn after_tool(mut messages: Vec<Message>, id: &str, name: &str, input: Value, result: Value, ok: bool) -> Vec<Message> {
    messages.push(Message { role: Role::Assistant, content: vec![Block::ToolUse { id: id.into(), name: name.into(), input }] });
    messages.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult { tool_use_id: id.into(), content: result.to_string(), is_error: !ok }],
    });
    messages
}

#[tokio::test]
async fn the_demo_reads_the_inventory_and_reports_what_it_says() {
    let model = Scripted::demo();
    let asked = vec![Message::user_text("What do I have?")];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let first = model.complete(&request(asked.clone()), tx).await.unwrap();
    assert_eq!(first.stop, StopReason::ToolUse);
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].name, "inventory.query");
    let mut streamed = String::new();
    let mut calls = 0;
    while let Ok(event) = rx.try_recv() {
        match event {
            StreamEvent::TextDelta(t) => streamed.push_str(&t),
            StreamEvent::ToolCall(_) => calls += 1,
        }
    }
    assert_eq!((streamed.as_str(), calls), (first.text.as_str(), 1), "the stream carries the same answer");

    let inventory = json!({"items": [{"title": "Dune"}, {"title": "Alien"}, {"title": "Heat"}], "counts": {}});
    let id = first.tool_calls[0].id.clone();
    let messages = after_tool(asked, &id, "inventory.query", json!({}), inventory, true);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let last = model.complete(&request(messages.clone()), tx).await.unwrap();
    assert_eq!(last.stop, StopReason::EndTurn);
    assert!(last.tool_calls.is_empty());
    assert!(last.text.contains("tracks 3 titles"), "{}", last.text);

    // A failed result is no evidence: the figure reads unknown.
    let failed = after_tool(vec![Message::user_text("What do I have?")], "c", "inventory.query", json!({}), json!({"items": [1]}), false);
    let answer = model.answer(&request(failed)).unwrap();
    assert!(answer.text.contains("tracks (unknown) titles"), "{}", answer.text);
}

#[test]
fn scripts_are_chosen_by_the_request_and_fill_inputs_from_results() {
    let model = Scripted::from_json(
        r#"{"scripts": [
            {"match": ["fetch", "下载"], "steps": [
                {"tools": [{"name": "catalog.lookup", "input": {"action": "search", "query": "Dune"}}]},
                {"text": "Found it.", "tools": [{"name": "download.plan", "input": {"slotId": "s1", "sourceReleaseId": "{{catalog.lookup.results.0.id}}"}}]}
            ], "finalText": "Planned {{download.plan.id}} for {{catalog.lookup.results.0.title}}."},
            {"finalText": "I can only fetch things."}
        ]}"#,
    )
    .unwrap();
    let asked = vec![Message::user_text("Please FETCH Dune")];
    let step0 = model.answer(&request(asked.clone())).unwrap();
    assert_eq!(step0.tool_calls[0].name, "catalog.lookup");
    let found = json!({"results": [{"id": 42, "title": "Dune: Part Two"}]});
    let messages = after_tool(asked, "a", "catalog.lookup", json!({}), found, true);
    let step1 = model.answer(&request(messages.clone())).unwrap();
    assert_eq!(step1.text, "Found it.");
    // A whole-string reference keeps the value's type.
    assert_eq!(step1.tool_calls[0].input.as_ref().unwrap()["sourceReleaseId"], json!(42));
    let messages = after_tool(messages, "b", "download.plan", json!({}), json!({"id": "plan-7"}), true);
    let done = model.answer(&request(messages)).unwrap();
    assert_eq!(done.text, "Planned plan-7 for Dune: Part Two.");
    assert_eq!(done.stop, StopReason::EndTurn);

    // Other words fall through to the catch-all script.
    let other = model.answer(&request(vec![Message::user_text("hello")])).unwrap();
    assert_eq!(other.text, "I can only fetch things.");
}

#[test]
fn malformed_scripts_and_unanswerable_requests_are_refused_with_the_reason() {
    for (text, expect) in [
        ("not json", "expected"),
        (r#"{"scripts": []}"#, "no scripts"),
        (r#"{"scripts": [{"finalText": "x", "temperature": 1}]}"#, "unknown field"),
        (r#"{"scripts": [{"steps": []}]}"#, "finalText"),
    ] {
        match Scripted::from_json(text) {
            Err(ProviderError::Invalid(m)) => assert!(m.contains(expect), "{text}: {m}"),
            other => panic!("{text} was not refused: {other:?}"),
        }
    }
    let picky = Scripted::from_json(r#"{"scripts": [{"match": ["organize"], "finalText": "ok"}]}"#).unwrap();
    let err = picky.answer(&request(vec![Message::user_text("fetch Dune")])).unwrap_err();
    assert!(matches!(err, ProviderError::Invalid(ref m) if m.contains("no script matches")), "{err:?}");
    let err = picky.answer(&request(Vec::new())).unwrap_err();
    assert!(matches!(err, ProviderError::Invalid(ref m) if m.contains("no user request")), "{err:?}");
}
