use crate::mock::{End, Mock, Reply, data_events};
use crate::{Deltas, simple_request, tool_round_trip_request};
use pincer_core::provider::{FinishReason, Provider, ProviderError, Usage};
use pincer_providers::OpenAiProvider;
use pincer_providers::config::ProviderKind;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

const PATH: &str = "/v1/chat/completions";

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test-0613",
           "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
}

fn usage_chunk(prompt: u64, completion: u64) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test-0613",
           "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
}

fn text_stream(parts: &[&str]) -> String {
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    events.extend(parts.iter().map(|p| chunk(json!({"content": p}), None)));
    events.push(chunk(json!({}), Some("stop")));
    events.push(usage_chunk(12, 5));
    data_events(&events) + "data: [DONE]\n\n"
}

fn provider(mock: &Mock, key: Option<&str>) -> OpenAiProvider {
    let mut cfg = mock.config(ProviderKind::Openai, "local", "/v1");
    cfg.headers
        .insert("HTTP-Referer".into(), "https://pincer.invalid".into());
    OpenAiProvider::new(&cfg, key.map(str::to_string)).unwrap()
}

#[tokio::test]
async fn streams_deltas_in_order_and_parses_usage() {
    let mock = Mock::start().await;
    let parts = ["Hel", "lo, w", "orld ", "\u{e9}\u{1F980}!"];
    // 7-byte chunks split lines, JSON and the multi-byte characters.
    mock.on(PATH, Reply::sse_chunked(text_stream(&parts), 7, End::Close));
    let p = provider(&mock, Some("sk-test"));
    let deltas = Deltas::default();
    let resp = p
        .chat(&simple_request(), &|t| deltas.push(t))
        .await
        .unwrap();

    assert_eq!(deltas.all(), parts);
    assert_eq!(resp.content, parts.concat());
    assert_eq!(resp.finish, FinishReason::Stop);
    assert_eq!(
        resp.usage,
        Some(Usage {
            input_tokens: 12,
            output_tokens: 5
        })
    );
    assert_eq!(resp.provider, "local");
    assert_eq!(resp.model, "gpt-test-0613");
    assert!(resp.tool_calls.is_empty());

    let req = mock.only_request(PATH);
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(req.header("http-referer"), Some("https://pincer.invalid"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(
        req.body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are pincer."},
                {"role": "user", "content": "Say hello."},
            ],
            "max_tokens": 256,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let mock = Mock::start().await;
    mock.on(PATH, Reply::sse(text_stream(&["ok"])));
    let resp = provider(&mock, None)
        .chat(&simple_request(), &|_| {})
        .await
        .unwrap();
    assert_eq!(resp.content, "ok");
    assert_eq!(mock.only_request(PATH).header("authorization"), None);
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn tool_call_round_trip() {
    let mock = Mock::start().await;
    let tc = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut call = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        chunk(json!({"tool_calls": [call]}), None)
    };
    let events = vec![
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(json!({"content": "Checking "}), None),
        chunk(json!({"content": "both."}), None),
        tc(0, Some("call_a"), Some("file_read"), ""),
        tc(0, None, None, "{\"pa"),
        tc(1, Some("call_b"), Some("shell"), "{\"cmd\":"),
        tc(0, None, None, "th\": \"a.txt\"}"),
        tc(1, None, None, "\"ls\"}"),
        tc(2, Some("call_c"), Some("file_read"), "{not json"),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(80, 30),
    ];
    mock.on(
        PATH,
        Reply::sse_chunked(data_events(&events) + "data: [DONE]\n\n", 13, End::Close),
    );
    let deltas = Deltas::default();
    let resp = provider(&mock, None)
        .chat(&tool_round_trip_request(), &|t| deltas.push(t))
        .await
        .unwrap();

    assert_eq!(deltas.all(), ["Checking ", "both."]);
    assert_eq!(resp.content, "Checking both.");
    assert_eq!(resp.finish, FinishReason::ToolCalls);
    let calls: Vec<(&str, &str, &str)> = resp
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.get()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "file_read", r#"{"path": "a.txt"}"#),
            ("call_b", "shell", r#"{"cmd":"ls"}"#),
            // Not JSON: kept, wrapped, for the tool to report.
            ("call_c", "file_read", r#"{"_raw":"{not json"}"#),
        ]
    );
    assert_eq!(resp.usage.map(|u| u.input_tokens), Some(80));

    let body = mock.only_request(PATH).body;
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are pincer."},
                {"role": "user", "content": "What do notes.txt and todo.txt say?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "file_read", "arguments": "{\"path\":\"notes.txt\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "buy milk"},
                {"role": "assistant", "content": "Two more.", "tool_calls": [
                    {"id": "c2", "type": "function", "function": {"name": "file_read", "arguments": "{\"path\":\"todo.txt\"}"}},
                    {"id": "c3", "type": "function", "function": {"name": "file_read", "arguments": "{\"path\":\"b.txt\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c2", "content": "call mum"},
                {"role": "tool", "tool_call_id": "c3", "content": "nothing"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "file_read",
                "description": "Read a file in the workspace",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }}],
            "max_tokens": 512,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn malformed_event_is_a_protocol_error() {
    let mock = Mock::start().await;
    let body = data_events(&[chunk(json!({"content": "Hi"}), None)])
        + "data: {\"choices\": [oops\n\n"
        + "data: [DONE]\n\n";
    mock.on(PATH, Reply::sse(body));
    let err = provider(&mock, None)
        .chat(&simple_request(), &|_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Protocol { provider, message } if provider == "local" && message.contains("oops")),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn json_instead_of_a_stream_is_a_protocol_error() {
    let mock = Mock::start().await;
    mock.on(
        PATH,
        Reply::json(200, json!({"choices": [{"message": {"content": "hi"}}]})),
    );
    let err = provider(&mock, None)
        .chat(&simple_request(), &|_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Protocol { message, .. } if message.contains("text/event-stream")),
        "{err:?}"
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn connection_dropped_mid_stream_is_transport() {
    let mock = Mock::start().await;
    let partial = data_events(&[
        chunk(json!({"content": "Half"}), None),
        chunk(json!({"content": " a reply"}), None),
    ]);
    let got_text = Arc::new(Notify::new());
    mock.on(
        PATH,
        Reply::sse_chunked(partial, 40, End::DropAfter(got_text.clone())),
    );
    let deltas = Deltas::default();
    let err = provider(&mock, None)
        .chat(&simple_request(), &|t| {
            deltas.push(t);
            if deltas.all().concat() == "Half a reply" {
                got_text.notify_one();
            }
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Transport { provider, .. } if provider == "local"),
        "{err:?}"
    );
    assert!(err.is_retryable());
    // What arrived before the drop was streamed (the router documents this).
    assert_eq!(deltas.all().concat(), "Half a reply");
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn clean_end_without_done_or_finish_is_transport() {
    let mock = Mock::start().await;
    mock.on(
        PATH,
        Reply::sse(data_events(&[chunk(json!({"content": "Half"}), None)])),
    );
    let err = provider(&mock, None)
        .chat(&simple_request(), &|_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Transport { message, .. } if message.contains("ended before")),
        "{err:?}"
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn http_statuses_map_to_decisions_with_the_vendor_message() {
    let mock = Mock::start().await;
    mock.on(
        PATH,
        Reply::json(429, json!({"error": {"message": "Rate limit reached", "type": "requests"}}))
            .with_header("retry-after", "7"),
    )
    .on(PATH, Reply::json(503, json!({"error": {"message": "overloaded, try later"}})))
    .on(
        PATH,
        Reply::json(400, json!({"error": {"message": "model `nope` does not exist", "type": "invalid_request_error"}})),
    )
    .on(PATH, Reply::status(404, format!("<html>{}</html>", "x".repeat(1000))));
    let p = provider(&mock, None);
    let mut errors = Vec::new();
    for _ in 0..4 {
        errors.push(p.chat(&simple_request(), &|_| {}).await.unwrap_err());
    }
    assert_eq!(
        errors[0],
        ProviderError::RateLimited {
            provider: "local".into(),
            retry_after: Some(Duration::from_secs(7)),
            message: "Rate limit reached".into(),
        }
    );
    assert_eq!(
        errors[1],
        ProviderError::Server {
            provider: "local".into(),
            status: 503,
            message: "overloaded, try later".into(),
        }
    );
    assert_eq!(
        errors[2],
        ProviderError::Rejected {
            provider: "local".into(),
            status: 400,
            message: "model `nope` does not exist".into(),
        }
    );
    match &errors[3] {
        ProviderError::Rejected {
            status: 404,
            message,
            ..
        } => {
            assert!(
                message.starts_with("<html>xxx") && message.ends_with('…'),
                "{message}"
            );
            assert!(message.chars().count() < 400, "{message}");
        }
        other => panic!("{other:?}"),
    }
    for e in &errors {
        assert!(e.to_string().starts_with("local: "), "{e}");
    }
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn unreachable_server_is_transport() {
    let mut cfg = Mock::start()
        .await
        .config(ProviderKind::Openai, "gone", "/v1");
    cfg.base_url = format!("{}/v1", crate::mock::refused_url().await);
    let err = OpenAiProvider::new(&cfg, None)
        .unwrap()
        .chat(&simple_request(), &|_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Transport { provider, .. } if provider == "gone"),
        "{err:?}"
    );
}

#[tokio::test]
async fn silent_server_is_a_timeout() {
    let mock = Mock::start().await;
    mock.on(PATH, Reply::Hang);
    let p = provider(&mock, None)
        .with_timeout(Duration::from_millis(200))
        .unwrap();
    let err = p.chat(&simple_request(), &|_| {}).await.unwrap_err();
    assert_eq!(
        err,
        ProviderError::Timeout {
            provider: "local".into(),
            after: Duration::from_millis(200),
        }
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn api_key_never_appears_in_errors_or_debug() {
    let key = "sk-test-SECRET-0123456789";
    let mock = Mock::start().await;
    mock.on(
        PATH,
        Reply::json(401, json!({"error": {"message": format!("Incorrect API key provided: {key}."), "type": "invalid_request_error"}})),
    );
    let p = provider(&mock, Some(key));
    let err = p.chat(&simple_request(), &|_| {}).await.unwrap_err();
    assert_eq!(
        mock.only_request(PATH).header("authorization"),
        Some(&*format!("Bearer {key}"))
    );
    for text in [err.to_string(), format!("{err:?}"), format!("{p:?}")] {
        assert!(!text.contains(key), "key leaked: {text}");
        assert!(!text.contains("SECRET"), "key leaked: {text}");
    }
    // Configured header values are not printed either.
    assert!(!format!("{p:?}").contains("pincer.invalid"), "{p:?}");
    assert!(
        err.to_string()
            .contains("Incorrect API key provided: <redacted>"),
        "{err}"
    );
    mock.assert_protocol_invariants();
}

/// A key too short to be a secret (a local server that wants any key) is
/// not scrubbed: replacing every `x` of a message would make it unreadable.
#[tokio::test]
async fn a_one_character_key_does_not_mangle_messages() {
    let mock = Mock::start().await;
    mock.on(
        PATH,
        Reply::json(
            400,
            json!({"error": {"message": "the prompt exceeds the available context"}}),
        ),
    );
    let err = provider(&mock, Some("e"))
        .chat(&simple_request(), &|_| {})
        .await
        .expect_err("400");
    assert!(
        err.to_string()
            .contains("the prompt exceeds the available context"),
        "{err}"
    );
}

/// A key echoed across the point where the vendor message is cut must not
/// survive in part: the body is scrubbed before it is shortened.
#[tokio::test]
async fn a_key_echoed_across_the_message_cut_is_still_scrubbed() {
    let key = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz";
    let mock = Mock::start().await;
    let message = format!("{}{key} is not valid", "x".repeat(290));
    mock.on(
        PATH,
        Reply::json(401, json!({"error": {"message": message}})),
    );
    let err = provider(&mock, Some(key))
        .chat(&simple_request(), &|_| {})
        .await
        .expect_err("401");
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains("sk-live-0123"),
        "part of the key leaked: {shown}"
    );
}
