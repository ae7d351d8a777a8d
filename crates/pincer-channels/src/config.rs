//! `[channels.telegram]`, `[channels.discord]` and `[channels.camera]` in
//! `config.toml`, owned here and validated when pincer loads the file (the
//! binary passes [`SECTION`]), every error naming the file, the line and
//! the key; an unknown key is refused, never silently ignored.
//!
//! `allow_users` empty means nobody may chat, not everybody. Discord user
//! ids are snowflakes written as strings (`"80351110224678912"`). A camera's
//! `bind` must be a loopback address unless `allow_remote = true`.

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
#
# Discord over the gateway WebSocket and the REST API. Ids are snowflakes,
# written as strings; the bot needs the Message Content intent.
# [channels.discord]
# token_env = "DISCORD_BOT_TOKEN"
# api_base = "https://discord.com/api/v10"
# gateway_url = "wss://gateway.discord.gg"   # normally asked of GET /gateway/bot
# allow_users = ["80351110224678912"]
# approvers = ["80351110224678912"]
#
# A camera board sending frames over TCP (docs/serve.md). Every connection
# must first present the shared secret held in token_env (16 bytes or
# more); cameras are the ids a board may declare, one session each.
# [channels.camera]
# bind = "127.0.0.1:7450"              # a non-loopback address needs allow_remote
# allow_remote = false
# token_env = "PINCER_CAMERA_TOKEN"
# cameras = ["door"]
# max_frame_bytes = 7340032            # one JSON line, base64 image included
"#;

/// Where the camera channel listens unless told otherwise.
pub const CAMERA_BIND: &str = "127.0.0.1:7450";
/// The default bound on one frame (one JSON line): room for a
/// [`MAX_IMAGE_BYTES`](pincer_core::message::MAX_IMAGE_BYTES) image in
/// base64 and its metadata.
pub const CAMERA_FRAME_BYTES: usize = 7 * 1024 * 1024;
/// The largest `max_frame_bytes` accepted.
pub const CAMERA_FRAME_BYTES_MAX: usize = 16 * 1024 * 1024;
/// The most camera ids one channel serves.
pub const CAMERAS_MAX: usize = 64;

/// `[channels.camera]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CameraConfig {
    pub bind: std::net::SocketAddr,
    /// Set: `bind` may be a non-loopback address (warned at start).
    pub allow_remote: bool,
    pub token_env: String,
    /// The ids a camera may declare; each is one session.
    pub cameras: Vec<String>,
    pub max_frame_bytes: usize,
}

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

/// Discord's REST API, the version pincer speaks.
pub const DISCORD_API: &str = "https://discord.com/api/v10";

/// `[channels.discord]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscordConfig {
    pub token_env: String,
    pub api_base: String,
    /// Set: the gateway to connect to, instead of asking
    /// `GET /gateway/bot`.
    pub gateway_url: Option<String>,
    /// User ids (snowflakes) that may chat.
    pub allow_users: Vec<String>,
    pub approvers: Vec<String>,
}

/// `[channels]`, each channel absent unless configured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelsConfig {
    pub telegram: Option<TelegramConfig>,
    #[serde(default)]
    pub discord: Option<DiscordConfig>,
    pub camera: Option<CameraConfig>,
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
    discord: Option<Spanned<RawDiscord>>,
    camera: Option<Spanned<RawCamera>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDiscord {
    token_env: Option<Spanned<String>>,
    api_base: Option<Spanned<String>>,
    gateway_url: Option<Spanned<String>>,
    #[serde(default)]
    allow_users: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    approvers: Option<Spanned<Vec<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCamera {
    bind: Option<Spanned<String>>,
    #[serde(default)]
    allow_remote: bool,
    token_env: Option<Spanned<String>>,
    cameras: Option<Spanned<Vec<String>>>,
    max_frame_bytes: Option<Spanned<usize>>,
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
        return Err(src.invalid(span, key, "is required: the name of the environment variable holding the token (the token itself never goes in this file)"));
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
        if !cfg!(feature = "telegram") {
            return Err(src.invalid(
                t.span(),
                "channels.telegram",
                "this pincer was built without the telegram feature",
            ));
        }
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
    if let Some(d) = channels.discord {
        if !cfg!(feature = "discord") {
            return Err(src.invalid(
                d.span(),
                "channels.discord",
                "this pincer was built without the discord feature",
            ));
        }
        cfg.discord = Some(discord(src, d)?);
    }
    if let Some(c) = channels.camera {
        if !cfg!(feature = "camera") {
            return Err(src.invalid(
                c.span(),
                "channels.camera",
                "this pincer was built without the camera feature",
            ));
        }
        cfg.camera = Some(camera(src, c)?);
    }
    Ok(cfg)
}

/// A Discord snowflake: a decimal number of at most 20 digits that fits
/// in 64 bits, and is not 0.
pub fn is_snowflake(id: &str) -> bool {
    (1..=20).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_digit())
        && id.parse::<u64>().is_ok_and(|n| n > 0)
}

fn snowflakes(
    src: &Source<'_>,
    key: &str,
    v: Option<Spanned<Vec<String>>>,
) -> Result<Vec<String>, ConfigError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    if let Some(bad) = v.get_ref().iter().find(|id| !is_snowflake(id)) {
        return Err(src.invalid(
            v.span(),
            key,
            format!(
                "has `{bad}`; a Discord user id is a snowflake, digits only, like \"80351110224678912\" (Developer Mode, Copy User ID)"
            ),
        ));
    }
    Ok(v.into_inner())
}

fn discord(src: &Source<'_>, d: Spanned<RawDiscord>) -> Result<DiscordConfig, ConfigError> {
    let span = d.span();
    let raw = d.into_inner();
    let api_base = base_url(src, "channels.discord.api_base", raw.api_base, DISCORD_API)?;
    let gateway_url = match raw.gateway_url {
        None => None,
        Some(v) => {
            let url = v.get_ref();
            let Some(parsed) = reqwest::Url::parse(url).ok().filter(|u| {
                matches!(u.scheme(), "ws" | "wss")
                    && u.host_str().is_some_and(|h| !h.is_empty())
                    && u.fragment().is_none()
            }) else {
                return Err(src.invalid(
                    v.span(),
                    "channels.discord.gateway_url",
                    format!("is `{url}`; it must be a ws:// or wss:// URL, like wss://gateway.discord.gg"),
                ));
            };
            // The Identify carries the bot token: in plain text only to this
            // machine, or beside a REST API that is plain HTTP already.
            if parsed.scheme() == "ws" && !is_loopback(&parsed) && !api_base.starts_with("http://")
            {
                return Err(src.invalid(
                    v.span(),
                    "channels.discord.gateway_url",
                    format!(
                        "is `{url}`: ws:// would send the bot token unencrypted; use wss:// \
                         (plain ws:// is for a server on this machine)"
                    ),
                ));
            }
            Some(url.trim_end_matches('/').to_string())
        }
    };
    Ok(DiscordConfig {
        token_env: token_env(src, "channels.discord.token_env", span, raw.token_env)?,
        api_base,
        gateway_url,
        allow_users: snowflakes(src, "channels.discord.allow_users", raw.allow_users)?,
        approvers: snowflakes(src, "channels.discord.approvers", raw.approvers)?,
    })
}

/// Whether `url` names this machine (localhost, 127.0.0.0/8, ::1).
fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A camera id: what its session is named by.
pub fn is_camera_id(id: &str) -> bool {
    (1..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn camera(src: &Source<'_>, c: Spanned<RawCamera>) -> Result<CameraConfig, ConfigError> {
    let span = c.span();
    let raw = c.into_inner();
    let bind = match raw.bind {
        None => CAMERA_BIND
            .parse()
            .map_err(|_| src.invalid(span.clone(), "channels.camera.bind", "bad default"))?,
        Some(v) => {
            let addr: std::net::SocketAddr = v.get_ref().parse().map_err(|_| {
                src.invalid(
                    v.span(),
                    "channels.camera.bind",
                    format!(
                        "is `{}`; it must be an IP address and port, like {CAMERA_BIND}",
                        v.get_ref()
                    ),
                )
            })?;
            if !addr.ip().is_loopback() && !raw.allow_remote {
                return Err(src.invalid(
                    v.span(),
                    "channels.camera.bind",
                    format!(
                        "is {addr}, not a loopback address: anyone who can reach it may try the secret, which travels unencrypted; set allow_remote = true to accept that on a network you trust"
                    ),
                ));
            }
            addr
        }
    };
    let Some(cams) = raw.cameras else {
        return Err(src.invalid(
            span,
            "channels.camera.cameras",
            "is required: the ids a camera may declare, like [\"door\"]",
        ));
    };
    let list = cams.get_ref();
    if list.is_empty() || list.len() > CAMERAS_MAX {
        return Err(src.invalid(
            cams.span(),
            "channels.camera.cameras",
            format!("has {} ids; between 1 and {CAMERAS_MAX}", list.len()),
        ));
    }
    if let Some(bad) = list.iter().find(|id| !is_camera_id(id)) {
        return Err(src.invalid(
            cams.span(),
            "channels.camera.cameras",
            format!("has `{bad}`; an id is 1 to 32 letters, digits, `-` or `_`"),
        ));
    }
    let max_frame_bytes = match raw.max_frame_bytes {
        None => CAMERA_FRAME_BYTES,
        Some(v) if !(1024..=CAMERA_FRAME_BYTES_MAX).contains(v.get_ref()) => {
            return Err(src.invalid(
                v.span(),
                "channels.camera.max_frame_bytes",
                format!(
                    "is {}; between 1024 and {CAMERA_FRAME_BYTES_MAX}",
                    v.get_ref()
                ),
            ));
        }
        Some(v) => *v.get_ref(),
    };
    Ok(CameraConfig {
        bind,
        allow_remote: raw.allow_remote,
        token_env: token_env(src, "channels.camera.token_env", span, raw.token_env)?,
        cameras: cams.into_inner(),
        max_frame_bytes,
    })
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

    /// A build without a platform refuses its table by name instead of
    /// accepting a channel that would never start
    /// (`cargo test -p pincer-channels --no-default-features`).
    #[test]
    #[cfg(not(all(feature = "telegram", feature = "discord", feature = "camera")))]
    fn a_channel_left_out_of_the_build_is_refused_by_name() {
        for (on, table) in [
            (
                cfg!(feature = "telegram"),
                "[channels.telegram]\ntoken_env = \"TG\"\n",
            ),
            (
                cfg!(feature = "discord"),
                "[channels.discord]\ntoken_env = \"DC\"\n",
            ),
            (
                cfg!(feature = "camera"),
                "[channels.camera]\ntoken_env = \"CAM\"\n",
            ),
        ] {
            if !on {
                check(table, &["config.toml:1", "without the", "feature"]);
            }
        }
    }

    #[test]
    #[cfg(feature = "telegram")]
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
    }

    #[test]
    #[cfg(feature = "discord")]
    fn discord_is_validated_naming_the_key() {
        let s = Settings::parse_with(
            "[channels.discord]\ntoken_env = \"DC\"\nallow_users = [\"80351110224678912\"]\napprovers = [\"80351110224678912\"]\n",
            Path::new("/h/config.toml"),
            &[SECTION],
        )
        .expect("parses");
        let d = ChannelsConfig::of(&s).discord.expect("discord");
        assert_eq!(d.api_base, DISCORD_API);
        assert_eq!(d.gateway_url, None);
        assert_eq!(d.allow_users, ["80351110224678912"]);
        let ok = "token_env = \"DC\"\n";
        check(
            "[channels.discord]\nallow_users = []\n",
            &["config.toml:1", "channels.discord.token_env", "is required"],
        );
        check(
            &format!("[channels.discord]\n{ok}allow_users = [\"alice\"]\n"),
            &[
                "config.toml:3",
                "channels.discord.allow_users",
                "alice",
                "snowflake",
            ],
        );
        check(
            &format!("[channels.discord]\n{ok}approvers = [\"99999999999999999999\"]\n"),
            &["channels.discord.approvers", "snowflake"],
        );
        check(
            &format!("[channels.discord]\n{ok}allow_users = [80351110224678912]\n"),
            &["config.toml", "allow_users", "string"],
        );
        check(
            &format!("[channels.discord]\n{ok}gateway_url = \"https://gateway.discord.gg\"\n"),
            &["channels.discord.gateway_url", "ws://"],
        );
        check(
            &format!("[channels.discord]\n{ok}api_base = \"discord.com\"\n"),
            &["channels.discord.api_base"],
        );
        check(
            &format!("[channels.discord]\n{ok}guild = \"1\"\n"),
            &["config.toml", "line 3", "guild"],
        );
        Settings::parse_with(
            &format!("[channels.discord]\n{ok}gateway_url = \"ws://127.0.0.1:9/\"\n"),
            Path::new("/h/config.toml"),
            &[SECTION],
        )
        .expect("a ws:// gateway for a local server");
        check(
            &format!("[channels.discord]\n{ok}gateway_url = \"ws://gateway.discord.gg\"\n"),
            &[
                "config.toml:3",
                "channels.discord.gateway_url",
                "unencrypted",
            ],
        );
    }

    #[test]
    #[cfg(feature = "camera")]
    fn camera_is_validated_naming_the_key() {
        let s = Settings::parse_with(
            "[channels.camera]\ntoken_env = \"CAM\"\ncameras = [\"door\", \"desk_2\"]\n",
            Path::new("/h/config.toml"),
            &[SECTION],
        )
        .expect("parses");
        let c = ChannelsConfig::of(&s).camera.expect("camera");
        assert_eq!(c.bind.to_string(), CAMERA_BIND);
        assert_eq!(c.max_frame_bytes, CAMERA_FRAME_BYTES);
        assert!(!c.allow_remote);
        let ok = "token_env = \"CAM\"\ncameras = [\"door\"]\n";
        check(
            &format!("[channels.camera]\nbind = \"0.0.0.0:7450\"\n{ok}"),
            &["config.toml:2", "channels.camera.bind", "allow_remote"],
        );
        Settings::parse_with(
            &format!("[channels.camera]\nbind = \"0.0.0.0:7450\"\nallow_remote = true\n{ok}"),
            Path::new("/h/config.toml"),
            &[SECTION],
        )
        .expect("remote with the opt-in");
        check(
            &format!("[channels.camera]\nbind = \"localhost\"\n{ok}"),
            &["channels.camera.bind", "IP address and port"],
        );
        check(
            "[channels.camera]\ncameras = [\"door\"]\n",
            &["channels.camera.token_env", "is required"],
        );
        check(
            "[channels.camera]\ntoken_env = \"CAM\"\n",
            &["channels.camera.cameras", "is required"],
        );
        check(
            "[channels.camera]\ntoken_env = \"CAM\"\ncameras = [\"../x\"]\n",
            &["channels.camera.cameras", "../x"],
        );
        check(
            "[channels.camera]\ntoken_env = \"CAM\"\ncameras = []\n",
            &["channels.camera.cameras", "between 1 and"],
        );
        check(
            &format!("[channels.camera]\n{ok}max_frame_bytes = 100000000\n"),
            &["channels.camera.max_frame_bytes"],
        );
        check(
            &format!("[channels.camera]\n{ok}secret = \"x\"\n"),
            &["config.toml", "secret"],
        );
    }
}
