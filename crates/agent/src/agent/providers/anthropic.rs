//! The `anthropic` provider: the Messages API, streamed. Tool results go
//! back in the next user message as `tool_result` blocks placed before any
//! text; `input_json_delta` fragments are joined per content block and
//! parsed when the block stops (an empty string is `{}`); arguments that
//! are not a JSON object come back as a failed call, never executed.
//! With `model.thinking_level` above off the request asks for extended
//! thinking; its blocks come back with their signatures and are kept in the
//! answer, before the tool calls, so the next request can return them.
//! `ping` and unknown events are ignored; an `error` event or a stream that
//! ends before `message_stop` is an error. A whole JSON answer (a server or
//! gateway that does not stream) is read as one message. Empty text blocks
//! are never sent (the API refuses them): a message left with nothing is
//! dropped and neighbours of one role are merged.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::wire::{Endpoint, SseReader, ToolNames, parse_tool_arguments};
use super::{
    Block, Completion, CompletionFuture, ModelRequest, Provider, ProviderError, Role, StopReason, StreamEvent,
    ToolCall, Usage,
};

pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

/// A Messages API client. The key is held only for the request headers.
pub struct Anthropic {
    pub endpoint: Endpoint,
}

impl Anthropic {
    pub fn new(base_url: &str, model: &str, api_key: String) -> Result<Anthropic, ProviderError> {
        Ok(Anthropic { endpoint: Endpoint::new(base_url, model, api_key)? })
    }

    fn body(&self, request: &ModelRequest, names: &ToolNames) -> Value {
        let mut messages: Vec<Value> = Vec::new();
        for m in &request.messages {
            // Tool results first, then text, as the API wants them; a text
            // block with nothing in it is refused by the API, so none goes.
            let mut blocks: Vec<&Block> =
                m.content.iter().filter(|b| !matches!(b, Block::Text { text } if text.trim().is_empty())).collect();
            blocks.sort_by_key(|b| !matches!(b, Block::ToolResult { .. }));
            let mut content: Vec<Value> = blocks.into_iter().map(|b| block(b, names)).collect();
            if content.is_empty() {
                continue;
            }
            let role = if m.role == Role::User { "user" } else { "assistant" };
            // Dropping an empty message can leave two of one role in a row:
            // they become one, as the API wants roles to alternate.
            match messages.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(blocks) = last["content"].as_array_mut() {
                        blocks.append(&mut content);
                        blocks.sort_by_key(|b| b["type"] != "tool_result");
                    }
                }
                _ => messages.push(json!({ "role": role, "content": content })),
            }
        }
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": names.wire(&t.name),
                    "description": t.description,
                    "input_schema": names.schema(&t.name, &t.input_schema),
                })
            })
            .collect();
        let mut body = json!({
            "model": self.endpoint.model,
            "max_tokens": request.max_tokens.max(1),
            "system": request.system,
            "messages": messages,
            "stream": true,
        });
        if let Some(budget) = self.endpoint.thinking.budget_tokens() {
            // The reasoning budget counts towards max_tokens and must stay below it.
            body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
            body["max_tokens"] = json!(request.max_tokens.max(1) + budget);
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        body
    }
}

fn block(b: &Block, names: &ToolNames) -> Value {
    match b {
        Block::Text { text } => json!({ "type": "text", "text": text }),
        Block::ToolUse { id, name, input } => {
            json!({ "type": "tool_use", "id": id, "name": names.wire(name), "input": names.wire_input(name, input) })
        }
        Block::ToolResult { tool_use_id, content, is_error } => json!({
            "type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error
        }),
        Block::Thinking { thinking, signature } => {
            json!({ "type": "thinking", "thinking": thinking, "signature": signature })
        }
        Block::RedactedThinking { data } => json!({ "type": "redacted_thinking", "data": data }),
    }
}

fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("refusal") => StopReason::Refusal,
        _ => StopReason::EndTurn,
    }
}

/// A whole (not streamed) Messages answer, as one completion.
fn from_message(
    message: &Value,
    names: &ToolNames,
    events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError> {
    if message["type"] == "error" {
        let error = &message["error"];
        let kind = error["type"].as_str().unwrap_or("error");
        return Err(ProviderError::Unavailable(format!(
            "{kind}: {}",
            error["message"].as_str().unwrap_or("unknown error")
        )));
    }
    let mut completion = Completion {
        reasoning: Vec::new(),
        text: String::new(),
        tool_calls: Vec::new(),
        stop: stop_reason(message["stop_reason"].as_str()),
        usage: Usage {
            input_tokens: message["usage"]["input_tokens"].as_u64(),
            output_tokens: message["usage"]["output_tokens"].as_u64(),
        },
    };
    for b in message["content"].as_array().into_iter().flatten() {
        let text = |k: &str| b[k].as_str().unwrap_or_default().to_string();
        match b["type"].as_str() {
            Some("text") => completion.text.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => {
                let name = names.id(b["name"].as_str().unwrap_or_default()).to_string();
                let parsed = if b["input"].is_object() {
                    Ok(b["input"].clone())
                } else {
                    Err(format!("tool arguments must be a JSON object, got {}", b["input"]))
                };
                let input = names.arguments(&name, parsed);
                completion.tool_calls.push(ToolCall { id: text("id"), name, input });
            }
            Some("thinking") => {
                completion.reasoning.push(Block::Thinking { thinking: text("thinking"), signature: text("signature") })
            }
            Some("redacted_thinking") => completion.reasoning.push(Block::RedactedThinking { data: text("data") }),
            _ => {}
        }
    }
    if !completion.text.is_empty() {
        let _ = events.send(StreamEvent::TextDelta(completion.text.clone()));
    }
    for call in &completion.tool_calls {
        let _ = events.send(StreamEvent::ToolCall(call.clone()));
    }
    Ok(completion)
}

/// A content block being assembled.
enum Open {
    Text,
    Tool { id: String, name: String, json: String },
    Thinking { thinking: String, signature: String },
}

impl Provider for Anthropic {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        Box::pin(async move {
            let names = ToolNames::new(&request.tools)?;
            let body = self.body(request, &names).to_string();
            let mut resp = self
                .endpoint
                .post("/v1/messages", body, |b| {
                    b.header("x-api-key", &self.endpoint.api_key).header("anthropic-version", API_VERSION)
                })
                .await?;
            if super::wire::is_json(&resp) {
                let message = self.endpoint.whole_json(&mut resp).await?;
                return from_message(&message, &names, &events);
            }
            let mut reader = SseReader::default();
            let mut open: BTreeMap<u64, Open> = BTreeMap::new();
            let mut completion = Completion {
                reasoning: Vec::new(),
                text: String::new(),
                tool_calls: Vec::new(),
                stop: StopReason::EndTurn,
                usage: Usage::default(),
            };
            loop {
                let chunk = self.endpoint.next_chunk(&mut resp).await?;
                let Some(chunk) = chunk else {
                    return Err(ProviderError::Unavailable("the stream ended before message_stop".into()));
                };
                for event in reader.push(&chunk) {
                    let data: Value = match serde_json::from_str(&event.data) {
                        Ok(v) => v,
                        Err(_) => continue,
                    };
                    let index = data["index"].as_u64().unwrap_or(0);
                    match data["type"].as_str().unwrap_or_default() {
                        "message_start" => {
                            completion.usage.input_tokens = data["message"]["usage"]["input_tokens"].as_u64();
                        }
                        "content_block_start" => {
                            let block = &data["content_block"];
                            let entry = match block["type"].as_str() {
                                Some("tool_use") => Open::Tool {
                                    id: block["id"].as_str().unwrap_or_default().to_string(),
                                    name: names.id(block["name"].as_str().unwrap_or_default()).to_string(),
                                    json: String::new(),
                                },
                                Some("thinking") => Open::Thinking {
                                    thinking: block["thinking"].as_str().unwrap_or_default().to_string(),
                                    signature: block["signature"].as_str().unwrap_or_default().to_string(),
                                },
                                Some("redacted_thinking") => {
                                    let data = block["data"].as_str().unwrap_or_default().to_string();
                                    completion.reasoning.push(Block::RedactedThinking { data });
                                    Open::Text
                                }
                                _ => Open::Text,
                            };
                            open.insert(index, entry);
                        }
                        "content_block_delta" => {
                            let delta = &data["delta"];
                            match (delta["type"].as_str(), open.get_mut(&index)) {
                                (Some("text_delta"), _) => {
                                    let text = delta["text"].as_str().unwrap_or_default();
                                    completion.text.push_str(text);
                                    let _ = events.send(StreamEvent::TextDelta(text.to_string()));
                                }
                                (Some("input_json_delta"), Some(Open::Tool { json, .. })) => {
                                    json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                                }
                                (Some("thinking_delta"), Some(Open::Thinking { thinking, .. })) => {
                                    thinking.push_str(delta["thinking"].as_str().unwrap_or_default());
                                }
                                (Some("signature_delta"), Some(Open::Thinking { signature, .. })) => {
                                    signature.push_str(delta["signature"].as_str().unwrap_or_default());
                                }
                                _ => {}
                            }
                        }
                        "content_block_stop" => match open.remove(&index) {
                            Some(Open::Tool { id, name, json }) => {
                                let input = names.arguments(&name, parse_tool_arguments(&json));
                                let call = ToolCall { id, name, input };
                                let _ = events.send(StreamEvent::ToolCall(call.clone()));
                                completion.tool_calls.push(call);
                            }
                            Some(Open::Thinking { thinking, signature }) => {
                                completion.reasoning.push(Block::Thinking { thinking, signature });
                            }
                            _ => {}
                        },
                        "message_delta" => {
                            completion.stop = stop_reason(data["delta"]["stop_reason"].as_str());
                            if let Some(out) = data["usage"]["output_tokens"].as_u64() {
                                completion.usage.output_tokens = Some(out);
                            }
                        }
                        "message_stop" => return Ok(completion),
                        "error" => {
                            let message = data["error"]["message"].as_str().unwrap_or("unknown error");
                            let kind = data["error"]["type"].as_str().unwrap_or("error");
                            return Err(ProviderError::Unavailable(format!("{kind}: {message}")));
                        }
                        _ => {}
                    }
                }
            }
        })
    }
}
