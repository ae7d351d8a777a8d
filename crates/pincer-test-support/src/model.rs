use pincer_core::ToolCall;
use pincer_core::provider::{
    BoxFuture, ChatRequest, ChatResponse, FinishReason, Provider, ProviderCaps, ProviderError,
    Usage,
};
use pincer_core::trim::{self, CharRatio, TokenCounter};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A final reply `t`.
pub fn text(t: &str) -> ChatResponse {
    ChatResponse {
        content: t.to_string(),
        tool_calls: Vec::new(),
        finish: FinishReason::Stop,
        usage: Some(Usage {
            input_tokens: 100,
            output_tokens: 10,
        }),
        provider: "test".into(),
        model: "m".into(),
        attempts: Vec::new(),
    }
}

/// A reply asking for these `(id, tool, arguments)` calls.
pub fn calls(list: &[(&str, &str, serde_json::Value)]) -> ChatResponse {
    ChatResponse {
        tool_calls: list
            .iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, args))
            .collect(),
        finish: FinishReason::ToolCalls,
        ..text("")
    }
}

/// A model that replays queued replies (then keeps asking for
/// `echo {"text": "more"}`), records every request, and asserts that each
/// one is valid for a real provider (no orphan tool call or result). It
/// reports usage as a chars/4 tokenizer would, so calibration holds, and
/// streams its text word by word.
#[derive(Debug)]
pub struct Model {
    replies: Mutex<VecDeque<ChatResponse>>,
    requests: Mutex<Vec<ChatRequest<'static>>>,
}

impl Model {
    pub fn new(replies: Vec<ChatResponse>) -> Arc<Model> {
        Arc::new(Model {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<ChatRequest<'static>> {
        self.requests.lock().unwrap().clone()
    }
}

impl Provider for Model {
    fn name(&self) -> &str {
        "test"
    }
    fn caps(&self) -> ProviderCaps {
        ProviderCaps {
            tools: true,
            streaming: true,
            vision: false,
        }
    }
    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            assert!(
                trim::is_repaired(&req.messages),
                "orphan in request: {req:?}"
            );
            self.requests.lock().unwrap().push(req.clone().into_owned());
            let reply = self.replies.lock().unwrap().pop_front();
            let mut reply =
                reply.unwrap_or_else(|| calls(&[("again", "echo", json!({"text": "more"}))]));
            let c = CharRatio::new(4.0);
            let input = c.text_tokens(&req.system)
                + req
                    .messages
                    .iter()
                    .map(|m| c.message_tokens(m))
                    .sum::<usize>();
            reply.usage = Some(Usage {
                input_tokens: input as u64,
                output_tokens: 10,
            });
            for word in reply.content.split_inclusive(' ') {
                on_text(word);
            }
            Ok(reply)
        })
    }
}
