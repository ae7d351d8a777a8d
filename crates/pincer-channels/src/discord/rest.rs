//! A thin client for the few Discord REST routes pincer uses, over the
//! project's own reqwest: `GET /gateway/bot`, `POST` and `PATCH` on
//! `/channels/{id}/messages`, `POST /interactions/{id}/{token}/callback`,
//! and the download of an attachment. Every call carries
//! `Authorization: Bot <token>` (the download does not: the CDN is not
//! Discord's API and never sees the token). A 429 is waited out —
//! `retry_after` from the JSON body (seconds, a float), else the
//! `Retry-After` header — and the call tried again, up to
//! [`RATE_LIMIT_TRIES`] times and never for longer than
//! [`RATE_LIMIT_MAX`] at once.

use crate::http::{Token, chain, client};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// Attempts of one call that Discord answers with 429.
pub const RATE_LIMIT_TRIES: u32 = 4;
/// The longest single wait a 429 may ask for before the call gives up.
pub const RATE_LIMIT_MAX: Duration = Duration::from_secs(60);
const CALL: Duration = Duration::from_secs(30);
/// The largest REST answer read (a message object is a few KiB).
const MAX_BODY: usize = 1 << 20;

/// What a call's failure means for the caller.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RestError {
    #[error("Discord asks to wait {retry_after:?} (429) on {route}")]
    RateLimited {
        route: &'static str,
        retry_after: Duration,
    },
    #[error("Discord refused the bot token (401 on {0}); check the variable token_env names")]
    Unauthorized(&'static str),
    #[error("Discord refused {route} ({code}): {message}")]
    Rejected {
        route: &'static str,
        code: u16,
        message: String,
    },
    #[error("cannot reach Discord: {0}")]
    Transport(String),
    #[error("Discord sent something that is not the API's answer: {0}")]
    Protocol(String),
}

/// How long a 429 asks to wait: the body's `retry_after` (seconds, a
/// float), else the `Retry-After` header (seconds), else one second.
pub fn retry_after(body: &[u8], header: Option<&str>) -> Duration {
    #[derive(Deserialize)]
    struct Limited {
        retry_after: Option<f64>,
    }
    let from_body = serde_json::from_slice::<Limited>(body)
        .ok()
        .and_then(|l| l.retry_after);
    let from_header = header.and_then(|h| h.trim().parse::<f64>().ok());
    let secs = from_body.or(from_header).unwrap_or(1.0);
    if secs.is_finite() && secs > 0.0 {
        Duration::from_secs_f64(secs.min(3600.0))
    } else {
        Duration::ZERO
    }
}

/// A created message, as far as pincer reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct Created {
    pub id: String,
}

/// The client.
#[derive(Debug, Clone)]
pub struct Rest {
    base: String,
    token: Token,
    http: reqwest::Client,
}

impl Rest {
    pub fn new(base: &str, token: Token) -> Result<Rest, RestError> {
        let http = client("discord", base, CALL).map_err(RestError::Transport)?;
        Ok(Rest {
            base: base.trim_end_matches('/').to_string(),
            token,
            http,
        })
    }

    pub fn token(&self) -> &Token {
        &self.token
    }

    async fn call(
        &self,
        method: reqwest::Method,
        route: &'static str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Vec<u8>, RestError> {
        let url = format!("{}{path}", self.base);
        // Errors name the route's template, not its path: an interaction's
        // path holds its token, which lets anyone post as the app for
        // 15 minutes; the bot token is scrubbed wherever it shows.
        let template = route.split_once(' ').map_or(route, |(_, p)| p);
        let scrub = |s: String| {
            let s = self.token.scrub(&s);
            if path.is_empty() {
                s
            } else {
                s.replace(path, template)
            }
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let mut req = self
                .http
                .request(method.clone(), &url)
                .header(
                    reqwest::header::AUTHORIZATION,
                    format!("Bot {}", self.token.expose()),
                )
                .timeout(CALL);
            if let Some(b) = body {
                req = req
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(b.to_string());
            }
            let resp = req
                .send()
                .await
                .map_err(|e| RestError::Transport(scrub(chain(&e))))?;
            let status = resp.status().as_u16();
            let header = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let mut resp = resp;
            let mut bytes = Vec::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| RestError::Transport(scrub(chain(&e))))?
            {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > MAX_BODY {
                    return Err(RestError::Protocol(format!(
                        "the answer to {route} is over {MAX_BODY} bytes"
                    )));
                }
            }
            match status {
                200..=299 => return Ok(bytes),
                429 => {
                    let wait = retry_after(&bytes, header.as_deref());
                    if tries >= RATE_LIMIT_TRIES || wait > RATE_LIMIT_MAX {
                        return Err(RestError::RateLimited {
                            route,
                            retry_after: wait,
                        });
                    }
                    tracing::info!(route, ?wait, "discord: rate limited; waiting");
                    tokio::time::sleep(wait).await;
                }
                401 => return Err(RestError::Unauthorized(route)),
                code => {
                    #[derive(Deserialize)]
                    struct Problem {
                        message: Option<String>,
                    }
                    let message = serde_json::from_slice::<Problem>(&bytes)
                        .ok()
                        .and_then(|p| p.message)
                        .unwrap_or_else(|| {
                            String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned()
                        });
                    return Err(RestError::Rejected {
                        route,
                        code,
                        message: scrub(message),
                    });
                }
            }
        }
    }

    async fn json<T: serde::de::DeserializeOwned>(
        &self,
        method: reqwest::Method,
        route: &'static str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<T, RestError> {
        let bytes = self.call(method, route, path, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| RestError::Protocol(format!("{route}: {e}")))
    }

    /// `GET /gateway/bot`: the gateway URL to connect to.
    pub async fn gateway_url(&self) -> Result<String, RestError> {
        #[derive(Deserialize)]
        struct GatewayBot {
            url: String,
        }
        let g: GatewayBot = self
            .json(
                reqwest::Method::GET,
                "GET /gateway/bot",
                "/gateway/bot",
                None,
            )
            .await?;
        Ok(g.url)
    }

    /// Posts `content` (at most 2000 characters) to `channel`, mentions
    /// disabled (a reply cannot ping `@everyone` or anyone), with
    /// `components` when given; returns the message id.
    pub async fn create_message(
        &self,
        channel: &str,
        content: &str,
        components: Option<Value>,
    ) -> Result<String, RestError> {
        let mut body = json!({"content": content, "allowed_mentions": {"parse": []}});
        if let Some(c) = components {
            body["components"] = c;
        }
        let m: Created = self
            .json(
                reqwest::Method::POST,
                "POST /channels/{id}/messages",
                &format!("/channels/{}/messages", path_part(channel)?),
                Some(&body),
            )
            .await?;
        Ok(m.id)
    }

    /// Replaces a message's content and removes its components.
    pub async fn settle_message(
        &self,
        channel: &str,
        message: &str,
        content: &str,
    ) -> Result<(), RestError> {
        self.call(
            reqwest::Method::PATCH,
            "PATCH /channels/{id}/messages/{id}",
            &format!(
                "/channels/{}/messages/{}",
                path_part(channel)?,
                path_part(message)?
            ),
            Some(&json!({"content": content, "components": [], "allowed_mentions": {"parse": []}})),
        )
        .await
        .map(drop)
    }

    /// Answers an interaction (a button press): `body` is the callback
    /// (`{"type": 6}` acknowledges without changing the message).
    pub async fn interaction_callback(
        &self,
        id: &str,
        token: &str,
        body: &Value,
    ) -> Result<(), RestError> {
        self.call(
            reqwest::Method::POST,
            "POST /interactions/{id}/{token}/callback",
            &format!(
                "/interactions/{}/{}/callback",
                path_part(id)?,
                path_part(token)?
            ),
            Some(body),
        )
        .await
        .map(drop)
    }

    /// Downloads `url` without the bot token, refusing more than `max`
    /// bytes (by the declared length, and again while reading).
    pub async fn download(&self, url: &str, max: usize) -> Result<Vec<u8>, RestError> {
        let too_big = |n: u64| RestError::Rejected {
            route: "attachment download",
            code: 413,
            message: format!("the attachment is {n} bytes, over the limit of {max}"),
        };
        let mut resp = self
            .http
            .get(url)
            .timeout(CALL)
            .send()
            .await
            .map_err(|e| RestError::Transport(chain(&e)))?;
        if !resp.status().is_success() {
            return Err(RestError::Rejected {
                route: "attachment download",
                code: resp.status().as_u16(),
                message: "the attachment could not be fetched".into(),
            });
        }
        if let Some(n) = resp.content_length()
            && n > max as u64
        {
            return Err(too_big(n));
        }
        let mut out = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| RestError::Transport(chain(&e)))?
        {
            out.extend_from_slice(&chunk);
            if out.len() > max {
                return Err(too_big(out.len() as u64));
            }
        }
        Ok(out)
    }
}

/// An id or token that goes into a URL path: only what Discord issues
/// (letters, digits, `-`, `_`, `.`), so nothing a gateway event carries
/// can change the route.
fn path_part(s: &str) -> Result<&str, RestError> {
    if !s.is_empty()
        && s.len() <= 512
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s != "."
        && s != ".."
    {
        Ok(s)
    } else {
        Err(RestError::Protocol(format!(
            "`{}` cannot be part of a route",
            pincer_core::text::cut(s, 40)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_429_says_how_long_in_the_body_or_the_header() {
        assert_eq!(
            retry_after(br#"{"message": "You are being rate limited.", "retry_after": 0.25, "global": false}"#, Some("1")),
            Duration::from_millis(250)
        );
        assert_eq!(retry_after(b"not json", Some("2")), Duration::from_secs(2));
        assert_eq!(retry_after(b"", None), Duration::from_secs(1));
        assert_eq!(retry_after(br#"{"retry_after": -3}"#, None), Duration::ZERO);
        assert_eq!(
            retry_after(br#"{"retry_after": 1e300}"#, None),
            Duration::from_secs(3600)
        );
    }

    #[test]
    fn route_parts_are_ids_only() {
        assert!(path_part("80351110224678912").is_ok());
        assert!(path_part("aW50ZXJhY3Rpb246MTIz.abc-_").is_ok());
        for bad in ["", "..", "1/2", "1?x=y", "a b", "%2e%2e"] {
            assert!(path_part(bad).is_err(), "{bad}");
        }
    }
}
