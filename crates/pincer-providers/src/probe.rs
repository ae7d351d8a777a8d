//! Probing a local OpenAI-compatible server (PR3) for `pincer doctor`.
//!
//! [`probe`] asks two things at once: `GET {root}/health` (llama-server
//! answers 200 when its model is loaded, 503 while loading; Ollama has no
//! such route) where `root` is the base URL without a trailing `/v1`, and
//! `GET {base_url}/models` (both list models in OpenAI's format `{"data":
//! [{"id": …}]}`). The report says what each returned and is
//! [`serde::Serialize`] for `pincer doctor --json`. No API key is sent: this
//! is for local servers.

use crate::http;
use serde::Serialize;
use std::time::{Duration, Instant};

/// What one `GET` returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub url: String,
    /// The request succeeded with a 2xx status (and, for `/models`, the body
    /// was a model list).
    pub ok: bool,
    /// The HTTP status, when the server answered at all.
    pub status: Option<u16>,
    /// Why it is not ok, in words.
    pub error: Option<String>,
    pub elapsed_ms: u64,
}

/// The result of [`probe`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeReport {
    pub base_url: String,
    pub health: Check,
    pub models: Check,
    /// The model ids `/models` listed.
    pub model_ids: Vec<String>,
}

impl ProbeReport {
    /// The server is usable: `/models` answered with an OpenAI model list.
    pub fn answers(&self) -> bool {
        // `/health` alone is not enough: port 8080 is often some other web
        // server with a health route. Only a model list proves an
        // OpenAI-compatible server we can send prompts to.
        self.models.ok
    }
}

#[derive(serde::Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(serde::Deserialize)]
struct ModelEntry {
    id: String,
}

/// Probes `base_url` (e.g. `http://127.0.0.1:8080/v1`); each request is
/// bounded by `timeout`, and both run concurrently.
pub async fn probe(base_url: &str, timeout: Duration) -> ProbeReport {
    let base = base_url.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let health_url = format!("{root}/health");
    let models_url = format!("{base}/models");
    let client = match probe_client(base, timeout) {
        Ok(c) => c,
        Err(e) => {
            let failed = |url: &str| Check {
                url: url.to_string(),
                ok: false,
                status: None,
                error: Some(e.clone()),
                elapsed_ms: 0,
            };
            return ProbeReport {
                base_url: base_url.to_string(),
                health: failed(&health_url),
                models: failed(&models_url),
                model_ids: Vec::new(),
            };
        }
    };
    let ((health, _), (mut models, body)) = tokio::join!(
        get(&client, &health_url, timeout),
        get(&client, &models_url, timeout)
    );
    let mut model_ids = Vec::new();
    if models.ok {
        match serde_json::from_str::<ModelList>(&body) {
            Ok(list) => model_ids = list.data.into_iter().map(|m| m.id).collect(),
            Err(e) => {
                models.ok = false;
                models.error = Some(format!(
                    "not an OpenAI model list ({e}): {}",
                    http::truncate(body.trim())
                ));
            }
        }
    }
    ProbeReport {
        base_url: base_url.to_string(),
        health,
        models,
        model_ids,
    }
}

/// Probes an Anthropic Messages endpoint: `GET {base}/v1/models` with the
/// key, as `pincer doctor` does for every configured Anthropic provider
/// (a wrong key answers 401, a wrong URL does not answer).
pub async fn probe_anthropic(base_url: &str, api_key: &str, timeout: Duration) -> Check {
    let base = base_url.trim_end_matches('/');
    let url = format!("{base}/v1/models");
    let client = match probe_client(base, timeout) {
        Ok(c) => c,
        Err(e) => {
            return Check {
                url,
                ok: false,
                status: None,
                error: Some(e),
                elapsed_ms: 0,
            };
        }
    };
    let request = client.get(&url).header("x-api-key", api_key).header(
        "anthropic-version",
        crate::config::defaults::ANTHROPIC_VERSION,
    );
    let (mut check, _) = send(request, &url, timeout).await;
    if let Some(e) = &mut check.error {
        // A vendor may echo the key back.
        if api_key.chars().count() >= http::MIN_SECRET_CHARS {
            *e = e.replace(api_key, "<redacted>");
        }
    }
    check
}

fn probe_client(base_url: &str, timeout: Duration) -> Result<reqwest::Client, String> {
    http::client_builder("probe", base_url)
        .map_err(|e| e.to_string())?
        .timeout(timeout)
        .build()
        .map_err(|e| http::error_chain(&e))
}

/// One GET, and its body when it succeeded.
async fn get(client: &reqwest::Client, url: &str, timeout: Duration) -> (Check, String) {
    send(client.get(url), url, timeout).await
}

async fn send(request: reqwest::RequestBuilder, url: &str, timeout: Duration) -> (Check, String) {
    let started = Instant::now();
    let result = async {
        let resp = request.send().await?;
        let status = resp.status();
        let body = resp.text().await?;
        Ok::<_, reqwest::Error>((status, body))
    }
    .await;
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match result {
        Ok((status, body)) if status.is_success() => (
            Check {
                url: url.to_string(),
                ok: true,
                status: Some(status.as_u16()),
                error: None,
                elapsed_ms,
            },
            body,
        ),
        Ok((status, body)) => {
            let message = http::vendor_message(&body);
            let reason = status.canonical_reason().unwrap_or("error");
            (
                Check {
                    url: url.to_string(),
                    ok: false,
                    status: Some(status.as_u16()),
                    error: Some(if message.is_empty() {
                        format!("HTTP {}: {reason}", status.as_u16())
                    } else {
                        format!("HTTP {}: {message}", status.as_u16())
                    }),
                    elapsed_ms,
                },
                String::new(),
            )
        }
        Err(e) => (
            Check {
                url: url.to_string(),
                ok: false,
                status: e.status().map(|s| s.as_u16()),
                error: Some(if e.is_timeout() {
                    format!("no answer within {timeout:?}")
                } else {
                    http::error_chain(&e)
                }),
                elapsed_ms,
            },
            String::new(),
        ),
    }
}

/// Probes every candidate concurrently and returns the first, in the
/// order given, that [answers](ProbeReport::answers), with its report.
pub async fn detect_local(candidates: &[&str], timeout: Duration) -> Option<(String, ProbeReport)> {
    let mut set = tokio::task::JoinSet::new();
    for (i, url) in candidates.iter().enumerate() {
        let url = (*url).to_string();
        set.spawn(async move { (i, probe(&url, timeout).await) });
    }
    let mut reports: Vec<Option<ProbeReport>> = vec![None; candidates.len()];
    while let Some(joined) = set.join_next().await {
        // A probe task cannot panic short of a bug; its slot stays empty.
        if let Ok((i, report)) = joined
            && let Some(slot) = reports.get_mut(i)
        {
            *slot = Some(report);
        }
    }
    reports
        .into_iter()
        .flatten()
        .find(ProbeReport::answers)
        .map(|r| (r.base_url.clone(), r))
}
