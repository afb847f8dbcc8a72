//! What the HTTP providers share: tool names the wire accepts (`[a-zA-Z0-9_-]`,
//! at most 64 characters) mapped to and from capability ids such as
//! `catalog.lookup`; a Server-Sent Events reader that buffers bytes so a
//! multi-byte character split across chunks is decoded whole; and retries
//! with backoff for rate limits and overloaded servers.

use std::collections::HashMap;
use std::time::Duration;

use super::{ProviderError, ToolSpec};

/// Capability ids ↔ names the model APIs accept.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolNames {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
    /// Each tool's schema as the APIs accept it (see [`super::schema`]).
    schemas: HashMap<String, super::schema::WireSchema>,
}

fn wire_name(id: &str) -> String {
    let mut name: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    name.truncate(64);
    name
}

impl ToolNames {
    /// The mapping for these tools; two ids that would share a wire name
    /// are refused rather than confused.
    pub fn new(tools: &[ToolSpec]) -> Result<ToolNames, ProviderError> {
        let mut names = ToolNames::default();
        for tool in tools {
            let wire = wire_name(&tool.name);
            if let Some(other) = names.from_wire.get(&wire) {
                return Err(ProviderError::Invalid(format!(
                    "tools {other} and {} have the same wire name {wire}",
                    tool.name
                )));
            }
            names.to_wire.insert(tool.name.clone(), wire.clone());
            names.from_wire.insert(wire, tool.name.clone());
            names.schemas.insert(tool.name.clone(), super::schema::for_wire(&tool.input_schema));
        }
        Ok(names)
    }

    /// The schema to send for tool `id`.
    pub fn schema<'a>(&'a self, id: &str, original: &'a serde_json::Value) -> &'a serde_json::Value {
        self.schemas.get(id).map(|w| &w.schema).unwrap_or(original)
    }

    /// A call's arguments as the capability takes them: unwrapped from
    /// `{"input": ...}` when its schema was wrapped for the wire.
    pub fn arguments(&self, id: &str, parsed: Result<serde_json::Value, String>) -> Result<serde_json::Value, String> {
        if !self.schemas.get(id).is_some_and(|w| w.wrapped) {
            return parsed;
        }
        match parsed? {
            serde_json::Value::Object(mut o) if o.contains_key("input") => Ok(o.remove("input").unwrap_or_default()),
            other => Err(format!("the arguments must be {{\"input\": ...}}, got {other}")),
        }
    }

    /// A call kept in the conversation, as the model sent it: wrapped back
    /// into `{"input": ...}` when its tool's schema was wrapped.
    pub(crate) fn wire_input(&self, id: &str, input: &serde_json::Value) -> serde_json::Value {
        if self.schemas.get(id).is_some_and(|w| w.wrapped) {
            serde_json::json!({ "input": input })
        } else {
            input.clone()
        }
    }

    pub fn wire<'a>(&'a self, id: &'a str) -> &'a str {
        self.to_wire.get(id).map(String::as_str).unwrap_or(id)
    }

    /// The capability id for a name the model used; unknown names pass
    /// through (the loop answers them as unknown tools).
    pub fn id<'a>(&'a self, wire: &'a str) -> &'a str {
        self.from_wire.get(wire).map(String::as_str).unwrap_or(wire)
    }
}

/// A tool's argument text, joined from the stream, as its input: an empty
/// text is `{}`; anything but a JSON object is an error the model is told
/// about, and the call is never run.
pub(crate) fn parse_tool_arguments(text: &str) -> Result<serde_json::Value, String> {
    let text = if text.trim().is_empty() { "{}" } else { text };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!("tool arguments must be a JSON object, got {other}")),
        Err(e) => Err(format!("tool arguments are not valid JSON: {e}")),
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Splits a byte stream into events.
#[derive(Default)]
pub struct SseReader {
    buffer: Vec<u8>,
}

impl SseReader {
    /// Adds bytes; returns the events now complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, sep)) = find_blank_line(&self.buffer) {
            let block: Vec<u8> = self.buffer.drain(..end + sep).collect();
            let text = String::from_utf8_lossy(&block[..end]);
            let mut event = SseEvent::default();
            let mut data = Vec::new();
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event.event = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                }
            }
            if !data.is_empty() || event.event.is_some() {
                event.data = data.join("\n");
                events.push(event);
            }
        }
        events
    }
}

fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    (0..buf.len()).find_map(|i| {
        if buf[i..].starts_with(b"\r\n\r\n") {
            Some((i, 4))
        } else if buf[i..].starts_with(b"\n\n") {
            Some((i, 2))
        } else {
            None
        }
    })
}

/// How failed requests are retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { attempts: 4, first_backoff: Duration::from_millis(500), max_backoff: Duration::from_secs(20) }
    }
}

impl RetryPolicy {
    /// The wait before attempt `n` (1-based retries), honouring a server's
    /// `Retry-After` seconds within the cap.
    pub fn backoff(&self, retry: u32, retry_after: Option<u64>) -> Duration {
        let doubled = self.first_backoff.saturating_mul(1 << retry.saturating_sub(1).min(10));
        retry_after.map(Duration::from_secs).unwrap_or(doubled).min(self.max_backoff)
    }
}

/// How much extended reasoning to ask for (`model.thinking_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Thinking {
    #[default]
    Off,
    Low,
    Medium,
    High,
}

impl Thinking {
    pub fn parse(level: &str) -> Result<Thinking, ProviderError> {
        Ok(match level {
            "off" => Thinking::Off,
            "low" => Thinking::Low,
            "medium" => Thinking::Medium,
            "high" => Thinking::High,
            other => {
                return Err(ProviderError::Invalid(format!(
                    "model.thinking_level must be off, low, medium or high, not {other}"
                )));
            }
        })
    }

    /// Tokens of reasoning the Messages API may spend (its minimum is 1024).
    pub fn budget_tokens(self) -> Option<u32> {
        match self {
            Thinking::Off => None,
            Thinking::Low => Some(2_048),
            Thinking::Medium => Some(8_192),
            Thinking::High => Some(24_576),
        }
    }

    /// Chat Completions' `reasoning_effort`.
    pub fn effort(self) -> Option<&'static str> {
        match self {
            Thinking::Off => None,
            Thinking::Low => Some("low"),
            Thinking::Medium => Some("medium"),
            Thinking::High => Some("high"),
        }
    }
}

/// What both HTTP providers hold: where the API is, which model, the key
/// (kept only for the request headers), the retry policy, the reasoning
/// level, and how long the server may take to answer and the stream may
/// go quiet.
pub struct Endpoint {
    pub base_url: String,
    pub model: String,
    pub(super) api_key: String,
    pub retry: RetryPolicy,
    pub thinking: Thinking,
    /// Longest wait for the response to begin (status and headers); a
    /// server that accepts the connection and says nothing is retried.
    pub response_timeout: Duration,
    /// Longest wait for the next piece of the stream.
    pub idle_timeout: Duration,
    client: reqwest::Client,
}

impl Endpoint {
    pub fn new(base_url: &str, model: &str, api_key: String) -> Result<Endpoint, ProviderError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| ProviderError::Invalid(e.to_string()))?;
        Ok(Endpoint {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key,
            retry: RetryPolicy::default(),
            thinking: Thinking::Off,
            response_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(120),
            client,
        })
    }

    /// Posts `body` to `path` (with the provider's own headers added by
    /// `headers`), retrying as the policy allows; the answer is a stream.
    pub async fn post(
        &self,
        path: &str,
        body: String,
        headers: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ProviderError> {
        let url = format!("{}{path}", self.base_url);
        let build = || {
            headers(self.client.post(&url)).header(reqwest::header::CONTENT_TYPE, "application/json").body(body.clone())
        };
        send_with_retries(build, self.retry, self.response_timeout).await
    }

    /// The next piece of a streamed answer; `None` when the body ended.
    pub(crate) async fn next_chunk(&self, resp: &mut reqwest::Response) -> Result<Option<bytes::Bytes>, ProviderError> {
        tokio::time::timeout(self.idle_timeout, resp.chunk())
            .await
            .map_err(|_| ProviderError::Unavailable("the stream went quiet for too long".into()))?
            .map_err(|e| ProviderError::Unavailable(format!("the stream broke: {e}")))
    }
}

/// Whether the answer is one JSON document rather than a stream: some
/// servers and gateways answer `stream: true` that way.
pub(crate) fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"))
}

/// Largest whole (not streamed) answer read.
const MAX_WHOLE_ANSWER: usize = 16 << 20;

impl Endpoint {
    /// Reads a whole JSON answer under the idle timeout and a size cap.
    pub(crate) async fn whole_json(&self, resp: &mut reqwest::Response) -> Result<serde_json::Value, ProviderError> {
        let mut body = Vec::new();
        while let Some(chunk) = self.next_chunk(resp).await? {
            if body.len() + chunk.len() > MAX_WHOLE_ANSWER {
                return Err(ProviderError::Unavailable(format!("the answer is over {MAX_WHOLE_ANSWER} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body)
            .map_err(|e| ProviderError::Unavailable(format!("the answer is not valid JSON: {e}")))
    }
}

/// Whether an HTTP status is worth retrying: rate limits, overload (529)
/// and server errors.
pub(crate) fn retryable(status: u16) -> bool {
    status == 429 || status == 529 || (500..600).contains(&status)
}

/// Sends a streaming request, retrying what [`retryable`] allows, and
/// returns the response whose body is to be streamed.
async fn send_with_retries(
    build: impl Fn() -> reqwest::RequestBuilder,
    policy: RetryPolicy,
    response_timeout: Duration,
) -> Result<reqwest::Response, ProviderError> {
    let mut retry = 0;
    loop {
        let outcome = tokio::time::timeout(response_timeout, build().send()).await;
        let (reason, retry_after) = match outcome {
            Err(_) => (format!("no answer within {} s", response_timeout.as_secs_f64()), None),
            Ok(Ok(resp)) if resp.status().is_success() => return Ok(resp),
            Ok(Ok(resp)) => {
                let status = resp.status().as_u16();
                let after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                let body: String = resp.text().await.unwrap_or_default().chars().take(300).collect();
                if !retryable(status) {
                    return Err(ProviderError::Invalid(format!("the provider refused the request ({status}): {body}")));
                }
                (format!("status {status}: {body}"), after)
            }
            Ok(Err(e)) if e.is_timeout() || e.is_connect() => (e.to_string(), None),
            Ok(Err(e)) => return Err(ProviderError::Unavailable(e.to_string())),
        };
        retry += 1;
        if retry >= policy.attempts {
            return Err(ProviderError::Unavailable(format!("gave up after {retry} attempts; last: {reason}")));
        }
        tokio::time::sleep(policy.backoff(retry, retry_after)).await;
    }
}
