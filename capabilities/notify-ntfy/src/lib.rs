//! Capability `notify.ntfy` (label execute): publishes one notification to
//! an ntfy topic (service `ntfy`: ntfy.sh or a server of the operator's;
//! the topic is the setting `topic`) as ntfy's JSON publish — a POST to
//! the server's root with the topic, title, message, tags for what
//! happened (`inbox_tray` for an import, `warning` for a failure, ...) and
//! a higher priority for what needs a person — so titles in any language
//! need no header encoding. An access token, when the topic is protected,
//! is the host's (`Authorization: Bearer`). A 2xx answer is sent; 429
//! (ntfy's rate limit) and 5xx are `unavailable`, to be tried again later.

#[cfg(test)]
mod tests;

use capstan_notify::{EventKind, NotifyInput, post_json};
use capstan_sdk::host::setting;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::Serialize;
use serde_json::json;

const SERVICE: &str = "ntfy";

/// Output: that it was published, and to which topic.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    pub topic: String,
    /// The HTTP status ntfy answered.
    pub status: u16,
}

/// The capability.
pub struct NotifyNtfy;

/// ntfy's tag (an emoji short code) for a kind of event.
fn tag(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Grabbed => "arrow_down",
        EventKind::Imported => "inbox_tray",
        EventKind::Upgraded => "arrow_up",
        EventKind::DownloadFailed => "warning",
        EventKind::DecisionWaiting => "raising_hand",
        EventKind::RunFinished => "robot",
        EventKind::Test => "white_check_mark",
    }
}

/// A topic ntfy takes: letters, digits, `-` and `_`, 1 to 64 of them.
fn topic() -> Result<String, Failure> {
    let topic = setting("topic").map(|t| t.trim().to_string()).unwrap_or_default();
    let fits = !topic.is_empty()
        && topic.len() <= 64
        && topic.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fits {
        Ok(topic)
    } else {
        Err(Failure::InvalidInput("the setting topic must name an ntfy topic: 1 to 64 letters, digits, - or _".into()))
    }
}

impl Capability for NotifyNtfy {
    type Input = NotifyInput;
    type Output = Published;

    const META: Meta = Meta {
        id: "notify.ntfy",
        version: 1,
        label: Label::Execute,
        summary: "Publish a notification to an ntfy topic",
        description: "Publishes one notification to the ntfy topic the operator connected (service ntfy, setting topic): as ntfy's JSON publish: the title, the message, a tag for each kind of event and a higher priority for a download failure or a decision waiting for a person. An access token is added by the host. A 429 or 5xx answer is unavailable, to be tried again later; other refusals say what ntfy answered.",
        tags: &["notify", "ntfy", "notification"],
        aliases: &["ntfy", "push notification", "notify", "推送通知"],
        replay: Replay::Safe,
        services: &[SERVICE],
    };

    fn invoke(input: NotifyInput) -> Result<Outcome<Published>, Failure> {
        input.check()?;
        let topic = topic()?;
        let mut tags: Vec<&str> = input.events.iter().map(|e| tag(e.kind)).collect();
        tags.sort_unstable();
        tags.dedup();
        let urgent =
            input.events.iter().any(|e| matches!(e.kind, EventKind::DownloadFailed | EventKind::DecisionWaiting));
        let body = json!({
            "topic": topic, "title": input.title, "message": input.message, "tags": tags,
            "priority": if urgent { 4 } else { 3 },
        });
        let status = post_json(SERVICE, "ntfy", "/", &body)?;
        Ok(Outcome::Succeeded(Published { topic, status }))
    }
}

capstan_sdk::export_capability!(NotifyNtfy);
