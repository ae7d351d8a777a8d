//! HTTP plumbing the OpenAI and Anthropic clients share: the TLS setup, the
//! API key wrapper, status and transport error mapping, `Retry-After`, and
//! reading an SSE response body.

use crate::config::ProviderConfig;
use crate::sse::{SseEvent, SseParser};
use pincer_core::provider::ProviderError;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::ops::ControlFlow;
#[cfg(feature = "tls")]
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An API key. It is only ever written into a request header; its `Debug`
/// is a placeholder, and every error a client returns is scrubbed of it.
#[derive(Clone)]
pub(crate) struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl ApiKey {
    /// `None` for a missing or blank key.
    pub(crate) fn new(key: Option<String>) -> Option<Self> {
        key.map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .map(Self)
    }

    /// A header value marked sensitive (hyper and reqwest never print it).
    pub(crate) fn header(
        &self,
        provider: &str,
        prefix: &str,
    ) -> Result<HeaderValue, ProviderError> {
        let mut v = HeaderValue::from_str(&format!("{prefix}{}", self.0)).map_err(|_| {
            ProviderError::Config {
                provider: provider.to_string(),
                message: "the API key holds characters an HTTP header cannot carry".into(),
            }
        })?;
        v.set_sensitive(true);
        Ok(v)
    }

    /// Replaces the key in `text`. A key shorter than
    /// [`MIN_SECRET_CHARS`] is left alone: it is no secret worth the damage
    /// of replacing every `e` of a message with `<redacted>`.
    fn scrub(&self, text: &mut String) {
        if self.0.chars().count() >= MIN_SECRET_CHARS && text.contains(&self.0) {
            *text = text.replace(&self.0, "<redacted>");
        }
    }
}

/// The shortest key that is scrubbed from error messages.
pub(crate) const MIN_SECRET_CHARS: usize = 8;

/// Removes the key from every message an error carries (a vendor may echo
/// it back in a 401 body).
pub(crate) fn redact(mut e: ProviderError, key: Option<&ApiKey>) -> ProviderError {
    let Some(key) = key else { return e };
    match &mut e {
        ProviderError::Transport { message, .. }
        | ProviderError::RateLimited { message, .. }
        | ProviderError::Server { message, .. }
        | ProviderError::Rejected { message, .. }
        | ProviderError::Protocol { message, .. }
        | ProviderError::Config { message, .. } => key.scrub(message),
        ProviderError::Timeout { .. } => {}
        ProviderError::Exhausted { attempts, last, .. } => {
            for a in attempts.iter_mut() {
                key.scrub(&mut a.error);
            }
            let inner = std::mem::replace(
                last.as_mut(),
                ProviderError::Timeout {
                    provider: String::new(),
                    after: std::time::Duration::ZERO,
                },
            );
            **last = redact(inner, Some(key));
        }
    }
    e
}

/// What both HTTP clients take from a [`ProviderConfig`], checked.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub name: String,
    pub base_url: String,
    pub model: String,
    pub headers: HeaderMap,
    pub key: Option<ApiKey>,
    pub timeout: Duration,
    pub client: reqwest::Client,
    /// The model takes images.
    pub vision: bool,
}

impl Endpoint {
    pub(crate) fn new(
        cfg: &ProviderConfig,
        api_key: Option<String>,
    ) -> Result<Self, ProviderError> {
        let config = |message: String| ProviderError::Config {
            provider: cfg.name.clone(),
            message,
        };
        let base_url = crate::config::check_base_url(&cfg.base_url)
            .map_err(|reason| config(format!("base_url {reason}")))?;
        if cfg.model.trim().is_empty() {
            return Err(config("model must not be empty".into()));
        }
        if cfg.timeout_secs == 0 {
            return Err(config("timeout_secs must be at least 1".into()));
        }
        let key = ApiKey::new(api_key);
        if let (Some(var), None) = (&cfg.api_key_env, &key) {
            return Err(config(format!(
                "api_key_env names `{var}`, but no key was found there (is it set and non-empty?)"
            )));
        }
        if let Some(k) = &key {
            // Fail at start-up, not on the first call.
            k.header(&cfg.name, "")?;
        }
        let mut headers = HeaderMap::new();
        for (k, v) in &cfg.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| config(format!("headers: `{k}` is not a valid header name")))?;
            let mut value = HeaderValue::from_str(v).map_err(|_| {
                config(format!(
                    "headers: the value of `{k}` is not a valid header value"
                ))
            })?;
            // Debug output never shows header values.
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let timeout = Duration::from_secs(cfg.timeout_secs);
        let client = client(&cfg.name, &base_url, timeout)?;
        Ok(Self {
            name: cfg.name.clone(),
            base_url,
            model: cfg.model.clone(),
            headers,
            key,
            timeout,
            client,
            vision: cfg.vision,
        })
    }

    /// Replaces the timeout (and the client that enforces it).
    pub(crate) fn set_timeout(&mut self, timeout: Duration) -> Result<(), ProviderError> {
        self.client = client(&self.name, &self.base_url, timeout)?;
        self.timeout = timeout;
        Ok(())
    }

    /// POSTs a JSON body and returns the response if its status is a
    /// success; any other status becomes the matching error.
    /// POSTs `body` to `url` and assembles the streamed reply with `stream`:
    /// the part every wire format shares.
    pub(crate) async fn stream_chat<S: WireStream>(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &serde_json::Value,
        mut stream: S,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<pincer_core::provider::ChatResponse, ProviderError> {
        let resp = self.post_json(url, headers, body).await?;
        let ended = read_events(&self.name, self.timeout, resp, |ev| {
            stream.on_event(&ev, on_text)
        })
        .await?;
        stream.finish(ended)
    }

    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &serde_json::Value,
    ) -> Result<reqwest::Response, ProviderError> {
        let body = serde_json::to_vec(body).map_err(|e| ProviderError::Protocol {
            provider: self.name.clone(),
            message: format!("cannot encode the request: {e}"),
        })?;
        let resp = self
            .client
            .post(url)
            .headers(headers)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body)
            .send()
            .await
            .map_err(|e| send_error(&self.name, self.timeout, &e))?;
        if !resp.status().is_success() {
            return Err(status_error(&self.name, resp, self.key.as_ref()).await);
        }
        Ok(resp)
    }
}

/// Whether this build speaks TLS (the `tls` feature): without it every
/// client is plain `http://` only.
pub const TLS: bool = cfg!(feature = "tls");

/// Why an `https://` URL cannot be used by a build without the `tls`
/// feature; the caller names the field or the tool.
pub const NO_TLS: &str = "this pincer was built without the `tls` feature, so it speaks plain http:// only (a local llama-server or Ollama); use an http:// URL, or a build with TLS (the default build, or `--features tls`)";

/// A reqwest client builder for `url`, ready for TLS when the URL is
/// `https://` (see [`tls_config`]). Without the `tls` feature an
/// `https://` URL is refused with [`NO_TLS`], never tried in plain text.
pub fn client_builder(who: &str, url: &str) -> Result<reqwest::ClientBuilder, ProviderError> {
    #[cfg(feature = "tls")]
    {
        Ok(reqwest::Client::builder().tls_backend_preconfigured(tls_config(who, url)?))
    }
    #[cfg(not(feature = "tls"))]
    {
        if url
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        {
            return Err(ProviderError::Config {
                provider: who.to_string(),
                message: format!("`{url}` is an https:// URL, but {NO_TLS}"),
            });
        }
        Ok(reqwest::Client::builder())
    }
}

/// The rustls settings for a client of `base_url`, built on the `ring`
/// crypto provider (a much smaller build than the default `aws-lc-rs`) and
/// handed to reqwest whole, so no process-wide default provider is set.
///
/// An `https://` endpoint is verified against the system's CA store
/// (rustls-platform-verifier), loaded once per process and shared. An
/// `http://` endpoint (a local llama-server or Ollama) never negotiates
/// TLS, so its client does not read the CA store at all: start-up stays
/// cheap on a Pi, and a box without `ca-certificates` can still talk to
/// its local model. Such a client trusts no certificate, so a redirect
/// from `http://` to `https://` fails with a certificate error.
#[cfg(feature = "tls")]
pub fn tls_config(provider: &str, base_url: &str) -> Result<rustls::ClientConfig, ProviderError> {
    let config_error = |message: String| ProviderError::Config {
        provider: provider.to_string(),
        message,
    };
    let crypto = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(crypto)
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(format!("TLS setup: {e}")))?;
    let mut config = if base_url.starts_with("https://") {
        let verifier = system_verifier().map_err(|e| {
            config_error(format!(
                "cannot verify https certificates: {e} (is the ca-certificates package installed?)"
            ))
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

/// The platform verifier, built once: on Linux it parses every system CA
/// certificate, which is worth doing only once per process.
#[cfg(feature = "tls")]
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

/// An HTTP client for `base_url` whose connect and per-read timeouts are
/// `timeout`: a streaming reply may take longer than `timeout` in total, as
/// long as the server never goes silent that long.
pub(crate) fn client(
    provider: &str,
    base_url: &str,
    timeout: Duration,
) -> Result<reqwest::Client, ProviderError> {
    client_builder(provider, base_url)?
        .user_agent(concat!("pincer/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(timeout)
        .read_timeout(timeout)
        // A redirect to another host would carry `x-api-key` and configured
        // headers along (reqwest strips only `Authorization`): follow none;
        // a 3xx is reported as a rejection naming the status.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ProviderError::Config {
            provider: provider.to_string(),
            message: format!("cannot build the HTTP client: {}", error_chain(&e)),
        })
}

/// The error and its sources, joined with `: ` (reqwest's own message is
/// often just "error sending request").
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// A failed send or body read: a timeout or a transport error.
pub(crate) fn send_error(provider: &str, timeout: Duration, e: &reqwest::Error) -> ProviderError {
    if e.is_timeout() {
        ProviderError::Timeout {
            provider: provider.to_string(),
            after: timeout,
        }
    } else {
        ProviderError::Transport {
            provider: provider.to_string(),
            message: error_chain(e),
        }
    }
}

/// Error bodies are read up to this size; the message keeps less.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// A body that is not vendor JSON is cut to this many characters.
const MAX_MESSAGE_CHARS: usize = 300;

/// Maps a non-success response: 429 → `RateLimited` (with `Retry-After`),
/// 5xx (Anthropic's 529 included) → `Server`, anything else → `Rejected`,
/// each with the vendor's message.
pub(crate) async fn status_error(
    provider: &str,
    mut resp: reqwest::Response,
    key: Option<&ApiKey>,
) -> ProviderError {
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()));
    let mut body = Vec::new();
    // A body that fails half-way still gives what arrived.
    while let Ok(Some(chunk)) = resp.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    // Scrub the key from the whole body before it is cut to a message: a
    // key echoed across the cut would otherwise survive in part.
    let mut text = String::from_utf8_lossy(&body).into_owned();
    if let Some(key) = key {
        key.scrub(&mut text);
    }
    let mut message = vendor_message(&text);
    if message.is_empty() {
        message = status
            .canonical_reason()
            .unwrap_or("no message")
            .to_string();
    }
    let provider = provider.to_string();
    let code = status.as_u16();
    match code {
        429 => ProviderError::RateLimited {
            provider,
            retry_after,
            message,
        },
        // Not implemented, or an HTTP version the server does not speak:
        // asking again will not change the answer.
        501 | 505 => ProviderError::Rejected {
            provider,
            status: code,
            message,
        },
        500..=599 => ProviderError::Server {
            provider,
            status: code,
            message,
        },
        _ => ProviderError::Rejected {
            provider,
            status: code,
            message,
        },
    }
}

/// The human part of a vendor error body: `error.message` (OpenAI,
/// Anthropic), `error` as a string (Ollama), a top-level `message`, or
/// else the body text, trimmed and cut short.
pub(crate) fn vendor_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let found = v
            .pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str());
        if let Some(m) = found {
            return truncate(m.trim());
        }
    }
    truncate(body.trim())
}

pub(crate) fn truncate(s: &str) -> String {
    match s.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

/// Parses a `Retry-After` value: delta-seconds, or an HTTP-date (IMF-fixdate,
/// `Sun, 06 Nov 1994 08:49:37 GMT`) relative to `now`. A date in the past is
/// zero; anything else unparsable is `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // A huge number saturates rather than failing: it still means "long".
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = parse_http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an IMF-fixdate.
fn parse_http_date(s: &str) -> Option<u64> {
    let (_weekday, rest) = s.split_once(", ")?;
    let mut parts = rest.split(' ');
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':');
    let h: u64 = hms.next()?.parse().ok()?;
    let m: u64 = hms.next()?.parse().ok()?;
    let sec: u64 = hms.next()?.parse().ok()?;
    if parts.next()? != "GMT" || parts.next().is_some() || hms.next().is_some() {
        return None;
    }
    if !(1..=31).contains(&day) || year < 1970 || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec)
}

/// Days from 1970-01-01 to a date on or after it (Howard Hinnant's
/// `days_from_civil`, restricted to years ≥ 1970).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Largest SSE event (or unfinished line) accepted before the stream is
/// called malformed.
const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Reads an SSE body, handing each event to `on_event` until it breaks.
/// Returns `true` when `on_event` ended the stream, `false` when the body
/// ended first (the caller decides whether that was complete).
/// One vendor's streamed reply, assembled event by event.
pub(crate) trait WireStream {
    fn on_event(
        &mut self,
        ev: &SseEvent,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<ControlFlow<()>, ProviderError>;
    /// The assembled reply; `done` says whether the stream ended properly.
    fn finish(self, done: bool) -> Result<pincer_core::provider::ChatResponse, ProviderError>;
}

pub(crate) async fn read_events(
    provider: &str,
    timeout: Duration,
    mut resp: reqwest::Response,
    mut on_event: impl FnMut(SseEvent) -> Result<ControlFlow<()>, ProviderError>,
) -> Result<bool, ProviderError> {
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.starts_with("application/json") {
        let body = resp.text().await.unwrap_or_default();
        return Err(ProviderError::Protocol {
            provider: provider.to_string(),
            message: format!(
                "expected an event stream (text/event-stream), got JSON: {}",
                vendor_message(&body)
            ),
        });
    }
    let mut parser = SseParser::new();
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(false),
            Err(e) => return Err(send_error(provider, timeout, &e)),
        };
        for ev in parser.push(&chunk) {
            if on_event(ev)?.is_break() {
                return Ok(true);
            }
        }
        if parser.buffered() > MAX_EVENT_BYTES {
            return Err(ProviderError::Protocol {
                provider: provider.to_string(),
                message: format!("an event exceeds {MAX_EVENT_BYTES} bytes"),
            });
        }
    }
}

/// Parses one `data:` payload as JSON, or a `Protocol` error quoting it.
pub(crate) fn parse_data<T: serde::de::DeserializeOwned>(
    provider: &str,
    data: &str,
) -> Result<T, ProviderError> {
    serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
        provider: provider.to_string(),
        message: format!(
            "an event is not the expected JSON ({e}): {}",
            truncate(data)
        ),
    })
}

/// Tool-call arguments as the model sent them, as a RawValue that is a JSON
/// object. Empty text is `{}`; text that is not a JSON object is wrapped as
/// `{"_raw": "<text>"}` so the tool reports a clear error to the model
/// instead of the turn failing or the arguments being silently replaced.
pub(crate) fn arguments_raw(text: &str) -> Box<serde_json::value::RawValue> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return pincer_core::ToolCall::new("", "", &serde_json::json!({})).arguments;
    }
    // Line breaks in valid JSON are insignificant whitespace; as spaces they
    // keep the stored message on one line (pretty-printed arguments are common).
    if trimmed.starts_with('{')
        && let Ok(raw) =
            serde_json::value::RawValue::from_string(trimmed.replace(['\n', '\r'], " "))
    {
        return raw;
    }
    pincer_core::ToolCall::new("", "", &serde_json::json!({ "_raw": text })).arguments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_printed_arguments_become_one_line() {
        let raw = arguments_raw("{\n  \"path\": \"x\",\r\n  \"n\": 1\n}");
        assert!(!raw.get().contains(['\n', '\r']), "{}", raw.get());
        let m = pincer_core::Message::assistant_calls(
            "",
            vec![pincer_core::ToolCall {
                id: "c".into(),
                name: "t".into(),
                arguments: raw,
            }],
        );
        assert_eq!(m.validate(), Ok(()));
        assert_eq!(m.tool_calls[0].arguments_value()["path"], "x");
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn retry_after_values() {
        let now = at(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let check = |v: &str, want: Option<u64>| {
            assert_eq!(
                parse_retry_after(v, now),
                want.map(Duration::from_secs),
                "{v:?}"
            );
        };
        check("0", Some(0));
        check("7", Some(7));
        check(" 120 ", Some(120));
        check("99999999999999999999999", Some(u64::MAX));
        check("Sun, 06 Nov 1994 08:49:37 GMT", Some(0));
        check("Sun, 06 Nov 1994 08:50:07 GMT", Some(30));
        check("Mon, 07 Nov 1994 08:49:37 GMT", Some(86_400));
        check("Sat, 05 Nov 1994 08:49:37 GMT", Some(0));
        check(
            "Tue, 01 Mar 2000 00:00:00 GMT",
            Some(951_868_800 - 784_111_777),
        );
        check("", None);
        check("-5", None);
        check("1.5", None);
        check("soon", None);
        check("Sun, 06 Nov 1994 08:49:37 PST", None);
        check("Sun, 06 Foo 1994 08:49:37 GMT", None);
        check("Sun, 06 Nov 1994 25:49:37 GMT", None);
    }

    #[test]
    fn civil_days_match_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2024, 2, 29), 19_782);
    }

    #[test]
    fn vendor_messages() {
        assert_eq!(
            vendor_message(r#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#),
            "bad model"
        );
        assert_eq!(
            vendor_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            vendor_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(vendor_message("  plain text\n"), "plain text");
        let long = "é".repeat(1000);
        let cut = vendor_message(&long);
        assert_eq!(cut.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn arguments_are_kept_or_wrapped() {
        assert_eq!(arguments_raw(r#"{"a": 1}"#).get(), r#"{"a": 1}"#);
        assert_eq!(arguments_raw("").get(), "{}");
        assert_eq!(arguments_raw(r#"{"a": "#).get(), r#"{"_raw":"{\"a\": "}"#);
        assert_eq!(arguments_raw("[1]").get(), r#"{"_raw":"[1]"}"#);
    }

    /// Without TLS an https:// URL is refused by name before any byte is
    /// sent, never tried in plain text; http:// still works.
    #[cfg(not(feature = "tls"))]
    #[test]
    fn without_tls_https_is_refused_and_http_is_not() {
        for url in ["https://api.openai.com/v1", "HTTPS://h/v1"] {
            let e = client("p", url, Duration::from_secs(1)).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, ProviderError::Config { .. }), "{e:?}");
            assert!(
                text.contains(url) && text.contains("`tls` feature"),
                "{text}"
            );
        }
        client("p", "http://127.0.0.1:1", Duration::from_secs(1)).unwrap();
    }

    #[cfg(feature = "tls")]
    #[test]
    fn tls_uses_ring_and_reads_no_ca_store_for_plain_http() {
        let plain = tls_config("p", "http://127.0.0.1:8080/v1").unwrap();
        assert_eq!(plain.alpn_protocols, vec![b"http/1.1".to_vec()]);
        let ring = rustls::crypto::ring::default_provider();
        let suites = |c: &rustls::ClientConfig| {
            c.crypto_provider()
                .cipher_suites
                .iter()
                .map(|s| s.suite())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            suites(&plain),
            ring.cipher_suites
                .iter()
                .map(|s| s.suite())
                .collect::<Vec<_>>()
        );
        // No process-wide provider is installed behind the caller's back.
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
        // https: the system store when there is one, else a Config error
        // that says what to install; never a panic.
        match tls_config("p", "https://api.example.invalid/v1") {
            Ok(c) => assert_eq!(suites(&c), suites(&plain)),
            Err(e) => assert!(e.to_string().contains("ca-certificates"), "{e}"),
        }
        client("p", "http://127.0.0.1:1", Duration::from_secs(1)).unwrap();
    }

    #[test]
    fn keys_are_redacted() {
        let key = ApiKey::new(Some(" sk-secret ".into()));
        assert_eq!(format!("{key:?}"), "Some(ApiKey(<redacted>))");
        let e = ProviderError::Rejected {
            provider: "p".into(),
            status: 401,
            message: "Incorrect API key provided: sk-secret.".into(),
        };
        let e = redact(e, key.as_ref());
        assert_eq!(
            e.to_string(),
            "p: request rejected with 401: Incorrect API key provided: <redacted>."
        );
        assert!(ApiKey::new(Some("  ".into())).is_none());
    }
}

/// Why `url` is not a URL pincer can use, in the user's words: `e` as the
/// `url` crate says it, and for a host with non-ASCII letters (which this
/// build does not map to its ASCII form), what to write instead.
pub fn url_error(url: &str, e: &url::ParseError) -> String {
    if *e == url::ParseError::IdnaError
        || (!url.is_ascii() && *e == url::ParseError::InvalidDomainCharacter)
    {
        format!(
            "`{url}` is not a URL pincer can use: its host name has non-ASCII letters; write it in its ASCII (xn--, punycode) form"
        )
    } else {
        format!("`{url}` is not a URL: {e}")
    }
}

#[cfg(test)]
mod url_tests {
    use super::url_error;

    #[test]
    fn a_non_ascii_host_is_refused_naming_its_ascii_form() {
        for u in ["http://münchen.de/", "https://bücher.example/x"] {
            let e =
                url::Url::parse(u).expect_err("an internationalised host parses only in xn-- form");
            let m = url_error(u, &e);
            assert!(m.contains("non-ASCII") && m.contains("xn--"), "{m}");
        }
        // The ASCII form is a URL like any other.
        assert!(url::Url::parse("http://xn--mnchen-3ya.de/").is_ok());
        let e = url::Url::parse("http://[::1").expect_err("bad");
        assert!(url_error("http://[::1", &e).contains("is not a URL"));
    }
}
