//! The `scripted` provider: a deterministic model driven by JSON scripts,
//! for tests and the out-of-the-box demo (`fake` in the settings document
//! names it too). A script file is `{"scripts": [{"match": [...], "steps":
//! [...], "finalText": "..."}]}`, or the list of scripts alone, or one
//! script. The first script whose `match` words (a
//! list, or one word as a text) appear in the latest user request
//! (ignoring case; a script without `match` matches anything) answers it:
//! the model's n-th response to that request is step n — text and/or tool
//! calls, written `"tools": [{"name", "input"}]` or `"toolCalls":
//! [{"capability", "input"}]` (the same thing; one of them per step) —
//! and after the last step it answers `finalText` and ends the turn.
//! `{{capability.path}}` in texts and tool inputs is filled from the latest
//! successful result of that capability in the conversation (`path` walks
//! object keys and array indexes; `length` counts; `*` takes the rest of
//! the path from every item, written in a text as "A, B and C", or
//! "none"); what cannot be filled
//! reads `(unknown)`, so a script never invents a figure. A write's result
//! (`{status, invocation_id, output}`) is read through to its output, except
//! for the wrapper's own keys. A compacted history keeps its place: the
//! digest says how many answers it replaced.

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{
    Block, Completion, CompletionFuture, Message, ModelRequest, Provider, ProviderError, Role, StopReason, StreamEvent,
    ToolCall, Usage,
};

/// The demo: read the inventory and report only what it says.
pub(crate) const DEMO_SCRIPT: &str = r#"{
  "scripts": [
    {
      "steps": [
        { "text": "I'll look at what the library holds.", "tools": [{ "name": "inventory.query", "input": {} }] }
      ],
      "finalText": "The library holds {{inventory.query.items.length}} title(s): {{inventory.query.items.*.title}}. I only read the inventory; nothing was changed."
    }
  ]
}"#;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    scripts: Vec<Script>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Script {
    /// Words any of which selects this script.
    #[serde(default, rename = "match")]
    matches: Words,
    #[serde(default)]
    steps: Vec<Step>,
    final_text: String,
}

/// `match`: a list of words, or one word.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(from = "OneOrMany")]
struct Words(Vec<String>);

#[derive(Deserialize)]
#[serde(untagged, expecting = "a word or a list of words")]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl From<OneOrMany> for Words {
    fn from(words: OneOrMany) -> Words {
        match words {
            OneOrMany::One(word) => Words(vec![word]),
            OneOrMany::Many(words) => Words(words),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Step {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tools: Option<Vec<ScriptedCall>>,
    /// The same as `tools`, as `{capability, input}`.
    #[serde(default)]
    tool_calls: Option<Vec<CapabilityCall>>,
}

impl Step {
    /// The step's calls, however they were written; both ways at once is
    /// refused.
    fn calls(&self) -> Result<Vec<ScriptedCall>, &'static str> {
        match (&self.tools, &self.tool_calls) {
            (Some(_), Some(_)) => Err("has both tools and toolCalls; write its calls one way"),
            (Some(tools), None) => Ok(tools.clone()),
            (None, Some(calls)) => {
                Ok(calls.iter().map(|c| ScriptedCall { name: c.capability.clone(), input: c.input.clone() }).collect())
            }
            (None, None) => Ok(Vec::new()),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    name: String,
    #[serde(default)]
    input: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CapabilityCall {
    capability: String,
    #[serde(default)]
    input: Value,
}

/// A model that follows scripts.
#[derive(Debug, Clone)]
pub struct Scripted {
    scripts: Vec<Script>,
}

impl Scripted {
    /// Whether `text` is a script this provider can follow: the check the
    /// `model.script` setting is stored under.
    pub fn check(text: &str) -> Result<(), String> {
        Scripted::from_json(text).map(drop).map_err(|e| e.to_string())
    }

    /// Reads a script file; a malformed one is refused with the reason.
    pub fn from_json(text: &str) -> Result<Scripted, ProviderError> {
        let invalid = |e: serde_json::Error| ProviderError::Invalid(format!("scripted model: {e}"));
        // Three shapes: `{"scripts": [...]}`, a list of scripts, or one.
        let value: serde_json::Value = serde_json::from_str(text).map_err(invalid)?;
        let file: ScriptFile = match value {
            serde_json::Value::Object(ref o) if o.contains_key("scripts") => {
                serde_json::from_value(value).map_err(invalid)?
            }
            serde_json::Value::Array(_) => ScriptFile { scripts: serde_json::from_value(value).map_err(invalid)? },
            serde_json::Value::Object(_) => {
                ScriptFile { scripts: vec![serde_json::from_value(value).map_err(invalid)?] }
            }
            _ => {
                return Err(ProviderError::Invalid(
                    "scripted model: a script file is {\"scripts\": [...]}, a list of scripts, or one script".into(),
                ));
            }
        };
        if file.scripts.is_empty() {
            return Err(ProviderError::Invalid("scripted model: the file has no scripts".into()));
        }
        for (i, script) in file.scripts.iter().enumerate() {
            for (j, step) in script.steps.iter().enumerate() {
                if let Err(why) = step.calls() {
                    return Err(ProviderError::Invalid(format!("scripted model: scripts[{i}].steps[{j}] {why}")));
                }
            }
        }
        Ok(Scripted { scripts: file.scripts })
    }

    /// The built-in demo.
    pub fn demo() -> Scripted {
        Scripted::from_json(DEMO_SCRIPT).expect("the demo script is valid")
    }

    fn script_for(&self, request: &str) -> Option<&Script> {
        let request = request.to_lowercase();
        self.scripts
            .iter()
            .find(|s| s.matches.0.is_empty() || s.matches.0.iter().any(|m| request.contains(&m.to_lowercase())))
    }

    /// The answer to `request`, computed without I/O.
    pub fn answer(&self, request: &ModelRequest) -> Result<Completion, ProviderError> {
        let (asked_at, asked) = latest_request(&request.messages)
            .ok_or_else(|| ProviderError::Invalid("scripted model: there is no user request to answer".into()))?;
        let script = self
            .script_for(&asked)
            .ok_or_else(|| ProviderError::Invalid(format!("scripted model: no script matches {asked:?}")))?;
        // A compacted history says how many answers it stands for.
        let step = request.messages[asked_at..].iter().filter(|m| m.role == Role::Assistant).count()
            + crate::agent::compaction::marker_count(&asked).unwrap_or(0);
        let results = ToolResults::from(&request.messages);
        let (text, calls) = match script.steps.get(step) {
            // Checked when the file was read.
            Some(s) => {
                (s.text.as_deref().map(|t| results.fill_text(t)).unwrap_or_default(), s.calls().unwrap_or_default())
            }
            None => (results.fill_text(&script.final_text), Vec::new()),
        };
        let tool_calls: Vec<ToolCall> = calls
            .into_iter()
            .enumerate()
            .map(|(k, c)| ToolCall {
                id: format!("call_{step}_{k}"),
                name: c.name,
                input: Ok(results.fill_value(&c.input)),
            })
            .collect();
        let stop = if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
        let prompt_chars: usize =
            request.system.len() + serde_json::to_string(&request.messages).map_or(0, |s| s.len());
        // A calibrated guess: a scripted model has no tokenizer.
        let usage =
            Usage { input_tokens: Some((prompt_chars / 4) as u64), output_tokens: Some((text.len() / 4) as u64) };
        Ok(Completion { reasoning: Vec::new(), text, tool_calls, stop, usage })
    }
}

impl Provider for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a> {
        Box::pin(async move {
            let completion = self.answer(request)?;
            // Streamed a word at a time, as a real model's deltas arrive.
            for piece in completion.text.split_inclusive(' ') {
                let _ = events.send(StreamEvent::TextDelta(piece.to_string()));
            }
            for call in &completion.tool_calls {
                let _ = events.send(StreamEvent::ToolCall(call.clone()));
            }
            Ok(completion)
        })
    }
}

/// The index and text of the latest user message that says something (not
/// only tool results): the request being answered.
fn latest_request(messages: &[Message]) -> Option<(usize, String)> {
    messages.iter().enumerate().rev().find_map(|(i, m)| {
        let text: Vec<&str> = m
            .content
            .iter()
            .filter_map(|b| match b {
                // A host's note beside the request is not the user's words.
                Block::Text { text } if !text.starts_with(crate::agent::session_log::HOST_NOTE) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        (m.role == Role::User && !text.is_empty()).then(|| (i, text.join("\n")))
    })
}

/// The latest successful result of each capability in the conversation.
struct ToolResults(Vec<(String, Value)>);

/// The value at `parts` under `at`: object keys, array indexes, `length`
/// (a count), and `*` (the rest of the path for each item of an array, the
/// items that have it).
fn walk(at: &Value, parts: &[&str]) -> Option<Value> {
    let Some((part, rest)) = parts.split_first() else { return Some(at.clone()) };
    let next = match (at, *part) {
        (Value::Array(items), "*") => {
            return Some(Value::Array(items.iter().filter_map(|item| walk(item, rest)).collect()));
        }
        (Value::Array(items), "length") => Value::from(items.len()),
        (Value::Object(map), "length") if !map.contains_key("length") => Value::from(map.len()),
        (Value::Array(items), index) => items.get(index.parse::<usize>().ok()?)?.clone(),
        (Value::Object(map), key) => map.get(key)?.clone(),
        _ => return None,
    };
    walk(&next, rest)
}

/// Items as words: "none", "A", "A and B", "A, B and C".
fn listed(items: &[Value]) -> String {
    let words: Vec<String> = items
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    match words.as_slice() {
        [] => "none".to_string(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

impl ToolResults {
    fn from(messages: &[Message]) -> ToolResults {
        let mut names = std::collections::HashMap::new();
        let mut found = Vec::new();
        for block in messages.iter().flat_map(|m| &m.content) {
            match block {
                Block::ToolUse { id, name, .. } => {
                    names.insert(id.clone(), name.clone());
                }
                Block::ToolResult { tool_use_id, content, is_error: false } => {
                    if let (Some(name), Ok(value)) = (names.get(tool_use_id), serde_json::from_str::<Value>(content)) {
                        found.push((name.clone(), value));
                    }
                }
                _ => {}
            }
        }
        ToolResults(found)
    }

    /// The value at `capability.path`, from the latest result of the
    /// longest capability id that prefixes it.
    fn lookup(&self, reference: &str) -> Option<Value> {
        // `max_by_key` keeps the last of equals: the latest result.
        let (name, result) = self
            .0
            .iter()
            .filter(|(name, _)| reference == name || reference.starts_with(&format!("{name}.")))
            .max_by_key(|(name, _)| name.len())?;
        let path = reference[name.len()..].trim_start_matches('.');
        // A write's result wraps its output with the ledger row's id.
        let first = path.split('.').next().unwrap_or_default();
        let mut at = match result.get("output") {
            Some(output) if result.get("invocation_id").is_some() && result.get(first).is_none() => output.clone(),
            _ => result.clone(),
        };
        let parts: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
        at = walk(&at, &parts)?;
        Some(at)
    }

    fn fill_text(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let Some(end) = rest[start..].find("}}") else {
                rest = &rest[start..];
                break;
            };
            let reference = rest[start + 2..start + end].trim();
            match self.lookup(reference) {
                Some(Value::String(s)) => out.push_str(&s),
                // A list read with `*` is written as words: "A, B and C".
                Some(Value::Array(items)) if reference.contains(".*") => out.push_str(&listed(&items)),
                Some(v) => out.push_str(&v.to_string()),
                None => out.push_str("(unknown)"),
            }
            rest = &rest[start + end + 2..];
        }
        out.push_str(rest);
        out
    }

    /// Fills strings inside a tool input; a string that is exactly one
    /// reference takes the referenced value with its type.
    fn fill_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => {
                let t = s.trim();
                if t.starts_with("{{") && t.ends_with("}}") && t.matches("{{").count() == 1 {
                    self.lookup(t[2..t.len() - 2].trim()).unwrap_or(Value::Null)
                } else {
                    Value::String(self.fill_text(s))
                }
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.fill_value(v)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), self.fill_value(v))).collect()),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ask(model: &Scripted, messages: Vec<Message>) -> Completion {
        model.answer(&ModelRequest { messages, ..Default::default() }).unwrap()
    }

    /// `messages` with the model calling `name` and the host answering `result`.
    fn answered(mut messages: Vec<Message>, name: &str, result: Value) -> Vec<Message> {
        let id = format!("call_{}", messages.len());
        messages.push(Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse { id: id.clone(), name: name.into(), input: json!({}) }],
        });
        messages.push(Message {
            role: Role::User,
            content: vec![Block::ToolResult { tool_use_id: id, content: result.to_string(), is_error: false }],
        });
        messages
    }

    #[test]
    fn a_script_file_may_be_the_scripts_a_list_or_one_script() {
        let one = r#"{"match": "dune", "steps": [{"text": "Looking."}], "finalText": "Done."}"#;
        for text in [one.to_string(), format!("[{one}]"), format!(r#"{{"scripts": [{one}]}}"#)] {
            let model = Scripted::from_json(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let asked = vec![Message { role: Role::User, content: vec![Block::Text { text: "find Dune".into() }] }];
            assert_eq!(ask(&model, asked).text, "Looking.", "{text}");
        }
        assert!(refusal(r#"{"match": "x", "finalText": "y", "stpes": []}"#).contains("stpes"), "a typo is named");
        assert!(refusal("42").contains("one script"));
        assert!(refusal("[]").contains("no scripts"));
    }

    fn refusal(text: &str) -> String {
        match Scripted::check(text) {
            Err(why) => why,
            Ok(()) => panic!("{text} was taken"),
        }
    }

    #[test]
    fn the_demo_names_the_titles_the_inventory_holds() {
        let model = Scripted::from_json(DEMO_SCRIPT).unwrap();
        let asked = vec![Message::user_text("What is in my library?")];
        let first = ask(&model, asked.clone());
        assert_eq!(first.tool_calls[0].name, "inventory.query");
        let say = |items: Value| ask(&model, answered(asked.clone(), "inventory.query", json!({"items": items}))).text;
        let three = json!([{"title": "Dune"}, {"title": "Arrival"}, {"title": "Shōgun"}]);
        assert_eq!(
            say(three),
            "The library holds 3 title(s): Dune, Arrival and Shōgun. I only read the inventory; nothing was changed."
        );
        assert!(say(json!([{"title": "Dune"}])).starts_with("The library holds 1 title(s): Dune."));
        assert!(say(json!([])).starts_with("The library holds 0 title(s): none."));
    }

    #[test]
    fn tool_calls_written_with_capability_run_as_tools_do() {
        let model = Scripted::from_json(
            r#"{"scripts": [
                {"match": "dune", "steps": [
                    {"text": "Looking it up.", "toolCalls": [{"capability": "catalog.lookup", "input": {"action": "search", "query": "Dune"}}]},
                    {"toolCalls": [{"capability": "catalog.lookup", "input": {"action": "details", "kind": "movie", "tmdbId": "{{catalog.lookup.results.0.id}}"}}]}
                ], "finalText": "{{catalog.lookup.title}} runs {{catalog.lookup.runtime}} minutes."},
                {"finalText": "Ask me about Dune."}
            ]}"#,
        )
        .unwrap();
        let asked = vec![Message::user_text("Tell me about DUNE")];
        let first = ask(&model, asked.clone());
        assert_eq!(first.text, "Looking it up.");
        assert_eq!(first.tool_calls.len(), 1);
        assert_eq!(first.tool_calls[0].name, "catalog.lookup");
        assert_eq!(first.tool_calls[0].input, Ok(json!({"action": "search", "query": "Dune"})));
        let found = answered(asked, "catalog.lookup", json!({"results": [{"id": 438631}]}));
        let second = ask(&model, found.clone());
        assert_eq!(second.tool_calls[0].input, Ok(json!({"action": "details", "kind": "movie", "tmdbId": 438631})));
        let details = answered(found, "catalog.lookup", json!({"title": "Dune", "runtime": 155}));
        let last = ask(&model, details);
        assert_eq!((last.text.as_str(), last.stop), ("Dune runs 155 minutes.", StopReason::EndTurn));
        // `match` as one word or as a list chooses alike; the rest falls through.
        assert_eq!(ask(&model, vec![Message::user_text("hello")]).text, "Ask me about Dune.");
    }

    #[test]
    fn a_step_writes_its_calls_one_way() {
        let both = r#"{"scripts": [{"steps": [{"tools": [{"name": "a.b"}], "toolCalls": [{"capability": "a.b"}]}], "finalText": "x"}]}"#;
        assert!(refusal(both).contains("scripts[0].steps[0] has both tools and toolCalls"), "{}", refusal(both));
        for (text, expect) in [
            (
                r#"{"scripts": [{"steps": [{"toolCalls": [{"name": "a.b"}]}], "finalText": "x"}]}"#,
                "unknown field `name`",
            ),
            (r#"{"scripts": [{"steps": [{"toolCalls": [{"input": {}}]}], "finalText": "x"}]}"#, "capability"),
            (r#"{"scripts": [{"match": 5, "finalText": "x"}]}"#, "a word or a list of words"),
        ] {
            let why = refusal(text);
            assert!(why.contains(expect), "{text}: {why}");
        }
        // An empty list of either is no call at all.
        let empty = r#"{"scripts": [{"steps": [{"text": "hi", "toolCalls": []}], "finalText": "x"}]}"#;
        let model = Scripted::from_json(empty).unwrap();
        assert!(ask(&model, vec![Message::user_text("go")]).tool_calls.is_empty());
    }

    #[test]
    fn the_demo_script_is_a_script() {
        assert!(Scripted::check(DEMO_SCRIPT).is_ok());
    }
}
