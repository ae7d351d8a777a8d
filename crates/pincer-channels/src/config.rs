//! `[channels.telegram]` in `config.toml`, owned here and validated when
//! pincer loads the file (the binary passes [`SECTION`]), every error
//! naming the file, the line and the key. Discord and the camera channel
//! are not written yet: `[channels.discord]` or `[channels.camera]` is
//! refused as an unknown key, never silently ignored.
//!
//! `allow_users` empty means nobody may chat, not everybody.

use pincer_core::config::{ConfigError, Source};
use pincer_runtime::{FrontEndSection, Settings};
use serde::{Deserialize, Serialize};
use toml::Spanned;

pub const SECTION: FrontEndSection = FrontEndSection {
    name: "channels",
    parse: |src| {
        let cfg = parse(src)?;
        serde_json::to_value(cfg).map_err(|e| src.invalid_at("channels", e.to_string()))
    },
    example_toml: EXAMPLE_TOML,
};

const EXAMPLE_TOML: &str = r#"
# Chat channels `pincer serve` runs (docs/serve.md). allow_users are the
# platform's numeric user ids that may chat: empty means nobody. approvers
# are the ids whose approval buttons count.
# [channels.telegram]
# token_env = "TELEGRAM_BOT_TOKEN"     # the variable holding the bot token
# api_base = "https://api.telegram.org"
# allow_users = [123456789]
# approvers = [123456789]
# poll_timeout_secs = 25
"#;

/// The Bot API's public address.
pub const TELEGRAM_API: &str = "https://api.telegram.org";

/// `[channels.telegram]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TelegramConfig {
    pub token_env: String,
    pub api_base: String,
    pub allow_users: Vec<i64>,
    pub approvers: Vec<i64>,
    pub poll_timeout_secs: u64,
}

/// `[channels]`, each channel absent unless configured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelsConfig {
    pub telegram: Option<TelegramConfig>,
}

impl ChannelsConfig {
    pub fn of(settings: &Settings) -> ChannelsConfig {
        settings
            .front_end(SECTION.name)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }
}

#[derive(Deserialize)]
struct Doc {
    channels: Option<RawChannels>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChannels {
    telegram: Option<Spanned<RawTelegram>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTelegram {
    token_env: Option<Spanned<String>>,
    api_base: Option<Spanned<String>>,
    #[serde(default)]
    allow_users: Vec<i64>,
    #[serde(default)]
    approvers: Vec<i64>,
    poll_timeout_secs: Option<Spanned<u64>>,
}

fn base_url(
    src: &Source<'_>,
    key: &str,
    v: Option<Spanned<String>>,
    default: &str,
) -> Result<String, ConfigError> {
    match v {
        None => Ok(default.to_string()),
        Some(v) => pincer_providers::config::check_base_url(v.get_ref())
            .map_err(|r| src.invalid(v.span(), key, r)),
    }
}

fn token_env(
    src: &Source<'_>,
    key: &str,
    span: std::ops::Range<usize>,
    v: Option<Spanned<String>>,
) -> Result<String, ConfigError> {
    let Some(v) = v else {
        return Err(src.invalid(span, key, "is required: the name of the environment variable holding the bot token (the token itself never goes in this file)"));
    };
    if !pincer_core::config::is_env_name(v.get_ref()) {
        return Err(src.invalid(
            v.span(),
            key,
            format!(
                "is `{}`; it names an environment variable, like TELEGRAM_BOT_TOKEN",
                v.get_ref()
            ),
        ));
    }
    Ok(v.get_ref().clone())
}

/// Validates `[channels]`.
pub fn parse(src: &Source<'_>) -> Result<ChannelsConfig, ConfigError> {
    let doc: Doc = src.raw()?;
    let mut cfg = ChannelsConfig::default();
    let Some(channels) = doc.channels else {
        return Ok(cfg);
    };
    if let Some(t) = channels.telegram {
        let span = t.span();
        let raw = t.into_inner();
        let poll = match raw.poll_timeout_secs {
            Some(v) if *v.get_ref() > 50 => {
                return Err(src.invalid(
                    v.span(),
                    "channels.telegram.poll_timeout_secs",
                    format!("is {}; at most 50", v.get_ref()),
                ));
            }
            Some(v) => *v.get_ref(),
            None => 25,
        };
        cfg.telegram = Some(TelegramConfig {
            token_env: token_env(src, "channels.telegram.token_env", span, raw.token_env)?,
            api_base: base_url(
                src,
                "channels.telegram.api_base",
                raw.api_base,
                TELEGRAM_API,
            )?,
            allow_users: raw.allow_users,
            approvers: raw.approvers,
            poll_timeout_secs: poll,
        });
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn check(text: &str, needles: &[&str]) {
        let e = Settings::parse_with(text, Path::new("/h/config.toml"), &[SECTION])
            .expect_err("refused");
        for n in needles {
            assert!(e.to_string().contains(n), "`{e}` lacks `{n}`");
        }
    }

    #[test]
    fn channels_are_validated_naming_the_key() {
        let s = Settings::parse_with(
            "[channels.telegram]\ntoken_env = \"TG\"\nallow_users = [1, 2]\napprovers = [1]\n",
            Path::new("/h/config.toml"),
            &[SECTION],
        )
        .expect("parses");
        let c = ChannelsConfig::of(&s);
        let t = c.telegram.expect("telegram");
        assert_eq!(t.allow_users, [1, 2]);
        assert_eq!(t.api_base, TELEGRAM_API);
        check(
            "[channels.telegram]\nallow_users = [1]\n",
            &[
                "config.toml:1",
                "channels.telegram.token_env",
                "is required",
            ],
        );
        check(
            "[channels.telegram]\ntoken_env = \"tg token\"\n",
            &["channels.telegram.token_env"],
        );
        check(
            "[channels.telegram]\ntoken_env = \"TG\"\nallow_user = [1]\n",
            &["config.toml", "line 3", "allow_user"],
        );
        check(
            "[channels.telegram]\ntoken_env = \"TG\"\napi_base = \"ftp://x\"\n",
            &["channels.telegram.api_base"],
        );
        check("[channels.irc]\n", &["config.toml", "irc"]);
        // Not written yet: refused by name, not ignored.
        check(
            "[channels.discord]\ntoken_env = \"D\"\n",
            &["config.toml", "discord"],
        );
        check("[channels.camera]\n", &["config.toml", "camera"]);
    }
}
