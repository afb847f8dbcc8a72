//! Compaction: when a request nears the context window
//! (`model.compaction.threshold_ratio` of `model.context_budget`), the
//! conversation before the latest tool transaction is replaced by a short
//! digest. What is always kept: the fixed prompt and the plan (both in the
//! system prompt, outside the messages), the user request being answered,
//! and the latest tool transaction (the model's last tool calls and their
//! results). When those alone do not fit the window, the request fails with
//! a clear error rather than dropping any of them.

use super::providers::{Block, Message, ModelRequest, Role};
use super::tokens::TokenCounter;

/// How many earlier answers a compacted history stands for, as the digest
/// says it (the scripted model reads this to keep its place).
pub const MARKER: &str = "earlier answers compacted";

/// Longest digest line for one dropped block.
const LINE_CHARS: usize = 160;

/// The outcome of a compaction check.
#[derive(Debug, PartialEq)]
pub enum Compaction {
    /// The request fits under the threshold as it is, in this many tokens.
    NotNeeded { tokens: usize },
    /// The new history, and the request's tokens before and after.
    Compacted { messages: Vec<Message>, before: usize, after: usize },
}

fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(LINE_CHARS).collect();
    if text.chars().count() > LINE_CHARS {
        out.push('…');
    }
    out.replace('\n', " ")
}

/// Where the latest tool transaction starts: the last assistant message
/// with tool calls, when the results after it end the history.
fn latest_transaction(messages: &[Message]) -> usize {
    let n = messages.len();
    if n >= 2
        && messages[n - 2].role == Role::Assistant
        && messages[n - 2].content.iter().any(|b| matches!(b, Block::ToolUse { .. }))
    {
        n - 2
    } else {
        n
    }
}

/// Checks `request`, which takes `before` tokens, against the window and
/// compacts its messages when due. `request_text` is the user request being
/// answered (kept whole).
pub fn compact(
    request: &ModelRequest,
    before: usize,
    request_text: &str,
    counter: &TokenCounter,
    window: usize,
    threshold_ratio: f64,
) -> Result<Compaction, String> {
    if (before as f64) <= window as f64 * threshold_ratio {
        return Ok(Compaction::NotNeeded { tokens: before });
    }
    let messages = &request.messages;
    let keep_from = latest_transaction(messages);
    let dropped = &messages[..keep_from];
    let answers = dropped.iter().filter(|m| m.role == Role::Assistant).count() + earlier_marker(dropped);
    let mut digest = format!("{request_text}\n\n[{answers} {MARKER}. What happened before, in short:]\n");
    for block in dropped.iter().flat_map(|m| &m.content) {
        let line = match block {
            Block::Text { text } if !text.trim().is_empty() && text != request_text && !text.contains(MARKER) => {
                format!("- said: {}", clip(text))
            }
            Block::ToolUse { name, input, .. } => format!("- called {name} with {}", clip(&input.to_string())),
            Block::ToolResult { content, is_error, .. } => {
                format!("- {}: {}", if *is_error { "failed" } else { "result" }, clip(content))
            }
            _ => continue,
        };
        digest.push_str(&line);
        digest.push('\n');
    }
    let mut compacted = vec![Message::user_text(digest)];
    compacted.extend(messages[keep_from..].iter().cloned());
    let mut trimmed = request.clone();
    trimmed.messages = compacted;
    let mut after = counter.count_request(&trimmed);
    if after > window {
        // The digest is the one thing that may go; what is kept must stay.
        trimmed.messages[0] = Message::user_text(format!("{request_text}\n\n[{answers} {MARKER}.]"));
        after = counter.count_request(&trimmed);
    }
    if after > window {
        return Err(format!(
            "the fixed prompt, the plan, the request and the latest tool transaction alone need about {after} tokens, \
             more than the context window of {window} (model.context_budget); nothing was dropped"
        ));
    }
    Ok(Compaction::Compacted { messages: trimmed.messages, before, after })
}

/// The count a digest already in the history stands for.
pub(crate) fn earlier_marker(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::Text { text } => marker_count(text),
            _ => None,
        })
        .sum()
}

/// `N` from "[N earlier answers compacted" in `text`.
pub(crate) fn marker_count(text: &str) -> Option<usize> {
    let at = text.find(MARKER)?;
    let head = text[..at].trim_end();
    let digits: String = head.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn assistant(blocks: Vec<Block>) -> Message {
        Message { role: Role::Assistant, content: blocks }
    }

    fn user(blocks: Vec<Block>) -> Message {
        Message { role: Role::User, content: blocks }
    }

    /// A conversation of `turns` tool transactions answering `asked`, each
    /// result `result_chars` long.
    fn conversation(asked: &str, turns: usize, result_chars: usize) -> ModelRequest {
        let mut messages = vec![Message::user_text(asked)];
        for i in 0..turns {
            messages.push(assistant(vec![
                Block::Text { text: format!("step {i}") },
                Block::ToolUse { id: format!("c{i}"), name: "inventory.query".into(), input: json!({"n": i}) },
            ]));
            messages.push(user(vec![Block::ToolResult {
                tool_use_id: format!("c{i}"),
                content: format!("result {i} {}", "x".repeat(result_chars)),
                is_error: false,
            }]));
        }
        ModelRequest {
            system: "You are Capstan's agent.".into(),
            messages,
            tools: std::sync::Arc::from([]),
            max_tokens: 1024,
        }
    }

    #[test]
    fn a_request_under_the_threshold_is_left_alone() {
        let counter = TokenCounter::for_provider("scripted");
        let request = conversation("what do I have?", 2, 10);
        let tokens = counter.count_request(&request);
        assert_eq!(
            compact(&request, tokens, "what do I have?", &counter, 100_000, 0.8),
            Ok(Compaction::NotNeeded { tokens })
        );
    }

    #[test]
    fn compaction_keeps_the_request_and_the_latest_transaction_and_counts_what_it_dropped() {
        let counter = TokenCounter::for_provider("scripted");
        let asked = "fetch Dune: Part Two";
        let request = conversation(asked, 6, 2_000);
        let tokens = counter.count_request(&request);
        let window = tokens / 2;
        let Ok(Compaction::Compacted { messages, before, after }) =
            compact(&request, tokens, asked, &counter, window, 0.8)
        else {
            panic!("a request over the threshold is compacted");
        };
        assert!(after < before && after <= window, "{before} → {after} within {window}");
        // The digest first: the request whole, then how many answers it stands for.
        let Block::Text { text: digest } = &messages[0].content[0] else { panic!("a digest") };
        assert!(digest.starts_with(asked), "{digest}");
        assert_eq!(marker_count(digest), Some(5), "five earlier answers were dropped: {digest}");
        // The latest tool transaction, untouched.
        assert_eq!(&messages[1..], &request.messages[request.messages.len() - 2..]);
        // Compacting again counts the earlier digest too.
        let mut next = request.clone();
        next.messages = messages;
        next.messages.extend(conversation(asked, 1, 2_000).messages.into_iter().skip(1));
        next.messages.extend(conversation(asked, 1, 2_000).messages.into_iter().skip(1));
        let tokens = counter.count_request(&next);
        let Ok(Compaction::Compacted { messages, .. }) = compact(&next, tokens, asked, &counter, window, 0.1) else {
            panic!("compacted again");
        };
        let Block::Text { text: digest } = &messages[0].content[0] else { panic!("a digest") };
        assert_eq!(marker_count(digest), Some(5 + 2), "{digest}");
    }

    #[test]
    fn what_must_be_kept_is_never_dropped_to_fit() {
        let counter = TokenCounter::for_provider("scripted");
        let asked = "fetch Dune: Part Two";
        // The latest result alone is larger than the window.
        let request = conversation(asked, 2, 40_000);
        let tokens = counter.count_request(&request);
        let error = compact(&request, tokens, asked, &counter, 1_000, 0.8).unwrap_err();
        assert!(error.contains("nothing was dropped") && error.contains("model.context_budget"), "{error}");
    }
}
