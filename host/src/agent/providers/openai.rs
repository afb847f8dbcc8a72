//! The `openai-compatible` provider: Chat Completions, streamed. Tool
//! results are `tool` messages sent before the user's words; dotted
//! capability ids travel as legal function names and are mapped back.
//! Tool-call fragments are grouped by their index (id and name in the
//! first, arguments joined) and checked as JSON objects when the answer
//! ends. Usage comes in a last chunk when the server sends one; some do
//! not, and then it stays unknown. `data: [DONE]` (or a finish reason
//! before the body ends) completes the answer; anything else is a cut
//! stream.

use std::collections::BTreeMap;

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
                    if !text.is_empty() {
                        messages.push(json!({ "role": "user", "content": text.join("\n") }));
                    }
                }
                Role::Assistant => {
                    let calls: Vec<Value> = m
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            Block::ToolUse { id, name, input } => Some(json!({
                                "id": id, "type": "function",
                                "function": { "name": names.wire(name), "arguments": input.to_string() }
                            })),
                            _ => None,
                        })
                        .collect();
                    let mut message = json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text.join("\n")) } });
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
            "max_tokens": request.max_tokens.max(1),
            "stream": true,
            "stream_options": { "include_usage": true },
        });
        if let Some(effort) = self.endpoint.thinking.effort() {
            body["reasoning_effort"] = json!(effort);
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({ "type": "function", "function": {
                        "name": names.wire(&t.name), "description": t.description, "parameters": t.input_schema
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
    id: String,
    name: String,
    arguments: String,
}

fn finish(
    partials: BTreeMap<u64, Partial>,
    names: &ToolNames,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Vec<ToolCall> {
    partials
        .into_values()
        .map(|p| {
            let input = parse_tool_arguments(&p.arguments);
            let call = ToolCall { id: p.id, name: names.id(&p.name).to_string(), input };
            let _ = events.send(StreamEvent::ToolCall(call.clone()));
            call
        })
        .collect()
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
            let mut reader = SseReader::default();
            let mut partials: BTreeMap<u64, Partial> = BTreeMap::new();
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
                        let partial = partials.entry(fragment["index"].as_u64().unwrap_or(0)).or_default();
                        if let Some(id) = fragment["id"].as_str() {
                            partial.id = id.to_string();
                        }
                        if let Some(name) = fragment["function"]["name"].as_str() {
                            partial.name.push_str(name);
                        }
                        if let Some(args) = fragment["function"]["arguments"].as_str() {
                            partial.arguments.push_str(args);
                        }
                    }
                    if let Some(reason) = choice["finish_reason"].as_str() {
                        stop = Some(match reason {
                            "tool_calls" => StopReason::ToolUse,
                            "length" => StopReason::MaxTokens,
                            "content_filter" => StopReason::Refusal,
                            _ => StopReason::EndTurn,
                        });
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
