//! Capability `notify.telegram` (label execute): sends one notification
//! as a Telegram message through the Bot API (service `telegram`:
//! `https://api.telegram.org`, or a local Bot API server), to the chat the
//! setting `chat_id` names. The bot's token is part of the Bot API's URL
//! (`/bot<token>/sendMessage`); the host puts it there (a path credential)
//! and the component sends to `/sendMessage` without ever seeing it. The
//! message is plain text (no parse mode, so nothing in a title needs
//! escaping), the title and the lines, cut to Telegram's 4096 characters.
//! Telegram's refusals carry a `description` ("Bad Request: chat not
//! found"), which the failure quotes; a 429 asks to wait `retry_after`
//! seconds and is `unavailable`, to be tried again.

#[cfg(test)]
mod tests;

use capstan_notify::{NotifyInput, Posted, answered, one_text, post};
use capstan_sdk::host::setting;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::Serialize;
use serde_json::{Value, json};

const SERVICE: &str = "telegram";

/// Longest message text Telegram takes.
const MAX_TEXT: usize = 4096;

/// Output: the chat and the message Telegram made.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    pub chat_id: String,
    /// The id Telegram gave the message, when it said.
    pub message_id: Option<i64>,
}

/// The capability.
pub struct NotifyTelegram;

/// A chat Telegram can be told to send to: a numeric id (negative for
/// groups and channels) or a public channel's `@username`.
fn chat_id() -> Result<String, Failure> {
    let chat = setting("chat_id").map(|t| t.trim().to_string()).unwrap_or_default();
    let digits = chat.strip_prefix('-').unwrap_or(&chat);
    let numeric = (1..=20).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit());
    let username = chat
        .strip_prefix('@')
        .is_some_and(|u| (5..=32).contains(&u.len()) && u.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    if numeric || username {
        Ok(chat)
    } else {
        Err(Failure::InvalidInput(
            "the setting chat_id must name a Telegram chat: its number (such as 123456789 or -1001234567890) \
             or a channel's @username"
                .into(),
        ))
    }
}

/// What Telegram's answer means; its `description` says why it refused.
fn read(posted: &Posted) -> Result<Option<i64>, Failure> {
    let answer: Value = serde_json::from_slice(&posted.body).unwrap_or(Value::Null);
    if (200..300).contains(&posted.status) && answer["ok"] == true {
        return Ok(answer["result"]["message_id"].as_i64());
    }
    let said = answer["description"].as_str().unwrap_or_default().to_string();
    let retry_after =
        posted.retry_after.clone().or_else(|| answer["parameters"]["retry_after"].as_i64().map(|s| s.to_string()));
    let status = if (200..300).contains(&posted.status) { 502 } else { posted.status };
    match status {
        400 | 403 => Err(Failure::InvalidInput(format!(
            "Telegram refused the message ({status}): {said}; check the chat id, and that the bot was started in \
             (or added to) that chat"
        ))),
        401 | 404 => Err(Failure::Denied(format!(
            "Telegram refused the bot token ({status} {said}): check it under Services and press Test"
        ))),
        _ => answered("Telegram", status, said.as_bytes(), retry_after.as_deref()).map(|()| None),
    }
}

impl Capability for NotifyTelegram {
    type Input = NotifyInput;
    type Output = Sent;

    const META: Meta = Meta {
        id: "notify.telegram",
        version: 1,
        label: Label::Execute,
        summary: "Send a notification as a Telegram message through the operator's bot",
        description: "Sends one notification (its title and one line per event) as a plain-text Telegram message to the chat the setting chat_id names, through the bot the operator connected (service telegram). The bot token is put in the Bot API's URL by the host; the component never sees it. A 429 or 5xx answer is unavailable, to be tried again later; other refusals quote Telegram's description.",
        tags: &["notify", "telegram", "notification"],
        aliases: &["telegram", "telegram bot", "notify", "电报", "推送通知"],
        replay: Replay::Safe,
        services: &[SERVICE],
    };

    fn invoke(input: NotifyInput) -> Result<Outcome<Sent>, Failure> {
        input.check()?;
        let chat_id = chat_id()?;
        let body = json!({
            "chat_id": chat_id, "text": one_text(&input, MAX_TEXT), "disable_web_page_preview": true,
        });
        let message_id = read(&post(SERVICE, "/sendMessage", &body)?)?;
        Ok(Outcome::Succeeded(Sent { chat_id, message_id }))
    }
}

capstan_sdk::export_capability!(NotifyTelegram);
