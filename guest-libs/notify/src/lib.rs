//! `capstan-notify`: what every `notify.*` capability is given — one
//! message about one or more things that happened (several imports of a
//! sweep are one message) — its checks, and how each event reads in a
//! line. Each capability turns it into its target's request (a webhook's
//! JSON body, an ntfy post, ...); the target's credential is the host's.

use capstan_sdk::Failure;
use capstan_sdk::host::{Request, outbound};
use serde::{Deserialize, Serialize};

/// Longest title, message and event line taken.
pub const MAX_TITLE: usize = 200;
pub const MAX_MESSAGE: usize = 4000;
pub const MAX_LINE: usize = 500;
/// Most events one message carries.
pub const MAX_EVENTS: usize = 100;

/// What happened, as a person would be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A release was handed to the download client.
    Grabbed,
    /// A download's files were put in the library.
    Imported,
    /// A better file replaced one the library held.
    Upgraded,
    /// A download failed, stalled or never started.
    DownloadFailed,
    /// A decision waits for a person.
    DecisionWaiting,
    /// An agent run ended.
    RunFinished,
    /// A message sent to check the target (the console's Test).
    Test,
}

impl EventKind {
    /// How a message heads a list of these.
    pub fn heading(self) -> &'static str {
        match self {
            EventKind::Grabbed => "Grabbed",
            EventKind::Imported => "Imported",
            EventKind::Upgraded => "Upgraded",
            EventKind::DownloadFailed => "Download failed",
            EventKind::DecisionWaiting => "Waiting for you",
            EventKind::RunFinished => "Agent run finished",
            EventKind::Test => "Test",
        }
    }
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Event {
    pub kind: EventKind,
    /// What it is about: a title, a release, a decision.
    pub title: String,
    /// More, when there is more to say (a reason, a quality).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// When, in milliseconds since the Unix epoch.
    pub at: i64,
}

/// The input of every `notify.*` capability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotifyInput {
    /// The message's title, e.g. "Capstan: 3 imported".
    pub title: String,
    /// The message itself, plain text, one line per event.
    pub message: String,
    /// The events it is about, for targets that take structure.
    #[serde(default)]
    pub events: Vec<Event>,
}

fn bounded(field: &str, text: &str, max: usize) -> Result<(), Failure> {
    if text.chars().count() > max {
        return Err(Failure::InvalidInput(format!("{field} is longer than {max} characters")));
    }
    Ok(())
}

impl NotifyInput {
    /// `invalid-input` for an empty or oversized message.
    pub fn check(&self) -> Result<(), Failure> {
        if self.title.trim().is_empty() || self.message.trim().is_empty() {
            return Err(Failure::InvalidInput("a notification needs a title and a message".into()));
        }
        bounded("title", &self.title, MAX_TITLE)?;
        bounded("message", &self.message, MAX_MESSAGE)?;
        if self.events.len() > MAX_EVENTS {
            return Err(Failure::InvalidInput(format!("at most {MAX_EVENTS} events, not {}", self.events.len())));
        }
        for e in &self.events {
            bounded("an event's title", &e.title, MAX_LINE)?;
            bounded("an event's detail", e.detail.as_deref().unwrap_or_default(), MAX_LINE)?;
        }
        Ok(())
    }
}

/// What a target answered a POST.
pub struct Posted {
    pub status: u16,
    pub body: Vec<u8>,
    /// The wait its `Retry-After` asked for, as sent.
    pub retry_after: Option<String>,
}

/// POSTs `body` as JSON to `path` on `service`.
pub fn post(service: &str, path: &str, body: &serde_json::Value) -> Result<Posted, Failure> {
    let answer = outbound::write(Request {
        service: service.into(),
        method: "POST".into(),
        path: path.into(),
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: Some(body.to_string().into_bytes()),
        ..Request::default()
    })?;
    let retry_after =
        answer.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("retry-after")).map(|(_, v)| v.to_string());
    Ok(Posted { status: answer.status, body: answer.body, retry_after })
}

/// POSTs `body` as JSON to `path` on `service` (the target called
/// `target` in what it answers) and reads the answer as [`answered`];
/// the HTTP status when it was taken.
pub fn post_json(service: &str, target: &str, path: &str, body: &serde_json::Value) -> Result<u16, Failure> {
    let posted = post(service, path, body)?;
    answered(target, posted.status, &posted.body, posted.retry_after.as_deref())?;
    Ok(posted.status)
}

/// The message a title and text make for a target that takes one text,
/// cut to `max` characters (with `…` when cut).
pub fn one_text(input: &NotifyInput, max: usize) -> String {
    let text = format!("{}\n\n{}", input.title.trim(), input.message.trim());
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// What a target's answer means: 2xx is sent; 429 and 5xx are worth trying
/// again (`unavailable`, with the wait the target asked for); anything else
/// says the target refused it, with what it said.
pub fn answered(target: &str, status: u16, body: &[u8], retry_after: Option<&str>) -> Result<(), Failure> {
    let said: String = String::from_utf8_lossy(body).chars().take(200).collect();
    match status {
        200..=299 => Ok(()),
        429 => Err(Failure::Unavailable(format!(
            "{target} is rate limiting (429){}; the notification is sent again later",
            retry_after.map(|s| format!(", asking to wait {s} s")).unwrap_or_default()
        ))),
        500..=599 => Err(Failure::Unavailable(format!("{target} answered {status}: {said}"))),
        401 | 403 => Err(Failure::Denied(format!(
            "{target} refused the credential ({status}): check it under Services and press Test"
        ))),
        _ => Err(Failure::InvalidInput(format!("{target} refused the notification ({status}): {said}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(message: &str, events: usize) -> NotifyInput {
        let event = Event { kind: EventKind::Imported, title: "Dune (2021)".into(), detail: None, at: 1 };
        NotifyInput { title: "Capstan".into(), message: message.into(), events: vec![event; events] }
    }

    #[test]
    fn empty_and_oversized_messages_are_refused() {
        assert!(input("Imported Dune (2021)", 1).check().is_ok());
        assert!(input(" ", 1).check().is_err());
        assert!(input(&"x".repeat(MAX_MESSAGE + 1), 1).check().is_err());
        assert!(input("ok", MAX_EVENTS + 1).check().is_err());
    }

    #[test]
    fn one_text_is_cut_to_what_the_target_takes() {
        let short = input("Imported Dune (2021)", 1);
        assert_eq!(one_text(&short, 100), "Capstan\n\nImported Dune (2021)");
        let cut = one_text(&short, 12);
        assert_eq!((cut.chars().count(), cut.ends_with('…')), (12, true));
    }

    #[test]
    fn a_targets_answer_says_whether_to_try_again() {
        assert!(answered("ntfy", 200, b"", None).is_ok());
        let Err(Failure::Unavailable(m)) = answered("ntfy", 429, b"", Some("30")) else { panic!() };
        assert!(m.contains("30 s"), "{m}");
        assert!(matches!(answered("ntfy", 503, b"down", None), Err(Failure::Unavailable(_))));
        assert!(matches!(answered("ntfy", 401, b"", None), Err(Failure::Denied(_))));
        assert!(matches!(answered("ntfy", 400, b"bad topic", None), Err(Failure::InvalidInput(_))));
    }
}
