//! A streamable HTTP server: the HTTP client (reqwest with rustls on
//! `ring`, as the model providers use, so the binary carries one TLS
//! stack) and rmcp's streamable HTTP transport over it (POSTed JSON-RPC,
//! JSON or SSE answers, the session id, SSE resumption).

use crate::McpError;
use crate::config::{HttpConfig, ServerConfig};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
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
        .tls_backend_preconfigured(tls_config(&cfg.url).map_err(fail)?)
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

/// rustls on `ring`, verifying `https://` against the system's CA store
/// (loaded once per process); a plain `http://` (loopback) client trusts
/// no certificate and never reads the store.
fn tls_config(url: &str) -> Result<rustls::ClientConfig, String> {
    let crypto = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(crypto)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let mut config = if url.starts_with("https://") {
        let verifier = system_verifier().map_err(|e| {
            format!(
                "cannot verify https certificates: {e} (is the ca-certificates package installed?)"
            )
        })?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth()
    };
    // reqwest is built without HTTP/2.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn system_verifier() -> Result<Arc<rustls_platform_verifier::Verifier>, String> {
    static VERIFIER: OnceLock<Result<Arc<rustls_platform_verifier::Verifier>, String>> =
        OnceLock::new();
    VERIFIER
        .get_or_init(|| {
            rustls_platform_verifier::Verifier::new(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .map(Arc::new)
            .map_err(|e| e.to_string())
        })
        .clone()
}
