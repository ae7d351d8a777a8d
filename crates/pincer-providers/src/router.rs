//! The fallback router (PR2): one [`Provider`] over an ordered chain.
//!
//! For each provider in order: a success is returned at once, with
//! `ChatResponse::provider` set to the provider that answered. A retryable
//! error ([`ProviderError::is_retryable`]: transport, timeout, 429, 5xx) is
//! retried on the same provider up to its [`RetryPolicy::max_retries`],
//! waiting an exponential backoff (or the server's `Retry-After`), then the
//! next provider is tried. A `Retry-After` longer than
//! [`RetryPolicy::max_retry_after`] moves on to the next provider at once,
//! rather than stalling the user. A non-retryable error (`Rejected`,
//! `Protocol`, `Config`) stops everything with that error: the next vendor
//! would most likely reject the same request, and a clear error beats a
//! quiet switch. When every provider fails, the last error is returned.
//!
//! Every attempt is logged ([`Attempt`]): [`Router::chat_logged`] returns
//! the log with the result; [`Router::last_attempts`] keeps the log of the
//! most recent call made through the `Provider` trait.
//!
//! Text already streamed: a provider that fails mid-stream may have sent
//! deltas through `on_text` before it failed, and the retry or the next
//! provider streams its own reply from the start. Text cannot be taken back
//! from a terminal, so the router streams [`RETRY_MARKER`] between the cut
//! off text and the next attempt; the reply the agent stores is only the
//! successful attempt's. No jitter is added to backoffs: one agent makes one
//! call at a time, so there is no herd to spread.

use crate::config::ProviderConfig;
use pincer_core::provider::{
    BoxFuture, ChatRequest, ChatResponse, FailedAttempt, Provider, ProviderCaps, ProviderError,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Streamed after text from an attempt that then failed, before the retry.
pub const RETRY_MARKER: &str = "\n[the answer above was cut off; retrying]\n";
use std::time::Duration;

/// How one provider in the chain is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt before moving on.
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub base_backoff: Duration,
    /// Cap on one backoff wait.
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured; a longer one moves on at once.
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    pub const DEFAULT_BASE_BACKOFF: Duration = Duration::from_millis(250);
    pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(4);
    pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

    /// `max_retries` with the default waits (250 ms doubling, capped at
    /// 4 s; `Retry-After` honoured up to 30 s).
    pub fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            base_backoff: Self::DEFAULT_BASE_BACKOFF,
            max_backoff: Self::DEFAULT_MAX_BACKOFF,
            max_retry_after: Self::DEFAULT_MAX_RETRY_AFTER,
        }
    }

    /// The policy of a configured provider.
    pub fn from_config(cfg: &ProviderConfig) -> Self {
        Self::new(cfg.max_retries)
    }

    /// The wait before retry number `retry` (0 for the first retry).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base_backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }
}

/// Waits between attempts. The default is `tokio::time::sleep`; tests
/// inject one that records the waits and returns at once.
pub trait Sleeper: Send + Sync {
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()>;
}

/// Sleeps on the tokio timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(d))
    }
}

/// One call to one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub provider: String,
    /// 0 for the first try on this provider, 1 for the first retry…
    pub retry: u32,
    /// How long the router waited before this attempt.
    pub waited: Duration,
    /// `None` when it answered.
    pub error: Option<ProviderError>,
}

impl std::fmt::Display for Attempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (try {}", self.provider, self.retry + 1)?;
        if !self.waited.is_zero() {
            write!(f, ", after waiting {:?}", self.waited)?;
        }
        match &self.error {
            None => write!(f, "): answered"),
            Some(e) => write!(f, "): {e}"),
        }
    }
}

/// A [`Provider`] that walks a fallback chain; see the module doc.
pub struct Router {
    name: String,
    chain: Vec<(Box<dyn Provider>, RetryPolicy)>,
    sleeper: Arc<dyn Sleeper>,
    last: Mutex<Vec<Attempt>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let chain: Vec<(&str, &RetryPolicy)> =
            self.chain.iter().map(|(p, r)| (p.name(), r)).collect();
        f.debug_struct("Router")
            .field("name", &self.name)
            .field("chain", &chain)
            .finish_non_exhaustive()
    }
}

impl Router {
    /// A router named `name` (what [`Provider::name`] returns) over `chain`,
    /// tried in order.
    pub fn new(name: impl Into<String>, chain: Vec<(Box<dyn Provider>, RetryPolicy)>) -> Self {
        Self {
            name: name.into(),
            chain,
            sleeper: Arc::new(TokioSleeper),
            last: Mutex::new(Vec::new()),
        }
    }

    /// Replaces how the router waits (tests record the waits instead).
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// The providers' names, in order.
    pub fn chain_names(&self) -> Vec<&str> {
        self.chain.iter().map(|(p, _)| p.name()).collect()
    }

    /// The attempts of the most recent call made through [`Provider::chat`].
    pub fn last_attempts(&self) -> Vec<Attempt> {
        self.last
            .lock()
            .map(|l| l.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// Walks the chain, returning the result and every attempt made.
    pub async fn chat_logged(
        &self,
        req: &ChatRequest<'_>,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> (Result<ChatResponse, ProviderError>, Vec<Attempt>) {
        let mut log = Vec::new();
        let mut last_error = None;
        let streamed = AtomicBool::new(false);
        let on_text_tracked = |t: &str| {
            streamed.store(true, Ordering::Relaxed);
            on_text(t);
        };
        for (provider, policy) in &self.chain {
            let mut retry = 0;
            let mut waited = Duration::ZERO;
            loop {
                if streamed.swap(false, Ordering::Relaxed) {
                    on_text(RETRY_MARKER);
                }
                let result = provider.chat(req, &on_text_tracked).await;
                let mut attempt = Attempt {
                    provider: provider.name().to_string(),
                    retry,
                    waited,
                    error: None,
                };
                let err = match result {
                    Ok(mut resp) => {
                        tracing::debug!(provider = provider.name(), retry, model = %resp.model, "provider answered");
                        resp.provider = provider.name().to_string();
                        resp.attempts = failed(&log);
                        log.push(attempt);
                        return (Ok(resp), log);
                    }
                    Err(e) => e,
                };
                // The same server error twice in a row on one provider will
                // not change on a third try (llama-server's "tools param
                // requires --jinja flag" is a 500): move on.
                let repeated = matches!(
                    (&err, log.last()),
                    (
                        ProviderError::Server { message, .. },
                        Some(Attempt { provider: p, error: Some(ProviderError::Server { message: before, .. }), .. })
                    ) if p == provider.name() && message == before
                );
                tracing::debug!(provider = provider.name(), retry, error = %err, "provider attempt failed");
                attempt.error = Some(err.clone());
                log.push(attempt);
                if !err.is_retryable() {
                    return (Err(exhausted(&self.name, &log, err)), log);
                }
                let wait = match &err {
                    ProviderError::RateLimited {
                        retry_after: Some(d),
                        ..
                    } if *d > policy.max_retry_after => None,
                    ProviderError::RateLimited {
                        retry_after: Some(d),
                        ..
                    } => Some(*d),
                    _ if repeated => None,
                    _ => Some(policy.backoff(retry)),
                };
                last_error = Some(err);
                match wait {
                    Some(d) if retry < policy.max_retries => {
                        self.sleeper.sleep(d).await;
                        waited = d;
                        retry += 1;
                    }
                    _ => break,
                }
            }
        }
        let err = match last_error {
            Some(e) => exhausted(&self.name, &log, e),
            None => ProviderError::Config {
                provider: self.name.clone(),
                message: "the fallback chain is empty: configure at least one provider".into(),
            },
        };
        (Err(err), log)
    }
}

/// The failed attempts of `log`, as the agent reports them.
fn failed(log: &[Attempt]) -> Vec<FailedAttempt> {
    log.iter()
        .filter_map(|a| {
            a.error.as_ref().map(|e| FailedAttempt {
                provider: a.provider.clone(),
                retry: a.retry,
                waited_ms: u64::try_from(a.waited.as_millis()).unwrap_or(u64::MAX),
                error: e.to_string(),
            })
        })
        .collect()
}

/// `last` as the router's answer: itself when it was the only attempt,
/// else [`ProviderError::Exhausted`] with every attempt before it.
fn exhausted(name: &str, log: &[Attempt], last: ProviderError) -> ProviderError {
    if log.len() <= 1 {
        return last;
    }
    ProviderError::Exhausted {
        provider: name.to_string(),
        attempts: failed(log),
        last: Box::new(last),
    }
}

impl Provider for Router {
    fn name(&self) -> &str {
        &self.name
    }

    /// What every provider in the chain can do: the agent may be answered
    /// by any of them.
    fn caps(&self) -> ProviderCaps {
        let mut caps = self.chain.iter().map(|(p, _)| p.caps());
        let Some(first) = caps.next() else {
            return ProviderCaps::default();
        };
        caps.fold(first, |a, b| ProviderCaps {
            tools: a.tools && b.tools,
            streaming: a.streaming && b.streaming,
            vision: a.vision && b.vision,
        })
    }

    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let (result, log) = self.chat_logged(req, on_text).await;
            match self.last.lock() {
                Ok(mut last) => *last = log,
                Err(poisoned) => *poisoned.into_inner() = log,
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pincer_core::Message;
    use pincer_core::provider::FinishReason;
    use std::collections::VecDeque;

    /// A provider that returns queued results and counts calls.
    struct Fake {
        name: String,
        results: Mutex<VecDeque<Result<(), ProviderError>>>,
        caps: ProviderCaps,
    }

    impl Fake {
        fn boxed(name: &str, results: Vec<Result<(), ProviderError>>) -> Box<dyn Provider> {
            Box::new(Self {
                name: name.into(),
                results: Mutex::new(results.into()),
                caps: ProviderCaps {
                    tools: true,
                    streaming: true,
                    vision: name == "v",
                },
            })
        }
    }

    impl Provider for Fake {
        fn name(&self) -> &str {
            &self.name
        }
        fn caps(&self) -> ProviderCaps {
            self.caps
        }
        fn chat<'a>(
            &'a self,
            _req: &'a ChatRequest<'a>,
            on_text: &'a (dyn Fn(&str) + Send + Sync),
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            Box::pin(async move {
                on_text(&self.name);
                let next = self.results.lock().unwrap().pop_front();
                next.expect("no more fake results")?;
                Ok(ChatResponse {
                    content: "ok".into(),
                    tool_calls: vec![],
                    finish: FinishReason::Stop,
                    usage: None,
                    provider: "inner-name".into(),
                    model: "m".into(),
                    attempts: Vec::new(),
                })
            })
        }
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<Duration>>);

    impl Sleeper for Recorder {
        fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
            self.0.lock().unwrap().push(d);
            Box::pin(async {})
        }
    }

    fn transport(p: &str) -> Result<(), ProviderError> {
        Err(ProviderError::Transport {
            provider: p.into(),
            message: "refused".into(),
        })
    }

    fn policy(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            base_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            max_retry_after: Duration::from_secs(30),
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn req() -> ChatRequest<'static> {
        ChatRequest {
            system: String::new(),
            messages: vec![Message::user("hi")].into(),
            tools: Vec::new().into(),
            max_tokens: 10,
        }
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy::new(5);
        let waits: Vec<u128> = (0..7).map(|r| p.backoff(r).as_millis()).collect();
        assert_eq!(waits, vec![250, 500, 1000, 2000, 4000, 4000, 4000]);
        assert_eq!(p.backoff(u32::MAX), Duration::from_secs(4));
    }

    #[test]
    fn retries_with_backoff_then_falls_back_and_logs() {
        let rec = Arc::new(Recorder::default());
        let router = Router::new(
            "r",
            vec![
                (
                    Fake::boxed(
                        "a",
                        vec![
                            transport("a"),
                            transport("a"),
                            transport("a"),
                            transport("a"),
                        ],
                    ),
                    policy(3),
                ),
                (Fake::boxed("b", vec![Ok(())]), policy(3)),
            ],
        )
        .with_sleeper(rec.clone());
        let streamed = Mutex::new(String::new());
        let on_text = |t: &str| streamed.lock().unwrap().push_str(t);
        let resp = block_on(router.chat(&req(), &on_text)).unwrap();
        assert_eq!(resp.provider, "b");
        assert_eq!(
            *rec.0.lock().unwrap(),
            vec![
                Duration::from_millis(100),
                Duration::from_millis(200),
                Duration::from_millis(350)
            ]
        );
        // Text from failed attempts reached on_text, each followed by the
        // marker before the next attempt (documented).
        assert_eq!(
            *streamed.lock().unwrap(),
            ["a", "a", "a", "a", "b"].join(RETRY_MARKER)
        );
        let log = router.last_attempts();
        let summary: Vec<(String, u32, bool)> = log
            .iter()
            .map(|a| (a.provider.clone(), a.retry, a.error.is_some()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a".into(), 0, true),
                ("a".into(), 1, true),
                ("a".into(), 2, true),
                ("a".into(), 3, true),
                ("b".into(), 0, false),
            ]
        );
        assert_eq!(log[3].waited, Duration::from_millis(350));
        assert_eq!(
            log[3].to_string(),
            "a (try 4, after waiting 350ms): a: cannot reach the server: refused"
        );
    }

    #[test]
    fn empty_chain_is_a_config_error_and_caps_are_shared() {
        let router = Router::new("r", vec![]);
        let r = block_on(router.chat(&req(), &|_| {}));
        assert!(matches!(r, Err(ProviderError::Config { .. })), "{r:?}");
        assert_eq!(router.caps(), ProviderCaps::default());
        let router = Router::new(
            "r",
            vec![
                (Fake::boxed("v", vec![]), policy(0)),
                (Fake::boxed("b", vec![]), policy(0)),
            ],
        );
        assert_eq!(
            router.caps(),
            ProviderCaps {
                tools: true,
                streaming: true,
                vision: false
            }
        );
        assert_eq!(router.chain_names(), vec!["v", "b"]);
    }
}
