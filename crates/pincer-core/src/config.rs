//! `config.toml`, parsed once into a validated [`Config`].
//!
//! Unknown keys and wrong types are errors that name the key and the line;
//! values that parse but make no sense (an output reserve larger than the
//! context window) are errors too. Nothing falls back silently.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// When the session store fsyncs (DESIGN ST6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicy {
    /// After every append.
    Always,
    /// After an append that holds a user message or a final reply.
    #[default]
    Turn,
    /// Never explicitly; the OS flushes when it likes.
    Never,
}

impl FsyncPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::Turn => "turn",
            FsyncPolicy::Never => "never",
        }
    }
}

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, llama.cpp `llama-server`,
    /// Ollama, vLLM, OpenRouter).
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// Replays a JSON script (tests, `pincer demo`).
    Scripted,
}

/// One configured provider (`[providers.NAME]`), as data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    /// E.g. `https://api.openai.com/v1`, `http://127.0.0.1:8080/v1`,
    /// `https://api.anthropic.com`.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key; the key itself is
    /// never in the config file.
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request.
    pub headers: std::collections::BTreeMap<String, String>,
    pub context_window: usize,
    pub timeout_secs: u64,
    /// Retries on this provider before the router moves to the next.
    pub max_retries: u32,
    /// The script file of a `scripted` provider.
    pub script: Option<PathBuf>,
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    pub session: SessionConfig,
    pub context: ContextConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionConfig {
    pub fsync: FsyncPolicy,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextConfig {
    /// The model's context window, in tokens.
    pub context_window: usize,
    /// Tokens kept free for the model's reply.
    pub output_reserve: usize,
    /// Default token estimate: characters per token (CX6).
    pub chars_per_token: f64,
    /// Cap on the running summary of dropped turns (CX5).
    pub summary_max_chars: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            session: SessionConfig {
                fsync: FsyncPolicy::Turn,
            },
            context: ContextConfig {
                context_window: 8192,
                output_reserve: 1024,
                chars_per_token: 4.0,
                summary_max_chars: 4000,
            },
        }
    }
}

/// The file `pincer init` writes: every key, commented, at its default.
pub const DEFAULT_CONFIG_TOML: &str = r#"# pincer configuration. Every key is optional; the values below are the
# defaults. An unknown key or a wrong type is an error naming the key and line.

[session]
# When session files are fsynced: "always" (every append), "turn" (every
# append holding a user message or a final reply; a user message is durable
# before the agent acknowledges it), or "never" (leave it to the OS).
fsync = "turn"

[context]
# The model's context window, in tokens.
context_window = 8192
# Tokens kept free for the model's reply; must be smaller than the window.
output_reserve = 1024
# Token estimate before the provider reports real usage: characters per token.
chars_per_token = 4.0
# The running summary of dropped turns is capped at this many characters.
summary_max_chars = 4000
"#;

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}:{line}: `{key}` {reason}")]
    Invalid {
        path: PathBuf,
        line: usize,
        key: &'static str,
        reason: String,
    },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    session: RawSession,
    #[serde(default)]
    context: RawContext,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSession {
    fsync: Option<FsyncPolicy>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawContext {
    context_window: Option<Spanned<usize>>,
    output_reserve: Option<Spanned<usize>>,
    chars_per_token: Option<Spanned<f64>>,
    summary_max_chars: Option<Spanned<usize>>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

impl Config {
    /// Loads `path`; a missing file is the default configuration.
    pub fn load(path: &Path) -> Result<(Config, bool), ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok((Config::parse(&text, path)?, true)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((Config::default(), false)),
            Err(e) => Err(ConfigError::Io {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
        }
    }

    /// Parses and validates TOML text; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let mut cfg = Config::default();
        if let Some(f) = raw.session.fsync {
            cfg.session.fsync = f;
        }
        let invalid = |span: std::ops::Range<usize>, key, reason: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: line_of(text, span.start),
            key,
            reason,
        };
        let c = &raw.context;
        if let Some(v) = &c.context_window {
            if *v.get_ref() < 256 {
                return Err(invalid(
                    v.span(),
                    "context.context_window",
                    format!("is {}; a usable window is at least 256 tokens", v.get_ref()),
                ));
            }
            cfg.context.context_window = *v.get_ref();
        }
        if let Some(v) = &c.output_reserve {
            cfg.context.output_reserve = *v.get_ref();
        }
        if cfg.context.output_reserve >= cfg.context.context_window {
            let span = c
                .output_reserve
                .as_ref()
                .map(|v| v.span())
                .or_else(|| c.context_window.as_ref().map(|v| v.span()))
                .unwrap_or(0..0);
            return Err(invalid(
                span,
                "context.output_reserve",
                format!(
                    "is {}, which leaves nothing of the {}-token context window for the conversation",
                    cfg.context.output_reserve, cfg.context.context_window
                ),
            ));
        }
        if let Some(v) = &c.chars_per_token {
            let x = *v.get_ref();
            if !(1.0..=12.0).contains(&x) {
                return Err(invalid(
                    v.span(),
                    "context.chars_per_token",
                    format!("is {x}; it must be between 1.0 and 12.0"),
                ));
            }
            cfg.context.chars_per_token = x;
        }
        if let Some(v) = &c.summary_max_chars {
            cfg.context.summary_max_chars = *v.get_ref();
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Result<(), &[&str]>) {
        let got = Config::parse(text, Path::new("/h/config.toml"));
        match (got, expected) {
            (Ok(_), Ok(())) => {}
            (Err(e), Err(needles)) => {
                let msg = e.to_string();
                for n in needles {
                    assert!(msg.contains(n), "`{msg}` should contain `{n}`");
                }
            }
            (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn default_file_is_the_default_config() {
        let cfg = Config::parse(DEFAULT_CONFIG_TOML, Path::new("x")).expect("parses");
        assert_eq!(cfg, Config::default());
        assert_eq!(
            Config::parse("", Path::new("x")).expect("empty ok"),
            Config::default()
        );
    }

    #[test]
    fn errors_name_key_and_line() {
        check("[session]\nfsync = \"always\"\n", Ok(()));
        check(
            "[session]\nfsync = \"sometimes\"\n",
            Err(&["config.toml", "line 2", "sometimes"]),
        );
        check(
            "[session]\nfsync = \"turn\"\ncolour = 1\n",
            Err(&["line 3", "colour"]),
        );
        check("[sesion]\nfsync = \"turn\"\n", Err(&["line 1", "sesion"]));
        check(
            "[context]\ncontext_window = \"big\"\n",
            Err(&["line 2", "context_window"]),
        );
        check(
            "[context]\ncontext_window = -5\n",
            Err(&["line 2", "context_window"]),
        );
        check(
            "[context]\n\ncontext_window = 100\n",
            Err(&["config.toml:3", "context.context_window", "256"]),
        );
        check(
            "[context]\ncontext_window = 4096\noutput_reserve = 4096\n",
            Err(&["config.toml:3", "context.output_reserve"]),
        );
        check(
            "[context]\nchars_per_token = 0.0\n",
            Err(&["config.toml:2", "context.chars_per_token"]),
        );
    }
}
