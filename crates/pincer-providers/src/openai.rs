//! OpenAI-compatible chat completions, streaming (`POST
//! {base_url}/chat/completions` with `"stream": true`).
//!
//! One implementation serves OpenAI, llama.cpp's `llama-server`, Ollama,
//! vLLM and OpenRouter: vendors differ only in data (base URL, model,
//! headers, whether there is a key).
//!
//! Translation, pincer → wire: the system prompt is the first `system`
//! message; an assistant message's tool calls become `tool_calls` entries
//! whose `function.arguments` is the JSON text as a string, with `content:
//! null` when the assistant said nothing; a tool result is `{role: "tool",
//! tool_call_id, content}`; tools are `{type: "function", function: {name,
//! description, parameters}}`, and `tools` is omitted when there are none.
//!
//! Wire → pincer: `choices[0].delta.content` deltas go to `on_text` as they
//! arrive; `delta.tool_calls` fragments are keyed by `index` (id and name in
//! the first fragment, `function.arguments` strings concatenated); the
//! final chunk's `usage` is kept; `data: [DONE]` ends the stream.
//!
//! Leniency, each for a real server: a fragment without `index` is taken by
//! its position; a call without an `id` gets `call_<index>`; a turn with
//! tool calls whose `finish_reason` is `stop` is reported as `ToolCalls`;
//! arguments that are not a JSON object are kept as `{"_raw": "<text>"}`.
//! A stream that ends with neither `[DONE]` nor a `finish_reason` is a
//! `Transport` error (the connection dropped); an event that is not JSON is
//! a `Protocol` error; an `error` object inside the stream (OpenRouter) is
//! a `Server` error unless its `code` says 4xx.

use crate::config::ProviderConfig;
use crate::http::{self, Endpoint};
use crate::sse::SseEvent;
use pincer_core::message::{Message, Role, ToolCall};
use pincer_core::provider::{
    BoxFuture, ChatRequest, ChatResponse, FinishReason, Provider, ProviderCaps, ProviderError,
    Usage,
};
use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::Duration;

/// A client for one OpenAI-compatible endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    ep: Endpoint,
}

impl OpenAiProvider {
    /// Checks the configuration (base URL scheme, header syntax, a key when
    /// `api_key_env` is set) and builds the HTTP client.
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
            headers.insert(AUTHORIZATION, key.header(&ep.name, "Bearer ")?);
        }
        let url = format!("{}/chat/completions", ep.base_url);
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

impl Provider for OpenAiProvider {
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
/// message's images go as `image_url` parts holding a `data:` URL.
pub fn request_body_for(name: &str, model: &str, vision: bool, req: &ChatRequest<'_>) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    messages.extend(req.messages.iter().map(|m| wire_message(name, vision, m)));
    let mut body = json!({
        "model": model,
        "messages": messages,
        "max_tokens": req.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                }})
            })
            .collect();
    }
    body
}

fn wire_message(name: &str, vision: bool, m: &Message) -> Value {
    match m.role {
        // Never sent by the agent (the system prompt is `ChatRequest::system`),
        // but passed on faithfully if it is.
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User if vision && !m.images.is_empty() => {
            let mut parts = Vec::with_capacity(m.images.len() + 1);
            if !m.content.is_empty() {
                parts.push(json!({"type": "text", "text": m.content}));
            }
            parts.extend(m.images.iter().map(|i| {
                json!({"type": "image_url", "image_url": {
                    "url": format!("data:{};base64,{}", i.media_type, i.data),
                }})
            }));
            json!({"role": "user", "content": parts})
        }
        Role::User => json!({
            "role": "user",
            "content": crate::images::text_without_images(name, m),
        }),
        Role::Assistant if m.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": m.content})
        }
        Role::Assistant => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function", "function": {
                        "name": c.name,
                        "arguments": c.arguments.get(),
                    }})
                })
                .collect();
            let content = if m.content.is_empty() {
                Value::Null
            } else {
                Value::String(m.content.clone())
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.as_deref().unwrap_or_default(),
            "content": m.content,
        }),
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    model: Option<String>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Deserialize)]
struct CallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// What the stream has said so far.
struct StreamState<'a> {
    provider: &'a str,
    model: String,
    content: String,
    calls: BTreeMap<usize, PartialCall>,
    finish: Option<String>,
    usage: Option<Usage>,
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
            calls: BTreeMap::new(),
            finish: None,
            usage: None,
        }
    }

    fn on_event(
        &mut self,
        ev: &SseEvent,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<ControlFlow<()>, ProviderError> {
        if ev.data.trim() == "[DONE]" {
            return Ok(ControlFlow::Break(()));
        }
        let chunk: Chunk = http::parse_data(self.provider, &ev.data)?;
        if let Some(err) = chunk.error {
            return Err(stream_error(self.provider, &err));
        }
        if let Some(m) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = m;
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
            });
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    on_text(&text);
                    self.content.push_str(&text);
                }
                for (pos, frag) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                    let call = self.calls.entry(frag.index.unwrap_or(pos)).or_default();
                    if let Some(id) = frag.id.filter(|id| !id.is_empty()) {
                        call.id = Some(id);
                    }
                    if let Some(f) = frag.function {
                        if let Some(name) = f.name {
                            // Names arrive whole in the first fragment; a
                            // server that splits them is joined too.
                            call.name.push_str(&name);
                        }
                        if let Some(args) = f.arguments {
                            call.arguments.push_str(&args);
                        }
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    fn finish(self, done: bool) -> Result<ChatResponse, ProviderError> {
        let Some(reason) = self.finish.or_else(|| done.then(|| "stop".to_string())) else {
            return Err(ProviderError::Transport {
                provider: self.provider.to_string(),
                message:
                    "the stream ended before the reply was complete (no finish_reason, no [DONE])"
                        .into(),
            });
        };
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(ProviderError::Protocol {
                    provider: self.provider.to_string(),
                    message: format!("tool call at index {index} has no function name"),
                });
            }
            tool_calls.push(ToolCall {
                // A server that sends no id: make one unique across the
                // session (Anthropic, later in a fallback chain, rejects
                // repeated tool_use ids).
                id: call.id.unwrap_or_else(|| {
                    format!(
                        "call_{}_{index}",
                        pincer_core::message::Timestamp::now().as_millis()
                    )
                }),
                name: call.name,
                arguments: http::arguments_raw(&call.arguments),
            });
        }
        let finish = match reason.as_str() {
            _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
            "stop" => FinishReason::Stop,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            _ => FinishReason::Other,
        };
        Ok(ChatResponse {
            content: self.content,
            tool_calls,
            finish,
            usage: self.usage,
            provider: self.provider.to_string(),
            model: self.model,
            attempts: Vec::new(),
        })
    }
}

/// An `error` object sent inside a 200 stream (OpenRouter does this when
/// the upstream fails after the headers went out).
fn stream_error(provider: &str, err: &Value) -> ProviderError {
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| http::truncate(&err.to_string()));
    let code = err
        .get("code")
        .and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        })
        .and_then(|c| u16::try_from(c).ok());
    let provider = provider.to_string();
    match code {
        Some(429) => ProviderError::RateLimited {
            provider,
            retry_after: None,
            message,
        },
        Some(status @ 400..=499) => ProviderError::Rejected {
            provider,
            status,
            message,
        },
        status => ProviderError::Server {
            provider,
            status: status.filter(|s| *s >= 500).unwrap_or(500),
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> (Vec<String>, Result<ChatResponse, ProviderError>) {
        let seen = std::sync::Mutex::new(Vec::new());
        let on_text = |t: &str| {
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(t.to_string())
        };
        let mut st = StreamState::new("p", "m");
        let mut done = false;
        for data in events {
            let ev = SseEvent {
                data: (*data).to_string(),
                ..SseEvent::default()
            };
            match st.on_event(&ev, &on_text) {
                Ok(ControlFlow::Break(())) => {
                    done = true;
                    break;
                }
                Ok(ControlFlow::Continue(())) => {}
                Err(e) => return (Vec::new(), Err(e)),
            }
        }
        let r = st.finish(done);
        (seen.into_inner().unwrap_or_default(), r)
    }

    #[test]
    fn fragments_without_index_or_id_and_stop_with_calls() {
        let (_, r) = run(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"a","arguments":"{\"x\":1}"}},{"function":{"name":"b","arguments":""}}]},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        let r = r.expect("ok");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.tool_calls.len(), 2);
        let id = &r.tool_calls[0].id;
        assert!(id.starts_with("call_") && id.ends_with("_0"), "{id}");
        assert_eq!(r.tool_calls[0].arguments.get(), r#"{"x":1}"#);
        assert_eq!(r.tool_calls[1].arguments.get(), "{}");
    }

    #[test]
    fn finish_reasons_and_done_without_finish() {
        let fin = |reason: &str| {
            let ev =
                format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#);
            run(&[&ev]).1.expect("ok").finish
        };
        assert_eq!(fin("stop"), FinishReason::Stop);
        assert_eq!(fin("length"), FinishReason::Length);
        assert_eq!(fin("content_filter"), FinishReason::Other);
        let (_, r) = run(&[
            r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(r.expect("ok").finish, FinishReason::Stop);
        let (_, r) = run(&[r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#]);
        assert!(matches!(r, Err(ProviderError::Transport { .. })), "{r:?}");
    }

    #[test]
    fn in_stream_errors() {
        let (_, r) = run(&[r#"{"error":{"message":"upstream died","code":502}}"#]);
        assert!(
            matches!(&r, Err(ProviderError::Server { status: 502, message, .. }) if message == "upstream died"),
            "{r:?}"
        );
        let (_, r) = run(&[r#"{"error":{"message":"no","code":"400"}}"#]);
        assert!(
            matches!(r, Err(ProviderError::Rejected { status: 400, .. })),
            "{r:?}"
        );
        let (_, r) = run(&[r#"{"error":{"message":"slow down","code":429}}"#]);
        assert!(matches!(r, Err(ProviderError::RateLimited { .. })), "{r:?}");
        let (_, r) = run(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c"}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert!(matches!(r, Err(ProviderError::Protocol { .. })), "{r:?}");
    }

    #[test]
    fn other_choices_are_ignored() {
        let (seen, r) = run(&[
            r#"{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(seen, vec!["yes"]);
        assert_eq!(r.expect("ok").content, "yes");
    }
}
