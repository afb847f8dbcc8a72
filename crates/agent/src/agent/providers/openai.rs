//! The `openai-compatible` provider: Chat Completions, streamed. Tool
//! results are `tool` messages sent before the user's words; dotted
//! capability ids travel as legal function names and are mapped back.
//! Tool-call fragments are grouped into calls however the server cuts them
//! (with or without an index, every call at index 0, the name repeated) and
//! checked as JSON objects when the answer ends; a whole JSON answer is
//! read as one. With reasoning on, `max_completion_tokens` replaces
//! `max_tokens`. An assistant message with neither words nor calls is left
//! out (the API refuses it). Usage comes in a last chunk when the server sends one; some do
//! not, and then it stays unknown. `data: [DONE]` (or a finish reason
//! before the body ends) completes the answer; anything else is a cut
//! stream.

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::wire::{Endpoint, SseReader, ToolNames, parse_tool_arguments};
use super::{
    Block, Completion, CompletionFuture, ModelRequest, Provider, ProviderError, Role, StopReason, StreamEvent,
    ToolCall, Usage,
};

/// A Chat Completions client; `base_url` includes the version (`.../v1`).
pub struct OpenAiCompatible {
    pub endpoint: Endpoint,
}

impl OpenAiCompatible {
    pub fn new(base_url: &str, model: &str, api_key: String) -> Result<OpenAiCompatible, ProviderError> {
        Ok(OpenAiCompatible { endpoint: Endpoint::new(base_url, model, api_key)? })
    }

    fn body(&self, request: &ModelRequest, names: &ToolNames) -> Value {
        let mut messages = vec![json!({ "role": "system", "content": request.system })];
        for m in &request.messages {
            let text: Vec<&str> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            match m.role {
                Role::User => {
                    for b in &m.content {
                        if let Block::ToolResult { tool_use_id, content, is_error } = b {
                            let content = if *is_error { format!("error: {content}") } else { content.clone() };
                            messages.push(json!({ "role": "tool", "tool_call_id": tool_use_id, "content": content }));
                        }
                    }
                    let text = text.join("\n");
                    if !text.trim().is_empty() {
                        messages.push(json!({ "role": "user", "content": text }));
                    }
                }
                Role::Assistant => {
                    let calls: Vec<Value> = m
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            Block::ToolUse { id, name, input } => Some(json!({
                                "id": id, "type": "function",
                                "function": { "name": names.wire(name), "arguments": names.wire_input(name, input).to_string() }
                            })),
                            _ => None,
                        })
                        .collect();
                    let text = text.join("\n");
                    // An assistant message needs words or calls; one with
                    // neither is refused, so it is left out.
                    if text.trim().is_empty() && calls.is_empty() {
                        continue;
                    }
                    let content = if text.trim().is_empty() { Value::Null } else { json!(text) };
                    let mut message = json!({ "role": "assistant", "content": content });
                    if !calls.is_empty() {
                        message["tool_calls"] = Value::Array(calls);
                    }
                    messages.push(message);
                }
            }
        }
        let mut body = json!({
            "model": self.endpoint.model,
            "messages": messages,
            "stream": true,
            "stream_options": { "include_usage": true },
        });
        match (self.endpoint.thinking.effort(), self.endpoint.thinking.budget_tokens()) {
            // Reasoning models take max_completion_tokens (reasoning and
            // answer together) and refuse max_tokens.
            (Some(effort), Some(budget)) => {
                body["reasoning_effort"] = json!(effort);
                body["max_completion_tokens"] = json!(request.max_tokens.max(1) + budget);
            }
            _ => body["max_tokens"] = json!(request.max_tokens.max(1)),
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({ "type": "function", "function": {
                        "name": names.wire(&t.name), "description": t.description,
                        "parameters": names.schema(&t.name, &t.input_schema)
                    }})
                })
                .collect();
            body["tools"] = Value::Array(tools);
        }
        body
    }
}

/// A tool call being assembled from fragments.
#[derive(Default)]
struct Partial {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// Servers differ in how they cut calls into fragments: some give every
/// fragment an index, some none, some put every call at index 0, some repeat
/// the name in each. A fragment continues the latest call of its index (or
/// the latest call, without one) unless it starts another: a new id, or,
/// after complete arguments, a new object or another name.
fn add_fragment(partials: &mut Vec<Partial>, fragment: &Value) {
    let index = fragment["index"].as_u64();
    let id = fragment["id"].as_str().filter(|i| !i.is_empty());
    let name = fragment["function"]["name"].as_str().filter(|n| !n.is_empty());
    let args = fragment["function"]["arguments"].as_str().unwrap_or_default();
    let current = partials.iter().rposition(|p| index.is_none() || p.index == index);
    let starts_another = match current.map(|i| &partials[i]) {
        None => true,
        Some(p) => {
            let complete = !p.arguments.is_empty() && parse_tool_arguments(&p.arguments).is_ok();
            id.is_some_and(|id| !p.id.is_empty() && p.id != id)
                || (complete && args.trim_start().starts_with('{'))
                || (complete && name.is_some_and(|n| !p.name.is_empty() && n != p.name))
        }
    };
    let p = if starts_another {
        partials.push(Partial { index, ..Partial::default() });
        partials.last_mut().expect("just pushed")
    } else {
        &mut partials[current.expect("a current call")]
    };
    if let Some(id) = id {
        p.id = id.to_string();
    }
    if let Some(name) = name {
        // A name repeated whole in each fragment is the same name; one cut
        // in pieces is joined.
        if p.name != name {
            p.name.push_str(name);
        }
    }
    p.arguments.push_str(args);
}

fn finish(partials: Vec<Partial>, names: &ToolNames, events: &mpsc::UnboundedSender<StreamEvent>) -> Vec<ToolCall> {
    partials
        .into_iter()
        .map(|p| {
            let name = names.id(&p.name).to_string();
            let input = names.arguments(&name, parse_tool_arguments(&p.arguments));
            // A call needs an id to be answered; some servers send none.
            let id = if p.id.is_empty() { format!("call_{}", crate::store::new_id()) } else { p.id };
            let call = ToolCall { id, name, input };
            let _ = events.send(StreamEvent::ToolCall(call.clone()));
            call
        })
        .collect()
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        _ => StopReason::EndTurn,
    }
}

/// A whole (not streamed) Chat Completions answer, as one completion.
fn from_whole(
    answer: &Value,
    names: &ToolNames,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError> {
    if let Some(error) = answer.get("error").filter(|e| e.is_object()) {
        return Err(ProviderError::Unavailable(error["message"].as_str().unwrap_or("unknown error").to_string()));
    }
    let choice = &answer["choices"][0];
    let message = &choice["message"];
    let text = message["content"].as_str().unwrap_or_default().to_string();
    if !text.is_empty() {
        let _ = events.send(StreamEvent::TextDelta(text.clone()));
    }
    let mut partials = Vec::new();
    for (i, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        let mut fragment = call.clone();
        fragment["index"] = json!(i);
        add_fragment(&mut partials, &fragment);
    }
    let tool_calls = finish(partials, names, events);
    let stop = choice["finish_reason"].as_str().map(stop_reason).unwrap_or(if tool_calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    });
    let usage = Usage {
        input_tokens: answer["usage"]["prompt_tokens"].as_u64(),
        output_tokens: answer["usage"]["completion_tokens"].as_u64(),
    };
    Ok(Completion { reasoning: Vec::new(), text, tool_calls, stop, usage })
}

impl Provider for OpenAiCompatible {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        Box::pin(async move {
            let names = ToolNames::new(&request.tools)?;
            let body = self.body(request, &names).to_string();
            let mut resp =
                self.endpoint.post("/chat/completions", body, |b| b.bearer_auth(&self.endpoint.api_key)).await?;
            if super::wire::is_json(&resp) {
                let answer = self.endpoint.whole_json(&mut resp).await?;
                return from_whole(&answer, &names, &events);
            }
            let mut reader = SseReader::default();
            let mut partials: Vec<Partial> = Vec::new();
            let mut text = String::new();
            let mut usage = Usage::default();
            let mut stop = None;
            loop {
                let chunk = self.endpoint.next_chunk(&mut resp).await?;
                let Some(chunk) = chunk else {
                    // Some servers close without [DONE] after the finish reason.
                    if stop.is_some() {
                        break;
                    }
                    return Err(ProviderError::Unavailable("the stream ended before the answer did".into()));
                };
                let mut done = false;
                for event in reader.push(&chunk) {
                    if event.data.trim() == "[DONE]" {
                        done = true;
                        break;
                    }
                    let Ok(data) = serde_json::from_str::<Value>(&event.data) else { continue };
                    if let Some(u) = data.get("usage").filter(|u| u.is_object()) {
                        usage = Usage {
                            input_tokens: u["prompt_tokens"].as_u64(),
                            output_tokens: u["completion_tokens"].as_u64(),
                        };
                    }
                    let Some(choice) = data["choices"].get(0) else { continue };
                    let delta = &choice["delta"];
                    if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                        text.push_str(t);
                        let _ = events.send(StreamEvent::TextDelta(t.to_string()));
                    }
                    for fragment in delta["tool_calls"].as_array().into_iter().flatten() {
                        add_fragment(&mut partials, fragment);
                    }
                    if let Some(reason) = choice["finish_reason"].as_str() {
                        stop = Some(stop_reason(reason));
                    }
                }
                if done {
                    break;
                }
            }
            let tool_calls = finish(partials, &names, &events);
            let stop = stop.unwrap_or(if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse });
            Ok(Completion { reasoning: Vec::new(), text, tool_calls, stop, usage })
        })
    }
}
