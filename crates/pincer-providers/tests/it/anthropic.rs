use crate::mock::{End, Mock, Reply, named_events};
use crate::{Deltas, simple_request, tool_round_trip_request};
use pincer_core::Message;
use pincer_core::provider::{FinishReason, Provider, ProviderError, Usage};
use pincer_providers::AnthropicProvider;
use pincer_providers::config::ProviderKind;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Notify;

const PATH: &str = "/v1/messages";

fn provider(mock: &Mock, key: Option<&str>) -> AnthropicProvider {
    let cfg = mock.config(ProviderKind::Anthropic, "claude", "");
    AnthropicProvider::new(&cfg, key.map(str::to_string)).unwrap()
}

fn message_start(input_tokens: u64) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "model": "claude-test-1", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}})
}

fn text_start(index: u64) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
}

fn text_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

fn tool_start(index: u64, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}

fn json_delta(index: u64, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": partial}})
}

fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop: &str, output_tokens: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

#[tokio::test]
async fn streams_text_and_parses_usage() {
    let mock = Mock::start().await;
    let parts = ["Hello", ", wor", "ld \u{1F980}"];
    let mut events = vec![message_start(25), text_start(0), json!({"type": "ping"})];
    events.extend(parts.iter().map(|p| text_delta(0, p)));
    events.extend([block_stop(0), message_delta("end_turn", 15), message_stop()]);
    mock.on(
        PATH,
        Reply::sse_chunked(named_events(&events), 11, End::Close),
    );
    let deltas = Deltas::default();
    let resp = provider(&mock, Some("sk-ant-test"))
        .chat(&simple_request(), &|t| deltas.push(t))
        .await
        .unwrap();

    assert_eq!(deltas.all(), parts);
    assert_eq!(resp.content, parts.concat());
    assert_eq!(resp.finish, FinishReason::Stop);
    assert_eq!(
        resp.usage,
        Some(Usage {
            input_tokens: 25,
            output_tokens: 15
        })
    );
    assert_eq!(resp.provider, "claude");
    assert_eq!(resp.model, "claude-test-1");

    let req = mock.only_request(PATH);
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(
        req.body,
        json!({
            "model": "test-model",
            "system": "You are pincer.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}],
            "max_tokens": 256,
            "stream": true,
        })
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn tool_call_round_trip_merges_consecutive_results() {
    let mock = Mock::start().await;
    let events = vec![
        message_start(300),
        text_start(0),
        text_delta(0, "Reading "),
        text_delta(0, "both."),
        block_stop(0),
        tool_start(1, "toolu_01", "file_read"),
        json_delta(1, ""),
        json_delta(1, "{\"path\": \"a"),
        json_delta(1, ".txt\"}"),
        block_stop(1),
        tool_start(2, "toolu_02", "file_read"),
        json_delta(2, "{\"path\":"),
        json_delta(2, " \"b.txt\"}"),
        block_stop(2),
        message_delta("tool_use", 88),
        message_stop(),
    ];
    mock.on(
        PATH,
        Reply::sse_chunked(named_events(&events), 5, End::Close),
    );
    let deltas = Deltas::default();
    // A base URL written with `/v1` reaches the same endpoint.
    let cfg = mock.config(ProviderKind::Anthropic, "claude", "/v1/");
    let resp = AnthropicProvider::new(&cfg, None)
        .unwrap()
        .chat(&tool_round_trip_request(), &|t| deltas.push(t))
        .await
        .unwrap();

    assert_eq!(deltas.all(), ["Reading ", "both."]);
    assert_eq!(resp.content, "Reading both.");
    assert_eq!(resp.finish, FinishReason::ToolCalls);
    let calls: Vec<(&str, &str, &str)> = resp
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.get()))
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_01", "file_read", r#"{"path": "a.txt"}"#),
            ("toolu_02", "file_read", r#"{"path": "b.txt"}"#),
        ]
    );
    assert_eq!(
        resp.usage,
        Some(Usage {
            input_tokens: 300,
            output_tokens: 88
        })
    );

    let body = mock.only_request(PATH).body;
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "system": "You are pincer.",
            "max_tokens": 512,
            "stream": true,
            "tools": [{
                "name": "file_read",
                "description": "Read a file in the workspace",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "What do notes.txt and todo.txt say?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "file_read", "input": {"path": "notes.txt"}},
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "buy milk"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Two more."},
                    {"type": "tool_use", "id": "c2", "name": "file_read", "input": {"path": "todo.txt"}},
                    {"type": "tool_use", "id": "c3", "name": "file_read", "input": {"path": "b.txt"}},
                ]},
                // Both results of that turn in ONE user message.
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c2", "content": "call mum"},
                    {"type": "tool_result", "tool_use_id": "c3", "content": "nothing"},
                ]},
            ],
        })
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn a_user_message_after_results_joins_them_after_the_results() {
    let mock = Mock::start().await;
    let events = vec![
        message_start(1),
        text_start(0),
        text_delta(0, "ok"),
        message_delta("end_turn", 1),
        message_stop(),
    ];
    mock.on(PATH, Reply::sse(named_events(&events)));
    let mut req = tool_round_trip_request();
    req.messages.to_mut().push(Message::user("Also, hurry."));
    provider(&mock, None).chat(&req, &|_| {}).await.unwrap();
    let body = mock.only_request(PATH).body;
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5, "{body}");
    assert_eq!(
        msgs[4],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c2", "content": "call mum"},
            {"type": "tool_result", "tool_use_id": "c3", "content": "nothing"},
            {"type": "text", "text": "Also, hurry."},
        ]})
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn error_events_and_statuses() {
    let mock = Mock::start().await;
    let overloaded = named_events(&[
        message_start(1),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]);
    mock.on(PATH, Reply::sse(overloaded))
        .on(
            PATH,
            Reply::json(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
        )
        .on(
            PATH,
            Reply::json(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages.1: `tool_use` ids must be unique"}}),
            ),
        )
        .on(
            PATH,
            Reply::json(429, json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}))
                .with_header("retry-after", "3"),
        );
    let p = provider(&mock, None);
    let mut errors = Vec::new();
    for _ in 0..4 {
        errors.push(p.chat(&simple_request(), &|_| {}).await.unwrap_err());
    }
    assert_eq!(
        errors[0],
        ProviderError::Server {
            provider: "claude".into(),
            status: 529,
            message: "Overloaded".into()
        }
    );
    assert!(errors[0].is_retryable());
    assert_eq!(
        errors[1],
        ProviderError::Server {
            provider: "claude".into(),
            status: 529,
            message: "Overloaded".into()
        }
    );
    assert_eq!(
        errors[2],
        ProviderError::Rejected {
            provider: "claude".into(),
            status: 400,
            message: "messages.1: `tool_use` ids must be unique".into()
        }
    );
    assert!(!errors[2].is_retryable());
    assert_eq!(
        errors[3],
        ProviderError::RateLimited {
            provider: "claude".into(),
            retry_after: Some(std::time::Duration::from_secs(3)),
            message: "Slow down".into()
        }
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn malformed_event_is_protocol_and_drop_is_transport() {
    let mock = Mock::start().await;
    let bad = named_events(&[message_start(1)])
        + "event: content_block_start\r\ndata: {\"type\": \"content_block_start\", \"index\": \r\n\r\n";
    mock.on(PATH, Reply::sse(bad));
    let partial = named_events(&[message_start(1), text_start(0), text_delta(0, "Hal")]);
    let got_text = Arc::new(Notify::new());
    mock.on(
        PATH,
        Reply::sse_chunked(partial, 64, End::DropAfter(got_text.clone())),
    );
    let p = provider(&mock, None);
    let err = p.chat(&simple_request(), &|_| {}).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Protocol { provider, .. } if provider == "claude"),
        "{err:?}"
    );
    let deltas = Deltas::default();
    let err = p
        .chat(&simple_request(), &|t| {
            deltas.push(t);
            got_text.notify_one();
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Transport { provider, .. } if provider == "claude"),
        "{err:?}"
    );
    assert_eq!(deltas.all(), ["Hal"]);
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn api_key_never_appears_in_errors_or_debug() {
    let key = "sk-ant-SECRET-abcdef";
    let mock = Mock::start().await;
    mock.on(
        PATH,
        Reply::json(401, json!({"type": "error", "error": {"type": "authentication_error", "message": format!("invalid x-api-key {key}")}})),
    );
    let p = provider(&mock, Some(key));
    let err = p.chat(&simple_request(), &|_| {}).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::Rejected { status: 401, .. }),
        "{err:?}"
    );
    assert_eq!(mock.only_request(PATH).header("x-api-key"), Some(key));
    for text in [err.to_string(), format!("{err:?}"), format!("{p:?}")] {
        assert!(!text.contains("SECRET"), "key leaked: {text}");
    }
    mock.assert_protocol_invariants();
}

/// A redirect to another host must not carry `x-api-key` there: redirects
/// are not followed at all, and the 3xx is a clear rejection.
#[tokio::test]
async fn a_redirect_is_not_followed_and_the_key_stays_home() {
    let elsewhere = Mock::start().await;
    elsewhere.on(PATH, Reply::json(200, json!({"stolen": true})));
    let mock = Mock::start().await;
    mock.on(
        PATH,
        Reply::status(307, "").with_header("location", &format!("{}{PATH}", elsewhere.url)),
    );
    let p = provider(&mock, Some("sk-ant-secret"));
    let err = p
        .chat(&simple_request(), &|_| {})
        .await
        .expect_err("a redirect is refused");
    assert!(
        matches!(&err, ProviderError::Rejected { status: 307, .. }),
        "{err}"
    );
    assert!(
        elsewhere.requests().is_empty(),
        "the key went to another host"
    );
    assert!(!err.to_string().contains("sk-ant-secret"));
}
