//! The seam between the agent and a language model (PR1).
//!
//! Implementations live in `pincer-providers`; this module only defines what
//! the agent asks for and what it gets back, in pincer's own types. Vendor
//! JSON never crosses this seam.

use crate::message::{Message, ToolCall};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future, so `Provider` and `Tool` can be used as trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One request for one model turn. It borrows the conversation and the
/// tool list where it can: the agent builds one per model call, and copying
/// a long session each time would cost more than everything else it does.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest<'a> {
    /// System prompt (skills, pinned memory, running summary already folded in).
    pub system: String,
    /// The conversation, already trimmed and repaired: no orphan tool call
    /// or result, never a `Role::System` message (that goes in `system`).
    pub messages: Cow<'a, [Message]>,
    pub tools: Cow<'a, [ToolSpec]>,
    /// Cap on the reply's tokens (the output reserve).
    pub max_tokens: u32,
}

impl ChatRequest<'_> {
    /// A copy that owns everything (to keep a request past its borrows).
    pub fn into_owned(self) -> ChatRequest<'static> {
        ChatRequest {
            system: self.system,
            messages: Cow::Owned(self.messages.into_owned()),
            tools: Cow::Owned(self.tools.into_owned()),
            max_tokens: self.max_tokens,
        }
    }
}

/// Token usage as the provider reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A final answer.
    Stop,
    /// It asks for tool calls.
    ToolCalls,
    /// It ran out of `max_tokens`.
    Length,
    /// Anything else the vendor said (content filter…).
    Other,
}

/// One assembled model turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish: FinishReason,
    pub usage: Option<Usage>,
    /// Which configured provider answered (the router sets the final name).
    pub provider: String,
    pub model: String,
    /// The attempts that failed before this answer (a provider down, a
    /// retried 500…), oldest first: fallback is never silent.
    pub attempts: Vec<FailedAttempt>,
}

/// One call to one provider that did not answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedAttempt {
    pub provider: String,
    /// 0 for the first try on this provider, 1 for the first retry…
    pub retry: u32,
    /// How long the router waited before this attempt, in milliseconds.
    pub waited_ms: u64,
    /// What went wrong, in words.
    pub error: String,
}

/// What a provider can do, as data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ProviderCaps {
    pub tools: bool,
    pub streaming: bool,
    pub vision: bool,
}

/// A failed model call. The variant is the decision the router makes (PR2):
/// `Transport`, `Timeout`, `RateLimited` and `Server` go to the next
/// provider after bounded retries; `Rejected` and `Protocol` stop.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    #[error("{provider}: cannot reach the server: {message}")]
    Transport { provider: String, message: String },
    #[error("{provider}: timed out after {after:?}")]
    Timeout { provider: String, after: Duration },
    #[error("{provider}: rate limited (429){}: {message}", retry_after.map(|d| format!(", retry after {d:?}")).unwrap_or_default())]
    RateLimited {
        provider: String,
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("{provider}: server error {status}: {message}")]
    Server {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider}: request rejected with {status}: {message}")]
    Rejected {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider}: malformed response: {message}")]
    Protocol { provider: String, message: String },
    #[error("{provider}: not configured: {message}")]
    Config { provider: String, message: String },
    /// Every provider of a fallback chain failed; `attempts` says how,
    /// oldest first, and `last` is the final error.
    #[error("every provider failed ({} attempts); the last: {last}", attempts.len())]
    Exhausted {
        provider: String,
        attempts: Vec<FailedAttempt>,
        last: Box<ProviderError>,
    },
}

impl ProviderError {
    /// The attempts that failed, when a router gave up.
    pub fn attempts(&self) -> &[FailedAttempt] {
        match self {
            ProviderError::Exhausted { attempts, .. } => attempts,
            _ => &[],
        }
    }

    /// True when the next provider in the fallback chain should be tried.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::Transport { .. }
                | ProviderError::Timeout { .. }
                | ProviderError::RateLimited { .. }
                | ProviderError::Server { .. }
        )
    }
}

/// A language model endpoint. Streaming first: text arrives through
/// `on_text` as it is generated, and the assembled turn is returned.
/// Dropping the future cancels the call.
pub trait Provider: Send + Sync {
    /// The configured name (e.g. `local`, `openai`), recorded on messages.
    fn name(&self) -> &str;
    fn caps(&self) -> ProviderCaps;
    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
}
