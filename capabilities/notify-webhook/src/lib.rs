//! Capability `notify.webhook` (label execute): sends one notification to
//! the operator's webhook (service `webhook`) as a JSON body —
//! `{"source": "capstan", "title", "message", "events": [...]}` — POSTed
//! to the path the setting `path` names (default `/`) under the service's
//! base URL. A credential, when the webhook takes one, is the host's
//! (a header it adds); the component never sees it. A 2xx answer is sent;
//! 429 and 5xx are `unavailable` (the notifier tries again later), any
//! other refusal says what the target answered.

#[cfg(test)]
mod tests;

use capstan_notify::{NotifyInput, post_json};
use capstan_sdk::host::setting;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::Serialize;
use serde_json::json;

const SERVICE: &str = "webhook";

/// Output: that it was delivered, and where.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    /// `webhook`.
    pub target: String,
    /// The HTTP status the webhook answered.
    pub status: u16,
}

/// The capability.
pub struct NotifyWebhook;

impl Capability for NotifyWebhook {
    type Input = NotifyInput;
    type Output = Sent;

    const META: Meta = Meta {
        id: "notify.webhook",
        version: 1,
        label: Label::Execute,
        summary: "Send a notification to the operator's webhook as a JSON body",
        description: "POSTs one notification (title, message and the events it is about: grabbed, imported, upgraded, download failed, a decision waiting, an agent run finished) as JSON to the webhook the operator connected (service webhook; the path is the setting path). Any credential is added by the host. A 429 or 5xx answer is unavailable, to be tried again later; other refusals say what the webhook answered.",
        tags: &["notify", "webhook", "notification"],
        aliases: &["send webhook", "notify", "通知", "推送通知"],
        // Sending twice is a duplicate message, not a second effect on the
        // library; a notifier that does not know tries again.
        replay: Replay::Safe,
        services: &[SERVICE],
    };

    fn invoke(input: NotifyInput) -> Result<Outcome<Sent>, Failure> {
        input.check()?;
        let path =
            setting("path").map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into());
        let body = json!({"source": "capstan", "title": input.title, "message": input.message, "events": input.events});
        let status = post_json(SERVICE, "the webhook", &path, &body)?;
        Ok(Outcome::Succeeded(Sent { target: SERVICE.into(), status }))
    }
}

capstan_sdk::export_capability!(NotifyWebhook);
