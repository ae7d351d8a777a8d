//! `pincer_providers::build`: configuration checks and dispatch.

use crate::mock::Mock;
use crate::simple_request;
use pincer_core::provider::{FinishReason, ProviderError};
use pincer_providers::config::ProviderKind;
use pincer_providers::{build, build_router};
use std::io::Write;

fn config_error<T>(r: Result<T, ProviderError>) -> String {
    match r {
        Err(e @ ProviderError::Config { .. }) => e.to_string(),
        Err(other) => panic!("expected a Config error, got {other:?}"),
        Ok(_) => panic!("expected a Config error, got a provider"),
    }
}

#[tokio::test]
async fn bad_configurations_are_named_errors() {
    let mock = Mock::start().await;
    let base = mock.config(ProviderKind::Openai, "cloud", "/v1");

    let mut cfg = base.clone();
    cfg.base_url = "api.openai.com/v1".into();
    let e = config_error(build(&cfg, None));
    assert!(e.starts_with("cloud: ") && e.contains("base_url"), "{e}");

    let mut cfg = base.clone();
    cfg.api_key_env = Some("OPENAI_API_KEY".into());
    let e = config_error(build(&cfg, None));
    assert!(e.contains("OPENAI_API_KEY"), "{e}");
    let e = config_error(build(&cfg, Some("   ".into())));
    assert!(e.contains("OPENAI_API_KEY"), "{e}");

    let mut cfg = base.clone();
    cfg.headers.insert("bad header".into(), "x".into());
    assert!(config_error(build(&cfg, None)).contains("bad header"));

    let mut cfg = base.clone();
    cfg.kind = ProviderKind::Scripted;
    assert!(config_error(build(&cfg, None)).contains("script"));
    cfg.script = Some("/nonexistent/pincer-script.json".into());
    assert!(config_error(build(&cfg, None)).contains("/nonexistent/pincer-script.json"));
}

#[tokio::test]
async fn a_key_that_cannot_be_a_header_is_a_config_error_without_the_key() {
    let mock = Mock::start().await;
    let kinds = [
        ProviderKind::Openai,
        #[cfg(feature = "anthropic")]
        ProviderKind::Anthropic,
    ];
    for kind in kinds.iter().copied() {
        let cfg = mock.config(kind, "cloud", "/v1");
        let e = config_error(build(&cfg, Some("sk-SECRET\u{7f}bad".into())));
        assert!(e.contains("API key") && !e.contains("SECRET"), "{e}");
    }
    assert!(mock.requests().is_empty());
}

/// Without the Anthropic client, a config that names it (built by hand,
/// past the parser) is refused by name and nothing is sent.
#[cfg(not(feature = "anthropic"))]
#[tokio::test]
async fn without_anthropic_its_kind_is_refused_by_name() {
    let mock = Mock::start().await;
    let cfg = mock.config(ProviderKind::Anthropic, "claude", "");
    let e = config_error(build(&cfg, Some("sk-ant-test-key".into())));
    assert!(e.contains("`anthropic` feature"), "{e}");
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn scripted_provider_from_a_file_through_build_and_router() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    write!(
        file,
        r#"{{"turns": [
            {{"text": "Let me look.", "tool_calls": [{{"id": "c1", "name": "file_read", "arguments": {{"path": "notes.txt"}}}}],
              "expect": {{"last_role": "user", "last_message_contains": "hello"}}}},
            {{"text": "Done."}}
        ]}}"#
    )
    .unwrap();
    let mock = Mock::start().await;
    let mut cfg = mock.config(ProviderKind::Scripted, "demo", "");
    cfg.script = Some(file.path().to_path_buf());
    let p = build(&cfg, None).unwrap();
    let mut req = simple_request();
    req.messages = vec![pincer_core::Message::user("hello there")].into();
    let r = p.chat(&req, &|_| {}).await.unwrap();
    assert_eq!(r.finish, FinishReason::ToolCalls);
    assert_eq!(r.provider, "demo");

    let router = build_router("main", vec![(&cfg, None)]).unwrap();
    assert_eq!(router.chain_names(), ["demo"]);
    let r = pincer_core::provider::Provider::chat(&router, &req, &|_| {})
        .await
        .unwrap();
    assert_eq!(r.content, "Let me look.");
}
