use crate::mock::{Mock, Reply, refused_url};
use pincer_providers::{detect_local, probe};
use serde_json::json;
use std::time::Duration;

const T: Duration = Duration::from_secs(5);

fn models() -> Reply {
    Reply::json(
        200,
        json!({"object": "list", "data": [
            {"id": "smollm2-135m", "object": "model", "owned_by": "llamacpp"},
            {"id": "qwen2.5:0.5b", "object": "model"},
        ]}),
    )
}

#[tokio::test]
async fn llama_server_style_health_and_models() {
    let mock = Mock::start().await;
    mock.on("/health", Reply::json(200, json!({"status": "ok"})))
        .on("/v1/models", models());
    let base = format!("{}/v1/", mock.url);
    let report = probe(&base, T).await;
    assert!(report.answers());
    assert!(report.health.ok && report.models.ok, "{report:?}");
    assert_eq!(report.health.url, format!("{}/health", mock.url));
    assert_eq!(report.models.url, format!("{}/v1/models", mock.url));
    assert_eq!(report.model_ids, ["smollm2-135m", "qwen2.5:0.5b"]);
    let paths: Vec<(String, String)> = mock
        .requests()
        .into_iter()
        .map(|r| (r.method, r.path))
        .collect();
    assert_eq!(paths.len(), 2);
    assert!(paths.contains(&("GET".into(), "/health".into())));
    assert!(paths.contains(&("GET".into(), "/v1/models".into())));

    // The --json shape pincer doctor prints.
    let v = serde_json::to_value(&report).unwrap();
    assert_eq!(v["base_url"], base);
    assert_eq!(v["health"]["ok"], true);
    assert_eq!(v["health"]["status"], 200);
    assert_eq!(v["health"]["error"], serde_json::Value::Null);
    assert_eq!(v["models"]["status"], 200);
    assert_eq!(v["model_ids"], json!(["smollm2-135m", "qwen2.5:0.5b"]));
    assert!(v["models"]["elapsed_ms"].is_u64());
}

#[tokio::test]
async fn ollama_style_no_health_route_and_loading_server() {
    let mock = Mock::start().await;
    // No /health reply is queued: the mock answers 404, as Ollama does.
    mock.on("/v1/models", models());
    let report = probe(&format!("{}/v1", mock.url), T).await;
    assert!(report.answers());
    assert!(!report.health.ok);
    assert_eq!(report.health.status, Some(404));
    assert!(report.models.ok);

    // llama-server while loading: 503 on /health, and a body that is not a model list.
    mock.on(
        "/health",
        Reply::json(
            503,
            json!({"error": {"message": "Loading model", "code": 503}}),
        ),
    )
    .on("/v1/models", Reply::status(200, "not json"));
    let report = probe(&format!("{}/v1", mock.url), T).await;
    assert!(!report.answers());
    assert_eq!(report.health.status, Some(503));
    assert_eq!(
        report.health.error.as_deref(),
        Some("HTTP 503: Loading model")
    );
    assert!(!report.models.ok);
    assert!(
        report
            .models
            .error
            .as_deref()
            .unwrap()
            .contains("not an OpenAI model list"),
        "{report:?}"
    );
    assert!(report.model_ids.is_empty());
}

#[tokio::test]
async fn unreachable_server_reports_errors() {
    let url = format!("{}/v1", refused_url().await);
    let report = probe(&url, T).await;
    assert!(!report.answers());
    assert_eq!(report.health.status, None);
    assert!(report.health.error.is_some() && report.models.error.is_some());
}

#[tokio::test]
async fn detect_local_returns_the_first_that_answers() {
    let gone = format!("{}/v1", refused_url().await);
    let mock = Mock::start().await;
    mock.on("/health", Reply::json(200, json!({"status": "ok"})))
        .on("/v1/models", models());
    let live = format!("{}/v1", mock.url);
    let (url, report) = detect_local(&[&gone, &live], T).await.unwrap();
    assert_eq!(url, live);
    assert_eq!(report.model_ids.len(), 2);

    assert!(detect_local(&[&gone], T).await.is_none());
    assert!(detect_local(&[], T).await.is_none());
}
