//! The fallback router over real HTTP providers on the mock server: two
//! OpenAI-compatible providers at `/a/v1` and `/b/v1`.

use crate::mock::{Mock, Reply, data_events};
use crate::{Deltas, simple_request, tool_round_trip_request};
use pincer_core::provider::{BoxFuture, Provider, ProviderError};
use pincer_providers::config::ProviderKind;
use pincer_providers::{OpenAiProvider, RetryPolicy, Router, Sleeper};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const A: &str = "/a/v1/chat/completions";
const B: &str = "/b/v1/chat/completions";

/// Records the waits the router asks for and returns at once.
#[derive(Default)]
struct Recorder(Mutex<Vec<Duration>>);

impl Recorder {
    fn waits(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

impl Sleeper for Recorder {
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap().push(d);
        Box::pin(async {})
    }
}

fn ok_stream(text: &str) -> Reply {
    Reply::sse(
        data_events(&[
            json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ]) + "data: [DONE]\n\n",
    )
}

fn router(mock: &Mock, retries_a: u32, rec: &Arc<Recorder>) -> Router {
    let make = |name: &str| -> Box<dyn Provider> {
        let cfg = mock.config(ProviderKind::Openai, name, &format!("/{name}/v1"));
        Box::new(OpenAiProvider::new(&cfg, Some("sk-router-key".into())).unwrap())
    };
    let policy = |max_retries| RetryPolicy {
        max_retries,
        base_backoff: Duration::from_millis(250),
        max_backoff: Duration::from_secs(4),
        max_retry_after: Duration::from_secs(30),
    };
    Router::new(
        "chain",
        vec![(make("a"), policy(retries_a)), (make("b"), policy(1))],
    )
    .with_sleeper(rec.clone())
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_falls_back() {
    let mock = Mock::start().await;
    let limited = || {
        Reply::json(429, json!({"error": {"message": "Rate limit reached"}}))
            .with_header("retry-after", "2")
    };
    mock.on(A, limited())
        .on(A, limited())
        .on(B, ok_stream("from b"));
    let rec = Arc::new(Recorder::default());
    let r = router(&mock, 1, &rec);
    let resp = r.chat(&tool_round_trip_request(), &|_| {}).await.unwrap();

    assert_eq!(resp.provider, "b");
    assert_eq!(resp.content, "from b");
    // One retry on `a`, after exactly the server's Retry-After; none before `b`.
    assert_eq!(rec.waits(), [Duration::from_secs(2)]);
    assert_eq!(mock.requests_to(A).len(), 2);
    assert_eq!(mock.requests_to(B).len(), 1);
    // Every attempt sent the same, well-formed body.
    let bodies: Vec<_> = mock.requests().into_iter().map(|r| r.body).collect();
    assert!(bodies.windows(2).all(|w| w[0] == w[1]));
    let log: Vec<String> = r.last_attempts().iter().map(ToString::to_string).collect();
    assert_eq!(
        log,
        [
            "a (try 1): a: rate limited (429), retry after 2s: Rate limit reached",
            "a (try 2, after waiting 2s): a: rate limited (429), retry after 2s: Rate limit reached",
            "b (try 1): answered",
        ]
    );
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn retry_after_beyond_the_cap_moves_on_at_once() {
    let mock = Mock::start().await;
    mock.on(
        A,
        Reply::status(429, "busy").with_header("retry-after", "120"),
    )
    .on(B, ok_stream("b answers"));
    let rec = Arc::new(Recorder::default());
    let resp = router(&mock, 3, &rec)
        .chat(&simple_request(), &|_| {})
        .await
        .unwrap();
    assert_eq!(resp.provider, "b");
    assert!(rec.waits().is_empty(), "{:?}", rec.waits());
    assert_eq!(mock.requests_to(A).len(), 1);
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn server_error_falls_back_and_names_the_answering_provider() {
    let mock = Mock::start().await;
    mock.on(A, Reply::json(500, json!({"error": {"message": "boom"}})))
        .on(
            A,
            Reply::json(502, json!({"error": {"message": "bad gateway"}})),
        )
        .on(B, ok_stream("hello from b"));
    let rec = Arc::new(Recorder::default());
    let deltas = Deltas::default();
    let resp = router(&mock, 1, &rec)
        .chat(&simple_request(), &|t| deltas.push(t))
        .await
        .unwrap();
    assert_eq!(resp.provider, "b");
    assert_eq!(deltas.all(), ["hello from b"]);
    // Exponential backoff, not Retry-After (there was none).
    assert_eq!(rec.waits(), [Duration::from_millis(250)]);
    assert_eq!(mock.requests_to(A).len(), 2);
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn rejection_stops_at_once_with_the_vendor_message() {
    let mock = Mock::start().await;
    mock.on(
        A,
        Reply::json(
            400,
            json!({"error": {"message": "context_length_exceeded: 9000 > 8192"}}),
        ),
    )
    .on(B, ok_stream("must not be used"));
    let rec = Arc::new(Recorder::default());
    let r = router(&mock, 3, &rec);
    let err = r
        .chat(&tool_round_trip_request(), &|_| {})
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ProviderError::Rejected {
            provider: "a".into(),
            status: 400,
            message: "context_length_exceeded: 9000 > 8192".into(),
        }
    );
    assert!(
        mock.requests_to(B).is_empty(),
        "the second provider was called"
    );
    assert_eq!(mock.requests_to(A).len(), 1);
    assert!(rec.waits().is_empty());
    assert_eq!(r.last_attempts().len(), 1);
    mock.assert_protocol_invariants();
}

#[tokio::test]
async fn all_failing_returns_the_last_error_and_the_attempt_log() {
    let mock = Mock::start().await;
    mock.on(A, Reply::json(503, json!({"error": {"message": "a down"}})))
        .on(B, Reply::json(503, json!({"error": {"message": "b down"}})))
        .on(
            B,
            Reply::json(504, json!({"error": {"message": "b still down"}})),
        );
    let rec = Arc::new(Recorder::default());
    let r = router(&mock, 0, &rec);
    let (result, log) = r.chat_logged(&simple_request(), &|_| {}).await;
    let err = result.unwrap_err();
    let ProviderError::Exhausted { attempts, last, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        **last,
        ProviderError::Server {
            provider: "b".into(),
            status: 504,
            message: "b still down".into(),
        }
    );
    // The error says every attempt, not just the last.
    let said: Vec<(&str, u32)> = attempts
        .iter()
        .map(|a| (a.provider.as_str(), a.retry))
        .collect();
    assert_eq!(said, [("a", 0), ("b", 0), ("b", 1)]);
    assert!(attempts[0].error.contains("a down"), "{attempts:?}");
    let who: Vec<(&str, u32)> = log.iter().map(|a| (a.provider.as_str(), a.retry)).collect();
    assert_eq!(who, [("a", 0), ("b", 0), ("b", 1)]);
    assert!(log.iter().all(|a| a.error.is_some()));
    assert_eq!(rec.waits(), [Duration::from_millis(250)]);
    // The router's own Debug names the chain, not the key.
    let debug = format!("{r:?}");
    assert!(
        debug.contains("\"a\"") && !debug.contains("sk-router-key"),
        "{debug}"
    );
    mock.assert_protocol_invariants();
}

/// A server error that repeats word for word will not change on a third
/// try: the router moves on after the second.
#[tokio::test]
async fn an_identical_server_error_is_not_retried_again() {
    let mock = Mock::start().await;
    let jinja = || {
        Reply::json(
            500,
            json!({"error": {"message": "tools param requires --jinja flag"}}),
        )
    };
    mock.on(A, jinja()).on(A, jinja()).on(A, jinja());
    mock.on(B, ok_stream("from b"));
    let rec = Arc::new(Recorder::default());
    let r = router(&mock, 2, &rec);
    let (result, log) = r.chat_logged(&simple_request(), &|_| {}).await;
    let resp = result.expect("b answers");
    assert_eq!(resp.provider, "b");
    assert_eq!(mock.requests_to(A).len(), 2, "not a third time");
    // What failed before the answer travels with it.
    assert_eq!(resp.attempts.len(), 2);
    assert!(
        resp.attempts[0].error.contains("--jinja"),
        "{:?}",
        resp.attempts
    );
    assert_eq!(log.len(), 3);
}
