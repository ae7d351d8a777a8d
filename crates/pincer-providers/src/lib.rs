//! pincer-providers: the language models pincer talks to (PR1–PR3).
//!
//! Owns the vendor wire formats and nothing else: the OpenAI-compatible
//! client ([`openai`]: OpenAI, llama.cpp `llama-server`, Ollama, vLLM,
//! OpenRouter), the Anthropic Messages client ([`anthropic`]), the
//! [`scripted`] provider that replays a JSON script, the fallback
//! [`router`], the local-server [`mod@probe`], and the incremental [`sse`]
//! parser they stream with. Each implements `pincer_core`'s `Provider`;
//! vendor JSON never leaves its module.
//!
//! It must not know about sessions, tools' behaviour, the policy gate or
//! the terminal: it gets a `ChatRequest` and returns a `ChatResponse`. It
//! never reads environment variables or files other than a scripted
//! provider's script: the binary reads the variable named by `api_key_env`
//! and passes the key in. An API key never appears in `Debug` output or in
//! an error (errors are scrubbed of it, even when a vendor echoes it).
//!
//! A provider's `timeout_secs` bounds connecting and every silence while
//! reading (no byte for that long is a `Timeout`), not the whole reply: a
//! slow model streaming a long answer is not cut off.
//!
//! TLS is rustls on the `ring` crypto provider (reqwest's
//! `rustls-no-provider` plus a `ClientConfig` built here), a lighter build
//! than reqwest's default `aws-lc-rs`, and no process-wide provider is
//! installed. `https://` endpoints are verified against the system's CA
//! store; `http://` endpoints (local models) never read it. All of that is
//! the `tls` feature (on by default): without it, a client speaks plain
//! `http://` only, and an `https://` base URL is refused at parse time
//! naming the field and the missing feature ([`NO_TLS`]).

#[cfg(feature = "anthropic")]
pub mod anthropic;
pub mod config;
mod http;
pub mod images;
pub mod openai;
pub mod probe;
pub mod router;
pub mod scripted;
pub mod sse;

#[cfg(feature = "anthropic")]
pub use anthropic::AnthropicProvider;
#[cfg(feature = "tls")]
pub use http::tls_config;
pub use http::{NO_TLS, TLS, client_builder, error_chain, parse_retry_after, url_error};
pub use openai::OpenAiProvider;
pub use probe::{Check, ProbeReport, detect_local, probe, probe_anthropic};
pub use router::{Attempt, RETRY_MARKER, RetryPolicy, Router, Sleeper, TokioSleeper};
pub use scripted::{ScriptTurn, ScriptedProvider};

use crate::config::{ProviderConfig, ProviderKind};
use pincer_core::provider::{Provider, ProviderError};

/// Why `kind = "anthropic"` cannot be used by a build without the
/// `anthropic` feature.
pub const NO_ANTHROPIC: &str = "is `anthropic`, but this pincer was built without the `anthropic` feature (the Anthropic Messages API); use an OpenAI-compatible server (kind `openai`), or a build with it (the default build, or `--features anthropic`)";

/// Builds the provider `cfg` describes. `api_key` is the value of the
/// environment variable `cfg.api_key_env` names, read by the caller; it is
/// required when `api_key_env` is set. A scripted provider reads its
/// `script` file now, so a bad script fails at start-up.
pub fn build(
    cfg: &ProviderConfig,
    api_key: Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    Ok(match cfg.kind {
        ProviderKind::Openai => Box::new(OpenAiProvider::new(cfg, api_key)?),
        #[cfg(feature = "anthropic")]
        ProviderKind::Anthropic => Box::new(AnthropicProvider::new(cfg, api_key)?),
        #[cfg(not(feature = "anthropic"))]
        ProviderKind::Anthropic => {
            let _ = api_key;
            return Err(ProviderError::Config {
                provider: cfg.name.clone(),
                message: format!("kind {NO_ANTHROPIC}"),
            });
        }
        ProviderKind::Scripted => {
            let path = cfg.script.as_ref().ok_or_else(|| ProviderError::Config {
                provider: cfg.name.clone(),
                message: "a scripted provider needs `script`, the path of its script file".into(),
            })?;
            Box::new(ScriptedProvider::from_file(cfg.name.clone(), path)?)
        }
    })
}

/// Builds a [`Router`] named `name` over `providers` in order, each with
/// the [`RetryPolicy`] of its configuration. Keys are passed as for
/// [`build`].
pub fn build_router(
    name: impl Into<String>,
    providers: Vec<(&ProviderConfig, Option<String>)>,
) -> Result<Router, ProviderError> {
    let chain = providers
        .into_iter()
        .map(|(cfg, key)| Ok((build(cfg, key)?, RetryPolicy::from_config(cfg))))
        .collect::<Result<Vec<_>, ProviderError>>()?;
    Ok(Router::new(name, chain))
}
