//! The HTTP client the channels share: reqwest on rustls with the `ring`
//! provider, exactly as the model providers build theirs (one TLS stack in
//! the binary), and the scrubbing that keeps a bot token out of every
//! error: Telegram puts the token in the URL path, which reqwest quotes.

use std::time::Duration;

/// A bot token; its `Debug` is a placeholder.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    pub fn new(t: impl Into<String>) -> Option<Token> {
        let t = t.into().trim().to_string();
        (!t.is_empty()).then_some(Token(t))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with the token replaced.
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() >= 4 {
            text.replace(&self.0, "<token>")
        } else {
            text.to_string()
        }
    }
}

/// A client for `base` (`https://…` is verified against the system's CA
/// store; `http://` is for a local test server).
pub fn client(name: &str, base: &str, timeout: Duration) -> Result<reqwest::Client, String> {
    let tls = pincer_providers::tls_config(name, base).map_err(|e| e.to_string())?;
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .user_agent(concat!("pincer/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// An error with its causes, as one line.
pub use pincer_providers::error_chain as chain;
