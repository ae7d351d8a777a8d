//! `[serve]` and `[heartbeat]` in `config.toml`, owned here and validated
//! when pincer loads the file (the binary passes [`SERVE_SECTION`] and
//! [`HEARTBEAT_SECTION`] to `Settings::load_with`), every error naming the
//! file, the line and the key.

use pincer_core::config::{ConfigError, Source};
use pincer_runtime::{FrontEndSection, Settings};
use serde::{Deserialize, Serialize};
use toml::Spanned;

pub const SERVE_SECTION: FrontEndSection = FrontEndSection {
    name: "serve",
    parse: |src| to_value(src, "serve", parse_serve(src)),
    example_toml: SERVE_TOML,
};

pub const HEARTBEAT_SECTION: FrontEndSection = FrontEndSection {
    name: "heartbeat",
    parse: |src| to_value(src, "heartbeat", parse_heartbeat(src)),
    example_toml: HEARTBEAT_TOML,
};

const SERVE_TOML: &str = r#"
# `pincer serve` (docs/serve.md): one process running what this file
# enables — chat channels, cron jobs, the heartbeat.
# [serve]
# How long SIGTERM (and a reload) lets turns in flight finish before they
# are cancelled (their sessions stay valid).
# drain_secs = 20
"#;

const HEARTBEAT_TOML: &str = r#"
# A periodic check-in: every `every_secs` the agent reads HEARTBEAT.md in
# PINCER_HOME and says something only when something needs attention
# (replying HEARTBEAT_OK otherwise). 0 is off.
# [heartbeat]
# every_secs = 1800
# Where a reply that is not HEARTBEAT_OK goes (a chat of a running
# channel); without it, the reply stays in the session `heartbeat`.
# notify = "telegram:123456789"
"#;

/// The default drain time.
pub const DRAIN_SECS: u64 = 20;

/// `[serve]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeConfig {
    pub drain_secs: u64,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            drain_secs: DRAIN_SECS,
        }
    }
}

/// `[heartbeat]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatConfig {
    /// 0: off.
    pub every_secs: u64,
    pub notify: Option<String>,
}

fn of<T: Default + serde::de::DeserializeOwned>(settings: &Settings, name: &str) -> T {
    settings
        .front_end(name)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

impl ServeConfig {
    pub fn of(settings: &Settings) -> Self {
        of(settings, "serve")
    }
}

impl HeartbeatConfig {
    pub fn of(settings: &Settings) -> Self {
        of(settings, "heartbeat")
    }
}

fn to_value<T: Serialize>(
    src: &Source<'_>,
    name: &str,
    r: Result<T, ConfigError>,
) -> Result<serde_json::Value, ConfigError> {
    serde_json::to_value(r?).map_err(|e| src.invalid_at(name, e.to_string()))
}

#[derive(Deserialize)]
struct ServeDoc {
    serve: Option<RawServe>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServe {
    drain_secs: Option<Spanned<u64>>,
}

pub fn parse_serve(src: &Source<'_>) -> Result<ServeConfig, ConfigError> {
    let doc: ServeDoc = src.raw()?;
    let mut cfg = ServeConfig::default();
    if let Some(v) = doc.serve.and_then(|r| r.drain_secs) {
        if *v.get_ref() > 600 {
            return Err(src.invalid(
                v.span(),
                "serve.drain_secs",
                format!("is {}; at most 600", v.get_ref()),
            ));
        }
        cfg.drain_secs = *v.get_ref();
    }
    Ok(cfg)
}

#[derive(Deserialize)]
struct HeartbeatDoc {
    heartbeat: Option<RawHeartbeat>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeartbeat {
    every_secs: Option<Spanned<u64>>,
    notify: Option<Spanned<String>>,
}

/// Checks a delivery target (`telegram:123456`); the reason is in words.
pub fn check_target(target: &str) -> Result<(), String> {
    match crate::hub::split_target(target) {
        Some((channel, id))
            if channel.bytes().all(|b| b.is_ascii_lowercase())
                && id.bytes().all(|b| b.is_ascii_digit() || b == b'-') =>
        {
            Ok(())
        }
        _ => Err(format!(
            "is `{}`; a target is CHANNEL:CHAT_ID, like telegram:123456789",
            target.escape_debug()
        )),
    }
}

pub fn parse_heartbeat(src: &Source<'_>) -> Result<HeartbeatConfig, ConfigError> {
    let doc: HeartbeatDoc = src.raw()?;
    let mut cfg = HeartbeatConfig::default();
    let Some(raw) = doc.heartbeat else {
        return Ok(cfg);
    };
    if let Some(v) = raw.every_secs {
        if *v.get_ref() > 7 * 24 * 3600 {
            return Err(src.invalid(
                v.span(),
                "heartbeat.every_secs",
                format!("is {}; at most a week (604800)", v.get_ref()),
            ));
        }
        cfg.every_secs = *v.get_ref();
    }
    if let Some(v) = raw.notify {
        check_target(v.get_ref()).map_err(|r| src.invalid(v.span(), "heartbeat.notify", r))?;
        cfg.notify = Some(v.get_ref().clone());
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn check(text: &str, needles: &[&str]) {
        let p = Path::new("/h/config.toml");
        let e = Settings::parse_with(text, p, &[SERVE_SECTION, HEARTBEAT_SECTION])
            .expect_err("refused");
        for n in needles {
            assert!(e.to_string().contains(n), "`{e}` lacks `{n}`");
        }
    }

    #[test]
    fn sections_are_validated_with_their_line() {
        let p = Path::new("/h/config.toml");
        let s = Settings::parse_with(
            "[serve]\ndrain_secs = 5\n[heartbeat]\nevery_secs = 60\nnotify = \"telegram:-1001\"\n",
            p,
            &[SERVE_SECTION, HEARTBEAT_SECTION],
        )
        .expect("parses");
        assert_eq!(ServeConfig::of(&s).drain_secs, 5);
        assert_eq!(
            HeartbeatConfig::of(&s),
            HeartbeatConfig {
                every_secs: 60,
                notify: Some("telegram:-1001".into())
            }
        );
        check(
            "[serve]\ndrain_secs = 601\n",
            &["config.toml:2", "serve.drain_secs"],
        );
        check("[serve]\ndrian_secs = 1\n", &["config.toml", "drian_secs"]);
        check(
            "[heartbeat]\nnotify = \"me\"\n",
            &["config.toml:2", "heartbeat.notify", "CHANNEL:CHAT_ID"],
        );
        let d = Settings::parse_with("", p, &[SERVE_SECTION, HEARTBEAT_SECTION]).expect("empty");
        assert_eq!(ServeConfig::of(&d).drain_secs, DRAIN_SECS);
        assert_eq!(HeartbeatConfig::of(&d).every_secs, 0);
    }
}
