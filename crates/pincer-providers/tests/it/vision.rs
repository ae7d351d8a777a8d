//! Images in a user message, on both wire formats, against the mock
//! vendor server: sent as image content when the provider is configured
//! with `vision = true`, left out with a note the model sees when not.

#[cfg(feature = "anthropic")]
use crate::mock::named_events;
use crate::mock::{Mock, Reply, data_events};
use pincer_core::Message;
use pincer_core::message::Image;
use pincer_core::provider::{ChatRequest, Provider};
#[cfg(feature = "anthropic")]
use pincer_providers::AnthropicProvider;
use pincer_providers::OpenAiProvider;
use pincer_providers::config::ProviderKind;
use serde_json::json;

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn photo_request() -> ChatRequest<'static> {
    ChatRequest {
        system: "You are pincer.".into(),
        messages: vec![Message::user_with_images(
            "What is in this picture?",
            vec![Image {
                media_type: "image/png".into(),
                data: PNG.into(),
            }],
        )]
        .into(),
        tools: Vec::new().into(),
        max_tokens: 64,
    }
}

fn openai_stream() -> String {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    data_events(&[
        chunk(json!({"role": "assistant", "content": "A dot."}), None),
        chunk(json!({}), Some("stop")),
    ]) + "data: [DONE]\n\n"
}

#[cfg(feature = "anthropic")]
fn anthropic_stream() -> String {
    named_events(&[
        json!({"type": "message_start", "message": {"id": "m", "model": "claude-test", "usage": {"input_tokens": 5, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A dot."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ])
}

#[tokio::test]
async fn openai_sends_an_image_as_a_data_url_part() {
    let mock = Mock::start().await;
    mock.on("/v1/chat/completions", Reply::sse(openai_stream()));
    let mut cfg = mock.config(ProviderKind::Openai, "vis", "/v1");
    cfg.vision = true;
    let p = OpenAiProvider::new(&cfg, None).unwrap();
    assert!(p.caps().vision);
    let r = p.chat(&photo_request(), &|_| {}).await.unwrap();
    assert_eq!(r.content, "A dot.");
    let body = mock.only_request("/v1/chat/completions").body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
        ]})
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn openai_without_vision_says_the_image_was_left_out() {
    let mock = Mock::start().await;
    mock.on("/v1/chat/completions", Reply::sse(openai_stream()));
    let cfg = mock.config(ProviderKind::Openai, "text-only", "/v1");
    let p = OpenAiProvider::new(&cfg, None).unwrap();
    assert!(!p.caps().vision);
    p.chat(&photo_request(), &|_| {}).await.unwrap();
    let body = mock.only_request("/v1/chat/completions").body;
    let content = body["messages"][1]["content"].as_str().unwrap();
    assert!(content.starts_with("What is in this picture?"), "{content}");
    assert!(
        content.contains("1 image(s) not shown") && content.contains("`text-only`"),
        "{content}"
    );
    assert!(!body.to_string().contains(PNG), "no image bytes are sent");
}

#[cfg(feature = "anthropic")]
#[tokio::test]
async fn anthropic_sends_an_image_block_before_the_text() {
    let mock = Mock::start().await;
    mock.on("/v1/messages", Reply::sse(anthropic_stream()));
    let mut cfg = mock.config(ProviderKind::Anthropic, "claude", "");
    cfg.vision = true;
    let p = AnthropicProvider::new(&cfg, Some("sk-ant-test".into())).unwrap();
    assert!(p.caps().vision);
    let r = p.chat(&photo_request(), &|_| {}).await.unwrap();
    assert_eq!(r.content, "A dot.");
    let body = mock.only_request("/v1/messages").body;
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "text", "text": "What is in this picture?"},
        ]})
    );
    mock.assert_protocol_invariants();
}

#[cfg(feature = "anthropic")]
#[tokio::test]
async fn anthropic_without_vision_says_the_image_was_left_out() {
    let mock = Mock::start().await;
    mock.on("/v1/messages", Reply::sse(anthropic_stream()));
    let cfg = mock.config(ProviderKind::Anthropic, "claude", "");
    let p = AnthropicProvider::new(&cfg, Some("sk-ant-test".into())).unwrap();
    p.chat(&photo_request(), &|_| {}).await.unwrap();
    let body = mock.only_request("/v1/messages").body;
    let text = body["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("image(s) not shown"), "{text}");
    assert!(!body.to_string().contains(PNG));
}
