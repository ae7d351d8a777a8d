//! The one integration test binary of pincer-providers: real HTTP against
//! an in-process mock vendor server (see `mock`).
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[cfg(feature = "anthropic")]
mod anthropic;
mod build;
mod invariants;
mod mock;
mod openai;
mod probe;
mod router;
mod vision;

use pincer_core::provider::{ChatRequest, ToolSpec};
use pincer_core::{Message, ToolCall};
use serde_json::json;
use std::sync::Mutex;

/// Collects `on_text` deltas.
#[derive(Debug, Default)]
pub struct Deltas(Mutex<Vec<String>>);

impl Deltas {
    pub fn push(&self, t: &str) {
        self.0.lock().unwrap().push(t.to_string());
    }
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

pub fn file_read_spec() -> ToolSpec {
    ToolSpec {
        name: "file_read".into(),
        description: "Read a file in the workspace".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

pub fn simple_request() -> ChatRequest<'static> {
    ChatRequest {
        system: "You are pincer.".into(),
        messages: vec![Message::user("Say hello.")].into(),
        tools: Vec::new().into(),
        max_tokens: 256,
    }
}

/// Two tool rounds: one call with no text, then two calls with text whose
/// two results arrive as consecutive tool messages.
pub fn tool_round_trip_request() -> ChatRequest<'static> {
    ChatRequest {
        system: "You are pincer.".into(),
        messages: vec![
            Message::user("What do notes.txt and todo.txt say?"),
            Message::assistant_calls(
                "",
                vec![ToolCall::new(
                    "c1",
                    "file_read",
                    &json!({"path": "notes.txt"}),
                )],
            ),
            Message::tool_result("c1", "file_read", "buy milk"),
            Message::assistant_calls(
                "Two more.",
                vec![
                    ToolCall::new("c2", "file_read", &json!({"path": "todo.txt"})),
                    ToolCall::new("c3", "file_read", &json!({"path": "b.txt"})),
                ],
            ),
            Message::tool_result("c2", "file_read", "call mum"),
            Message::tool_result("c3", "file_read", "nothing"),
        ]
        .into(),
        tools: vec![file_read_spec()].into(),
        max_tokens: 512,
    }
}
