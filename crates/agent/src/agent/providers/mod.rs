//! Model providers behind one trait. A request carries the system prompt,
//! the conversation and the tools on offer; the answer streams back as
//! [`StreamEvent`]s (text deltas, complete tool calls, usage) through a
//! channel, and the call returns the whole [`Completion`]. Providers:
//! `anthropic` (Messages API), `openai-compatible` (Chat Completions), both
//! streaming with retries ([`wire`]), and `scripted` (deterministic JSON
//! scripts, for tests and the demo).

pub mod anthropic;
pub mod openai;
pub mod schema;
pub mod scripted;
pub mod wire;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: bool,
    },
    /// The model's extended reasoning, kept with its signature because the
    /// Messages API wants it back, unchanged, beside the tool calls it led to.
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Reasoning the provider returned encrypted; sent back as it came.
    RedactedThinking {
        data: String,
    },
}

impl Block {
    pub(crate) fn is_tool_result(&self) -> bool {
        matches!(self, Block::ToolResult { .. })
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Message {
        Message { role: Role::User, content: vec![Block::Text { text: text.into() }] }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// What is sent to the model.
#[derive(Debug, Clone, Default)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<Message>,
    /// Shared: a run offers the same tools step after step.
    pub tools: Arc<[ToolSpec]>,
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Refusal,
}

/// A tool call as the model made it. `input` is an error when the model
/// wrote arguments that are not a JSON object; such a call is answered with
/// a failed tool result and never executed.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Result<Value, String>,
}

/// Token counts the provider reported; absent when it did not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// What streams out while the model answers.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ToolCall(ToolCall),
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// Reasoning blocks, which go first in the answer when it is kept.
    pub reasoning: Vec<Block>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: StopReason,
    pub usage: Usage,
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the model request is invalid: {0}")]
    Invalid(String),
    #[error("the provider could not be reached or failed: {0}")]
    Unavailable(String),
    #[error("the request was cancelled")]
    Cancelled,
}

pub type CompletionFuture<'a> = Pin<Box<dyn Future<Output = Result<Completion, ProviderError>> + Send + 'a>>;

/// A model provider. Events are sent to `events` as they arrive (a closed
/// receiver is not an error); the returned completion holds everything.
pub trait Provider: Send + Sync {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::UnboundedSender<StreamEvent>,
    ) -> CompletionFuture<'a>;
}

/// The provider the settings name: `model.provider`, `model.base_url`,
/// `model.model`, and the `model.api_key` secret, decrypted here for the
/// client that sends it and nowhere else.
pub async fn from_settings(settings: &crate::settings::Settings) -> Result<Box<dyn Provider>, ProviderError> {
    let values = settings.snapshot().await.map_err(|e| ProviderError::Invalid(format!("settings: {e}")))?;
    from_snapshot(settings, &values).await
}

/// The same, from settings already read (`values`); only the secret is
/// read here.
pub(crate) async fn from_snapshot(
    settings: &crate::settings::Settings,
    values: &crate::settings::SettingsSnapshot,
) -> Result<Box<dyn Provider>, ProviderError> {
    let text = |v: serde_json::Value| v.as_str().map(str::to_string);
    let get = |key: &'static str| values.get(key).map_err(|e| ProviderError::Invalid(format!("setting {key}: {e}")));
    let provider = text(get("model.provider")?).unwrap_or_else(|| "scripted".into());
    if provider == "scripted" {
        return match text(get("model.script")?) {
            Some(script) => Ok(Box::new(scripted::Scripted::from_json(&script)?)),
            None => Ok(Box::new(scripted::Scripted::demo())),
        };
    }
    let model = text(get("model.model")?)
        .ok_or_else(|| ProviderError::Invalid(format!("model.model must be set for the {provider} provider")))?;
    let key = settings
        .secret("model.api_key")
        .await
        .map_err(|e| ProviderError::Invalid(format!("model.api_key: {e}")))?
        .ok_or_else(|| ProviderError::Invalid(format!("model.api_key must be set for the {provider} provider")))?;
    let base = text(get("model.base_url")?);
    let thinking = wire::Thinking::parse(&text(get("model.thinking_level")?).unwrap_or_else(|| "off".into()))?;
    match provider.as_str() {
        "anthropic" => {
            let base = base.unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string());
            let mut client = anthropic::Anthropic::new(&base, &model, key)?;
            client.endpoint.thinking = thinking;
            Ok(Box::new(client))
        }
        "openai-compatible" => {
            let base = base.ok_or_else(|| {
                ProviderError::Invalid("model.base_url must be set for the openai-compatible provider".into())
            })?;
            let mut client = openai::OpenAiCompatible::new(&base, &model, key)?;
            client.endpoint.thinking = thinking;
            Ok(Box::new(client))
        }
        other => Err(ProviderError::Invalid(format!("unknown model.provider {other}"))),
    }
}
