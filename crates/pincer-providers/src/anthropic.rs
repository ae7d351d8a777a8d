//! Anthropic Messages API, streaming (`POST {base_url}/v1/messages` with
//! `"stream": true`, headers `x-api-key` and `anthropic-version:
//! 2023-06-01`).
//!
//! Translation, pincer → wire: the system prompt is the top-level `system`;
//! a user message is `{role: "user", content: [{type: "text", text}]}`; an
//! assistant message is a `text` block (when non-empty) followed by one
//! `tool_use {id, name, input}` block per call; tool results become
//! `tool_result {tool_use_id, content}` blocks of a *user* message.
//! Anthropic requires all results answering one assistant turn in the one
//! next user message and roles that alternate, so adjacent messages that
//! map to the same role are merged into one, with `tool_result` blocks
//! first (the API wants them before any text). Empty text blocks are
//! dropped (the API rejects them). Tools are `{name, description,
//! input_schema}`.
//!
//! Wire → pincer: `message_start` gives the input tokens and the model;
//! `content_block_start` opens a `text` or `tool_use` block (id and name);
//! `content_block_delta` carries `text_delta` (sent to `on_text`) or
//! `input_json_delta.partial_json` (concatenated per block); `message_delta`
//! gives `stop_reason` (`end_turn`/`stop_sequence` → `Stop`, `tool_use` →
//! `ToolCalls`, `max_tokens` → `Length`, anything else → `Other`) and the
//! output tokens; `message_stop` ends the stream; `ping` and unknown events
//! are ignored. An `error` event maps like the HTTP status would:
//! `overloaded_error` → `Server` 529, `api_error` → `Server` 500,
//! `rate_limit_error` → `RateLimited`, the request errors → `Rejected`,
//! anything else → `Protocol`. A stream that ends with neither
//! `message_stop` nor a `stop_reason` is a `Transport` error. Tool input
//! that is not a JSON object is kept as `{"_raw": "<text>"}`.

use crate::config::ProviderConfig;
use crate::http::{self, Endpoint};
use crate::sse::SseEvent;
use pincer_core::message::{Message, Role, ToolCall};
use pincer_core::provider::{
    BoxFuture, ChatRequest, ChatResponse, FinishReason, Provider, ProviderCaps, ProviderError,
    Usage,
};
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::Duration;

pub use crate::config::defaults::ANTHROPIC_VERSION;

/// A client for the Anthropic Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    ep: Endpoint,
}

impl AnthropicProvider {
    /// Checks the configuration and builds the HTTP client. `base_url` is
    /// the API root (e.g. `https://api.anthropic.com`); a trailing `/v1` is
    /// accepted too.
    pub fn new(cfg: &ProviderConfig, api_key: Option<String>) -> Result<Self, ProviderError> {
        Ok(Self {
            ep: Endpoint::new(cfg, api_key)?,
        })
    }

    /// Overrides the configured timeout (whole seconds) with a finer one.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ProviderError> {
        self.ep.set_timeout(timeout)?;
        Ok(self)
    }

    async fn call(
        &self,
        req: &ChatRequest<'_>,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<ChatResponse, ProviderError> {
        let ep = &self.ep;
        let mut headers = HeaderMap::new();
        if let Some(key) = &ep.key {
            headers.insert("x-api-key", key.header(&ep.name, "")?);
        }
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        // The documented base URL is the API root; one that already ends
        // in `/v1` is taken as meant, not doubled into `/v1/v1`.
        let url = match ep.base_url.strip_suffix("/v1") {
            Some(root) => format!("{root}/v1/messages"),
            None => format!("{}/v1/messages", ep.base_url),
        };
        let stream = StreamState::new(&ep.name, &ep.model);
        ep.stream_chat(
            &url,
            headers,
            &request_body_for(&ep.name, &ep.model, ep.vision, req),
            stream,
            on_text,
        )
        .await
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        &self.ep.name
    }

    fn caps(&self) -> ProviderCaps {
        ProviderCaps {
            tools: true,
            streaming: true,
            vision: self.ep.vision,
        }
    }

    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            self.call(req, on_text)
                .await
                .map_err(|e| http::redact(e, self.ep.key.as_ref()))
        })
    }
}

/// The request body for `model` and `req` (a model without vision: images
/// are left out with a note).
pub fn request_body(model: &str, req: &ChatRequest<'_>) -> Value {
    request_body_for("", model, false, req)
}

/// The request body for provider `name`'s `model`; with `vision`, a user
/// message's images go as `image` blocks with a base64 source, ahead of
/// its text (as Anthropic recommends).
pub fn request_body_for(name: &str, model: &str, vision: bool, req: &ChatRequest<'_>) -> Value {
    let mut system = req.system.clone();
    // `Role::System` never reaches a provider (the agent folds it into
    // `system`); should one arrive, it is folded in here too.
    for m in req.messages.iter().filter(|m| m.role == Role::System) {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&m.content);
    }
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_tokens,
        "stream": true,
        "messages": wire_messages(name, vision, &req.messages),
    });
    if !system.is_empty() {
        body["system"] = Value::String(system);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
    }
    body
}

/// pincer messages as alternating Anthropic messages.
fn wire_messages(name: &str, vision: bool, messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User if vision => {
                let mut blocks: Vec<Value> = m
                    .images
                    .iter()
                    .map(|i| {
                        json!({"type": "image", "source": {
                            "type": "base64", "media_type": i.media_type, "data": i.data,
                        }})
                    })
                    .collect();
                blocks.extend(text_block(&m.content));
                ("user", blocks)
            }
            Role::User => (
                "user",
                text_block(&crate::images::text_without_images(name, m))
                    .into_iter()
                    .collect(),
            ),
            Role::Assistant => {
                let mut blocks: Vec<Value> = text_block(&m.content).into_iter().collect();
                blocks.extend(m.tool_calls.iter().map(|c| {
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
                }));
                ("assistant", blocks)
            }
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
                    "content": m.content,
                })],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, prev)) if *last == role => prev.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, mut blocks)| {
            // Stable: tool results keep their order, ahead of any text.
            blocks.sort_by_key(|b| b["type"] != "tool_result");
            json!({"role": role, "content": blocks})
        })
        .collect()
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {},
    MessageDelta {
        delta: MessageDeltaBody,
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    model: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

/// Anthropic counts a prompt in three parts: what was read from the cache,
/// what was written to it, and the rest (`input_tokens`). The prompt's size
/// is their sum; llama-server's Messages API reports `input_tokens: 1` for a
/// 1 780-token prompt served from its cache.
#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// The whole prompt, when any part of it was reported.
    fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        ];
        parts.iter().any(Option::is_some).then(|| {
            parts
                .iter()
                .flatten()
                .fold(0u64, |a, b| a.saturating_add(*b))
        })
    }
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

struct StreamState<'a> {
    provider: &'a str,
    model: String,
    content: String,
    blocks: BTreeMap<usize, Block>,
    stop_reason: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl http::WireStream for StreamState<'_> {
    fn on_event(
        &mut self,
        ev: &SseEvent,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<ControlFlow<()>, ProviderError> {
        StreamState::on_event(self, ev, on_text)
    }

    fn finish(self, done: bool) -> Result<ChatResponse, ProviderError> {
        StreamState::finish(self, done)
    }
}

impl<'a> StreamState<'a> {
    fn new(provider: &'a str, model: &str) -> Self {
        Self {
            provider,
            model: model.to_string(),
            content: String::new(),
            blocks: BTreeMap::new(),
            stop_reason: None,
            input_tokens: None,
            output_tokens: None,
        }
    }

    fn protocol(&self, message: String) -> ProviderError {
        ProviderError::Protocol {
            provider: self.provider.to_string(),
            message,
        }
    }

    fn text(&mut self, text: &str, on_text: &(dyn Fn(&str) + Send + Sync)) {
        if !text.is_empty() {
            on_text(text);
            self.content.push_str(text);
        }
    }

    fn on_event(
        &mut self,
        ev: &SseEvent,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<ControlFlow<()>, ProviderError> {
        let event: Event = http::parse_data(self.provider, &ev.data)?;
        match event {
            Event::MessageStart { message } => {
                if let Some(m) = message.model.filter(|m| !m.is_empty()) {
                    self.model = m;
                }
                if let Some(u) = message.usage {
                    self.input_tokens = u.input().or(self.input_tokens);
                    self.output_tokens = u.output_tokens.or(self.output_tokens);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    StartBlock::Text { text } => {
                        self.text(&text, on_text);
                        Block::Text
                    }
                    StartBlock::ToolUse { id, name } => Block::ToolUse {
                        id,
                        name,
                        json: String::new(),
                    },
                    StartBlock::Other => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            Event::ContentBlockDelta { index, delta } => match (self.blocks.get_mut(&index), delta)
            {
                (Some(Block::Text), BlockDelta::TextDelta { text }) => self.text(&text, on_text),
                (
                    Some(Block::ToolUse { json, .. }),
                    BlockDelta::InputJsonDelta { partial_json },
                ) => {
                    json.push_str(&partial_json);
                }
                (Some(Block::Other), _) | (_, BlockDelta::Other) => {}
                (None, _) => {
                    return Err(self.protocol(format!(
                        "a delta for content block {index}, which was never started"
                    )));
                }
                (Some(_), _) => {
                    return Err(self.protocol(format!(
                        "a delta of the wrong kind for content block {index}"
                    )));
                }
            },
            Event::MessageDelta { delta, usage } => {
                if let Some(r) = delta.stop_reason {
                    self.stop_reason = Some(r);
                }
                if let Some(u) = usage {
                    self.input_tokens = u.input().or(self.input_tokens);
                    self.output_tokens = u.output_tokens.or(self.output_tokens);
                }
            }
            Event::MessageStop {} => return Ok(ControlFlow::Break(())),
            Event::Error { error } => return Err(event_error(self.provider, error)),
            Event::ContentBlockStop {} | Event::Ping {} | Event::Unknown => {}
        }
        Ok(ControlFlow::Continue(()))
    }

    fn finish(self, done: bool) -> Result<ChatResponse, ProviderError> {
        let reason = match (self.stop_reason, done) {
            (Some(r), _) => r,
            (None, true) => "end_turn".to_string(),
            (None, false) => {
                return Err(ProviderError::Transport {
                    provider: self.provider.to_string(),
                    message: "the stream ended before the reply was complete (no stop_reason, no message_stop)"
                        .into(),
                });
            }
        };
        let tool_calls: Vec<ToolCall> = self
            .blocks
            .into_values()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, json } => Some(ToolCall {
                    id,
                    name,
                    arguments: http::arguments_raw(&json),
                }),
                Block::Text | Block::Other => None,
            })
            .collect();
        let finish = match reason.as_str() {
            "end_turn" | "stop_sequence" => FinishReason::Stop,
            "tool_use" => FinishReason::ToolCalls,
            "max_tokens" => FinishReason::Length,
            _ => FinishReason::Other,
        };
        let usage = (self.input_tokens.is_some() || self.output_tokens.is_some()).then(|| Usage {
            input_tokens: self.input_tokens.unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
        });
        Ok(ChatResponse {
            content: self.content,
            tool_calls,
            finish,
            usage,
            provider: self.provider.to_string(),
            model: self.model,
            attempts: Vec::new(),
        })
    }
}

/// An `error` event, mapped as its HTTP status would be.
fn event_error(provider: &str, e: WireError) -> ProviderError {
    let provider = provider.to_string();
    let message = if e.message.is_empty() {
        e.kind.clone()
    } else {
        e.message
    };
    let rejected = |status| ProviderError::Rejected {
        provider: provider.clone(),
        status,
        message: message.clone(),
    };
    match e.kind.as_str() {
        "overloaded_error" => ProviderError::Server {
            provider,
            status: 529,
            message,
        },
        "api_error" => ProviderError::Server {
            provider,
            status: 500,
            message,
        },
        "rate_limit_error" => ProviderError::RateLimited {
            provider,
            retry_after: None,
            message,
        },
        "invalid_request_error" => rejected(400),
        "authentication_error" => rejected(401),
        "permission_error" => rejected(403),
        "not_found_error" => rejected(404),
        "request_too_large" => rejected(413),
        other => ProviderError::Protocol {
            message: format!("{other}: {message}"),
            provider,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> Result<ChatResponse, ProviderError> {
        let on_text = |_: &str| {};
        let mut st = StreamState::new("a", "m");
        let mut done = false;
        for data in events {
            let ev = SseEvent {
                data: (*data).to_string(),
                ..SseEvent::default()
            };
            if st.on_event(&ev, &on_text)?.is_break() {
                done = true;
                break;
            }
        }
        st.finish(done)
    }

    #[test]
    fn error_events_map_to_decisions() {
        let err = |kind: &str| {
            run(&[&format!(
                r#"{{"type":"error","error":{{"type":"{kind}","message":"m"}}}}"#
            )])
            .expect_err("error event")
        };
        assert!(matches!(
            err("overloaded_error"),
            ProviderError::Server { status: 529, .. }
        ));
        assert!(err("overloaded_error").is_retryable());
        assert!(matches!(
            err("api_error"),
            ProviderError::Server { status: 500, .. }
        ));
        assert!(matches!(
            err("rate_limit_error"),
            ProviderError::RateLimited { .. }
        ));
        assert!(matches!(
            err("invalid_request_error"),
            ProviderError::Rejected { status: 400, .. }
        ));
        assert!(matches!(
            err("authentication_error"),
            ProviderError::Rejected { status: 401, .. }
        ));
        assert!(matches!(
            err("mystery_error"),
            ProviderError::Protocol { .. }
        ));
    }

    /// The prompt is the sum of its cached, cache-written and other parts.
    #[test]
    fn input_usage_counts_the_cache() {
        let r = run(&[
            r#"{"type":"message_start","message":{"model":"m","usage":{"input_tokens":1,"cache_read_input_tokens":1700,"cache_creation_input_tokens":79,"output_tokens":1}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":12}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .expect("ok");
        let u = r.usage.expect("usage");
        assert_eq!(u.input_tokens, 1780);
        assert_eq!(u.output_tokens, 12);
    }

    #[test]
    fn stop_reasons_and_incomplete_streams() {
        let stop = |reason: &str| {
            run(&[&format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":3}}}}"#
            )])
            .expect("ok")
            .finish
        };
        assert_eq!(stop("end_turn"), FinishReason::Stop);
        assert_eq!(stop("stop_sequence"), FinishReason::Stop);
        assert_eq!(stop("tool_use"), FinishReason::ToolCalls);
        assert_eq!(stop("max_tokens"), FinishReason::Length);
        assert_eq!(stop("refusal"), FinishReason::Other);
        let r = run(&[
            r#"{"type":"message_start","message":{"model":"m","usage":{"input_tokens":1}}}"#,
        ]);
        assert!(matches!(r, Err(ProviderError::Transport { .. })), "{r:?}");
        let r = run(&[
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#,
        ]);
        assert!(matches!(r, Err(ProviderError::Protocol { .. })), "{r:?}");
    }

    #[test]
    fn empty_tool_input_is_an_empty_object_and_unknown_events_pass() {
        let r = run(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"now","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"some_future_event","x":1}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .expect("ok");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].arguments.get(), "{}");
        assert_eq!(r.content, "");
        assert_eq!(r.usage, None);
    }

    #[test]
    fn merging_keeps_alternation_and_results_first() {
        let msgs = vec![
            Message::user("a"),
            Message::user("b"),
            Message::assistant_calls("", vec![ToolCall::new("t1", "x", &json!({}))]),
            Message::tool_result("t1", "x", "r1"),
            Message::user("c"),
            Message::assistant(""),
            Message::assistant("d"),
        ];
        let wire = wire_messages("", false, &msgs);
        assert_eq!(
            Value::Array(wire),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "r1"},
                    {"type": "text", "text": "c"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "d"}]},
            ])
        );
    }
}
