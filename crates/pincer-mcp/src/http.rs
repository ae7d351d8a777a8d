//! A streamable HTTP server: the HTTP client (reqwest with rustls on
//! `ring`, as the model providers use, so the binary carries one TLS
//! stack) and rmcp's streamable HTTP transport over it (POSTed JSON-RPC,
//! JSON or SSE answers, the session id, SSE resumption).

use crate::McpError;
use crate::config::{HttpConfig, ServerConfig};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::collections::BTreeMap;
use std::time::Duration;

/// The largest JSON answer or SSE event accepted (a tool result is cut to
/// far less before the model sees it).
const MAX_MESSAGE: usize = 8 << 20;

/// The transport to `server`; the bearer token comes from `vars` (the
/// variable `bearer_token_env` names, read at start).
pub fn transport(
    server: &ServerConfig,
    cfg: &HttpConfig,
    vars: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    let fail = |message: String| McpError::Start {
        server: server.name.clone(),
        message,
    };
    let client = reqwest::Client::builder()
        // The providers' TLS set-up: rustls on `ring`, the system CA store
        // for `https://`, none read for a loopback `http://`.
        .tls_backend_preconfigured(pincer_providers::tls_config("mcp", &cfg.url).map_err(|e| {
            match e {
                pincer_core::provider::ProviderError::Config { message, .. } => fail(message),
                other => fail(other.to_string()),
            }
        })?)
        .user_agent(concat!("pincer/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(server.startup_timeout.min(Duration::from_secs(30)))
        // A redirect could carry the session id and the token elsewhere:
        // none is followed (the status is the error).
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(cfg.url.clone())
        .max_sse_event_size(MAX_MESSAGE);
    config.max_json_response_size = MAX_MESSAGE;
    if let Some(var) = &cfg.bearer_token_env {
        let Some(token) = vars.get(var) else {
            return Err(fail(format!(
                "bearer_token_env names `{var}`, which is not set in pincer's environment"
            )));
        };
        config = config.auth_header(token.clone());
    }
    Ok(StreamableHttpClientTransport::with_client(client, config))
}
