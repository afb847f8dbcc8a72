//! Capability `notify.discord` (label execute): posts one notification to
//! the Discord channel of the operator's webhook (service `discord`) as an
//! embed — the title, the lines as its description, red when something
//! needs a person and green otherwise — with no mentions allowed, so a
//! title can never ping anyone. The webhook's id and token are the URL's
//! last segments; the host puts them there (a path credential) and the
//! component posts to `/`. Discord answers 204; a 429 asks to wait
//! `retry_after` seconds and is `unavailable`; a 401 or 404 means the
//! webhook was deleted or its URL mistyped.

#[cfg(test)]
mod tests;

use capstan_notify::{EventKind, NotifyInput, Posted, answered, post};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::Serialize;
use serde_json::{Value, json};

const SERVICE: &str = "discord";

/// An embed's colour: red for what needs a person, green otherwise.
const RED: u32 = 0xD9_3F_3F;
const GREEN: u32 = 0x3F_A8_5C;

/// Output: that Discord took it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivered {
    /// `discord`.
    pub target: String,
    /// The HTTP status Discord answered (204).
    pub status: u16,
}

/// The capability.
pub struct NotifyDiscord;

/// What Discord's answer means; its `message` says why it refused.
fn read(posted: &Posted) -> Result<(), Failure> {
    if (200..300).contains(&posted.status) {
        return Ok(());
    }
    let answer: Value = serde_json::from_slice(&posted.body).unwrap_or(Value::Null);
    let said = answer["message"].as_str().map(str::to_string).unwrap_or_else(|| {
        let text: String = String::from_utf8_lossy(&posted.body).chars().take(200).collect();
        text
    });
    let retry_after = posted.retry_after.clone().or_else(|| answer["retry_after"].as_f64().map(|s| format!("{s}")));
    match posted.status {
        401 | 404 => Err(Failure::Denied(format!(
            "Discord does not know the webhook ({} {said}): it was deleted or its URL is mistyped; paste it again \
             under Services and press Test",
            posted.status
        ))),
        status => answered("Discord", status, said.as_bytes(), retry_after.as_deref()),
    }
}

impl Capability for NotifyDiscord {
    type Input = NotifyInput;
    type Output = Delivered;

    const META: Meta = Meta {
        id: "notify.discord",
        version: 1,
        label: Label::Execute,
        summary: "Post a notification to a Discord channel through its webhook",
        description: "Posts one notification to the channel of the Discord webhook the operator connected (service discord) as an embed: the title, one line per event, red when a download failed or a decision waits. Mentions are off. The webhook's token is put in the URL by the host; the component never sees it. A 429 or 5xx answer is unavailable, to be tried again later; other refusals quote Discord's message.",
        tags: &["notify", "discord", "notification"],
        aliases: &["discord", "discord webhook", "notify", "推送通知"],
        replay: Replay::Safe,
        services: &[SERVICE],
    };

    fn invoke(input: NotifyInput) -> Result<Outcome<Delivered>, Failure> {
        input.check()?;
        let urgent =
            input.events.iter().any(|e| matches!(e.kind, EventKind::DownloadFailed | EventKind::DecisionWaiting));
        let embed = json!({
            "title": input.title, "description": input.message, "color": if urgent { RED } else { GREEN },
        });
        let body = json!({"username": "Capstan", "embeds": [embed], "allowed_mentions": {"parse": []}});
        let posted = post(SERVICE, "/", &body)?;
        read(&posted)?;
        Ok(Outcome::Succeeded(Delivered { target: SERVICE.into(), status: posted.status }))
    }
}

capstan_sdk::export_capability!(NotifyDiscord);
