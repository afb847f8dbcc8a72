//! What the real model APIs refuse, written from their documented rules
//! and the errors they answer, independently of the host's own code: the
//! mock model servers answer a request breaking one with a 400 in the
//! provider's error shape, as the real service would.

use serde_json::Value;

/// Tool and function names both APIs accept.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A tool's input schema (Anthropic `input_schema`, OpenAI `parameters`):
/// an object schema at the top, with none of the keywords either refuses
/// there (`oneOf`, `anyOf`, `allOf`; OpenAI also `enum` and `not`).
pub fn tool_schema(schema: &Value, openai: bool) -> Result<(), String> {
    let Some(o) = schema.as_object() else { return Err("schema must be an object".into()) };
    if o.get("type").and_then(Value::as_str) != Some("object") {
        return Err("schema must have type 'object' at the top level".into());
    }
    let refused: &[&str] =
        if openai { &["oneOf", "anyOf", "allOf", "enum", "not"] } else { &["oneOf", "anyOf", "allOf"] };
    if let Some(k) = refused.iter().find(|k| o.contains_key(**k)) {
        return Err(format!("schema does not support {k} at the top level"));
    }
    Ok(())
}

fn blocks(content: &Value) -> Vec<&Value> {
    match content {
        Value::Array(a) => a.iter().collect(),
        _ => Vec::new(),
    }
}

/// A Messages API request.
pub fn anthropic(body: &Value) -> Result<(), String> {
    if !body["model"].is_string() {
        return Err("model: Field required".into());
    }
    let max_tokens = body["max_tokens"].as_u64().ok_or("max_tokens: Field required")?;
    if max_tokens < 1 {
        return Err("max_tokens: must be at least 1".into());
    }
    let messages =
        body["messages"].as_array().filter(|m| !m.is_empty()).ok_or("messages: at least one message is required")?;
    if messages[0]["role"] != "user" {
        return Err("messages: first message must use the \"user\" role".into());
    }
    for (i, m) in messages.iter().enumerate() {
        if !matches!(m["role"].as_str(), Some("user" | "assistant")) {
            return Err(format!("messages.{i}.role: Input should be 'user' or 'assistant'"));
        }
        let content = &m["content"];
        let empty = match content {
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => true,
        };
        let last = i + 1 == messages.len();
        if empty && !(last && m["role"] == "assistant") {
            return Err(format!("messages.{i}: all messages must have non-empty content"));
        }
        for (j, b) in blocks(content).iter().enumerate() {
            if b["type"] == "text" && b["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
                return Err(format!("messages.{i}.content.{j}: text content blocks must be non-empty"));
            }
        }
        // Every tool_use is answered at the start of the next message.
        let uses: Vec<&str> =
            blocks(content).iter().filter(|b| b["type"] == "tool_use").filter_map(|b| b["id"].as_str()).collect();
        if !uses.is_empty() {
            let next = messages.get(i + 1).map(|n| blocks(&n["content"])).unwrap_or_default();
            let leading: Vec<&str> = next
                .iter()
                .take_while(|b| b["type"] == "tool_result")
                .filter_map(|b| b["tool_use_id"].as_str())
                .collect();
            if let Some(missing) = uses.iter().find(|u| !leading.contains(u)) {
                return Err(format!(
                    "messages.{}: tool_use ids were found without tool_result blocks immediately after: {missing}",
                    i + 1
                ));
            }
        }
    }
    for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if !t["name"].as_str().is_some_and(valid_name) {
            return Err(format!("tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"));
        }
        tool_schema(&t["input_schema"], false).map_err(|e| format!("tools.{i}.input_schema: {e}"))?;
    }
    if let Some(thinking) = body.get("thinking") {
        let budget = thinking["budget_tokens"].as_u64().unwrap_or(0);
        if budget < 1024 || budget >= max_tokens {
            return Err("thinking.budget_tokens: must be at least 1024 and less than max_tokens".into());
        }
    }
    Ok(())
}

/// A Chat Completions request.
pub fn openai(body: &Value) -> Result<(), String> {
    if !body["model"].is_string() {
        return Err("you must provide a model parameter".into());
    }
    let messages = body["messages"].as_array().filter(|m| !m.is_empty()).ok_or("messages: must not be empty")?;
    let mut open_calls: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "tool" && !open_calls.is_empty() {
            return Err(format!(
                "messages.[{i}]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing {}",
                open_calls.join(", ")
            ));
        }
        match role {
            "system" | "developer" | "user" => {
                if m["content"].as_str().is_none_or(str::is_empty) && !m["content"].is_array() {
                    return Err(format!("messages.[{i}].content: must be a non-empty string"));
                }
            }
            "assistant" => {
                let calls = m["tool_calls"].as_array().filter(|c| !c.is_empty());
                let text = m["content"].as_str().is_some_and(|t| !t.is_empty());
                if calls.is_none() && !text {
                    return Err(format!("messages.[{i}]: an assistant message must have content or tool_calls"));
                }
                for c in calls.into_iter().flatten() {
                    if !c["function"]["name"].as_str().is_some_and(valid_name)
                        || c["id"].as_str().is_none_or(str::is_empty)
                    {
                        return Err(format!("messages.[{i}].tool_calls: each needs an id and a valid function name"));
                    }
                    open_calls.push(c["id"].as_str().unwrap_or_default().to_string());
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                let Some(at) = open_calls.iter().position(|c| c == id) else {
                    return Err(format!(
                        "messages.[{i}]: messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
                    ));
                };
                open_calls.remove(at);
            }
            other => return Err(format!("messages.[{i}].role: unknown role {other:?}")),
        }
    }
    for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
        let f = &t["function"];
        if t["type"] != "function" || !f["name"].as_str().is_some_and(valid_name) {
            return Err(format!("tools[{i}]: Invalid 'tools[{i}].function.name'"));
        }
        tool_schema(&f["parameters"], true).map_err(|e| format!("Invalid schema for function '{}': {e}", f["name"]))?;
    }
    if body.get("reasoning_effort").is_some() && body.get("max_tokens").is_some() {
        return Err(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
                .into(),
        );
    }
    if body.get("stream_options").is_some() && body["stream"] != true {
        return Err("The 'stream_options' parameter is only allowed when 'stream' is enabled.".into());
    }
    Ok(())
}
