//! Which model providers an agent uses, and how that was decided:
//! `--provider NAME`, else `[agent] fallback_chain`, else the only
//! configured provider, else zero-config detection (an OpenAI or Anthropic
//! key in the environment, or a local server answering on a known port).

use crate::{Env, RuntimeError, Settings};
use pincer_core::provider::Provider;
use pincer_providers::config::{ProviderConfig, ProviderKind, defaults};
use pincer_providers::{ProbeReport, detect_local};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// Which provider(s) an agent will use and how that was decided.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderChoice {
    /// The providers in fallback order.
    pub chain: Vec<ProviderConfig>,
    /// How they were chosen, in words (printed by `agent` and `doctor`).
    pub how: String,
    /// The local server probe, when zero-config probed one.
    pub probe: Option<ProbeReport>,
}

impl ProviderChoice {
    /// The smallest context window of the chain: a turn must fit whichever
    /// provider answers.
    pub fn context_window(&self, fallback: usize) -> usize {
        self.chain
            .iter()
            .map(|p| p.context_window)
            .min()
            .unwrap_or(fallback)
    }
}

/// What to say when there is no provider at all.
pub const HOW_TO: &str = "no model provider is configured or detected. Either:
  - set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server),
  - set ANTHROPIC_API_KEY,
  - run a local server: Ollama (port 11434) or llama.cpp's llama-server (port 8080),
  - add [providers.NAME] tables and [agent] fallback_chain to config.toml (see `pincer init`),
  - or try `pincer demo`, which needs none of these.";

/// Decides the providers (see the module doc). Zero-config probes the
/// local ports, hence async.
pub async fn choose(
    settings: &Settings,
    env: &Env,
    only: Option<&str>,
) -> Result<ProviderChoice, RuntimeError> {
    let chosen = |chain, how| ProviderChoice {
        chain,
        how,
        probe: None,
    };
    if let Some(name) = only {
        let p = settings.provider(name).ok_or_else(|| {
            let names: Vec<&str> = settings.providers.iter().map(|p| p.name.as_str()).collect();
            RuntimeError::UnknownProvider {
                name: name.to_string(),
                configured: if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                },
            }
        })?;
        return Ok(chosen(vec![p.clone()], format!("--provider {name}")));
    }
    let chain_names = &settings.core.agent.fallback_chain;
    if !chain_names.is_empty() {
        let chain = chain_names
            .iter()
            .filter_map(|n| settings.provider(n).cloned())
            .collect();
        return Ok(chosen(
            chain,
            format!("[agent] fallback_chain = {chain_names:?}"),
        ));
    }
    if let [only] = settings.providers.as_slice() {
        return Ok(chosen(
            vec![only.clone()],
            format!("the only configured provider, `{}`", only.name),
        ));
    }
    if settings.providers.len() > 1 {
        return Err(RuntimeError::AmbiguousProviders);
    }
    zero_config(settings, env).await
}

async fn zero_config(settings: &Settings, env: &Env) -> Result<ProviderChoice, RuntimeError> {
    let window = settings.core.context.context_window;
    let make = |name: &str, kind, url: String, model: String, key_env: Option<&str>| {
        let mut p = ProviderConfig::with_defaults(name, kind, model, window);
        p.base_url = url;
        p.api_key_env = key_env.map(str::to_string);
        p
    };
    if env.openai_key.is_some() || env.openai_base_url.is_some() {
        return openai_zero_config(env, window).await;
    }
    if env.anthropic_key.is_some() {
        let url = env
            .anthropic_base_url
            .clone()
            .unwrap_or_else(|| defaults::ANTHROPIC_BASE_URL.into());
        let model = env
            .model
            .clone()
            .unwrap_or_else(|| defaults::ANTHROPIC_MODEL.into());
        let how = format!("ANTHROPIC_API_KEY is set: Anthropic {url}, model {model}");
        let p = make(
            "anthropic",
            ProviderKind::Anthropic,
            url,
            model,
            Some("ANTHROPIC_API_KEY"),
        );
        return Ok(ProviderChoice {
            chain: vec![p],
            how,
            probe: None,
        });
    }
    if let Some((url, report)) =
        detect_local(&defaults::LOCAL_CANDIDATES, Duration::from_millis(500)).await
    {
        let model = env
            .model
            .clone()
            .or_else(|| report.model_ids.first().cloned())
            .unwrap_or_else(|| "local".into());
        let how = format!("a local server answers at {url}: model {model}");
        return Ok(ProviderChoice {
            chain: vec![make("local", ProviderKind::Openai, url, model, None)],
            how,
            probe: Some(report),
        });
    }
    Err(RuntimeError::NoProvider)
}

/// `OPENAI_API_KEY` and/or `OPENAI_BASE_URL`: OpenAI itself, or another
/// OpenAI-compatible server (a keyless local one on another port). The
/// model is `PINCER_MODEL`, else what the server's `/models` lists, else —
/// for OpenAI itself only — the vendor default; never a guess.
async fn openai_zero_config(env: &Env, window: usize) -> Result<ProviderChoice, RuntimeError> {
    let url = env
        .openai_base_url
        .clone()
        .unwrap_or_else(|| defaults::OPENAI_BASE_URL.into());
    let url =
        pincer_providers::config::check_base_url(&url).map_err(|reason| RuntimeError::BadEnv {
            // Unset, the URL is OpenAI's own (https, refused without TLS).
            var: if env.openai_base_url.is_some() {
                "OPENAI_BASE_URL"
            } else {
                "OPENAI_BASE_URL (unset, so OpenAI's own)"
            },
            reason,
        })?;
    let mut probe = None;
    let model = match &env.model {
        Some(m) => m.clone(),
        None if url == defaults::OPENAI_BASE_URL => defaults::OPENAI_MODEL.to_string(),
        None => {
            let report = pincer_providers::probe(&url, Duration::from_secs(2)).await;
            let first = report.model_ids.first().cloned();
            probe = Some(report);
            first.ok_or_else(|| RuntimeError::NoModel { url: url.clone() })?
        }
    };
    let keyed = env.openai_key.is_some();
    let how = if keyed {
        format!("OPENAI_API_KEY is set: OpenAI-compatible {url}, model {model}")
    } else {
        format!("OPENAI_BASE_URL is set, with no key: OpenAI-compatible {url}, model {model}")
    };
    let mut p = ProviderConfig::with_defaults("openai", ProviderKind::Openai, model, window);
    p.base_url = url;
    p.api_key_env = keyed.then(|| "OPENAI_API_KEY".to_string());
    Ok(ProviderChoice {
        chain: vec![p],
        how,
        probe,
    })
}

/// The key for `p`: the variable its `api_key_env` names.
fn key_for(p: &ProviderConfig, env: &Env) -> Result<Option<String>, RuntimeError> {
    let Some(var) = p.api_key_env.as_deref() else {
        return Ok(None);
    };
    let key = match var {
        "OPENAI_API_KEY" => env.var(var).map(str::to_string).or(env.openai_key.clone()),
        "ANTHROPIC_API_KEY" => env
            .var(var)
            .map(str::to_string)
            .or(env.anthropic_key.clone()),
        _ => env.var(var).map(str::to_string),
    };
    match key {
        Some(k) => Ok(Some(k)),
        None => Err(RuntimeError::MissingKey {
            provider: p.name.clone(),
            var: var.to_string(),
        }),
    }
}

/// Builds the chosen providers. Even one provider goes through the router:
/// it is what retries with backoff and honours `Retry-After`.
pub fn build(choice: &ProviderChoice, env: &Env) -> Result<Arc<dyn Provider>, RuntimeError> {
    let parts = choice
        .chain
        .iter()
        .map(|p| Ok((p, key_for(p, env)?)))
        .collect::<Result<Vec<_>, RuntimeError>>()?;
    Ok(Arc::new(pincer_providers::build_router("fallback", parts)?))
}
