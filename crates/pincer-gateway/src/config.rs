//! `[gateway]` in `config.toml`: the gateway as a service of `pincer
//! serve`, owned here and validated when pincer loads the file (the binary
//! passes [`SECTION`]), every error naming the file, the line and the key.
//! The table being there is what turns the service on; its keys are
//! `pincer gateway`'s flags. `pincer gateway` itself reads its flags, not
//! this table.
//!
//! A non-loopback `bind` without `allow_public = true` is refused here,
//! when the file loads, not when the daemon gets round to binding.

use crate::{DEFAULT_BIND, parse_origin};
use pincer_core::config::{ConfigError, Source};
use pincer_runtime::{FrontEndSection, Settings};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use toml::Spanned;

pub const SECTION: FrontEndSection = FrontEndSection {
    name: "gateway",
    parse: |src| {
        let cfg = parse(src)?;
        serde_json::to_value(cfg).map_err(|e| src.invalid_at("gateway", e.to_string()))
    },
    example_toml: EXAMPLE_TOML,
};

const EXAMPLE_TOML: &str = r#"
# The HTTP gateway (web UI, /api, /ws; docs/gateway.md) as a service of
# `pincer serve`: the table being here turns it on. Its keys are the flags
# of `pincer gateway`. The pairing code is printed when it starts;
# `pincer pair` makes another.
# [gateway]
# bind = "127.0.0.1:18789"             # a non-loopback address needs allow_public
# allow_public = false                 # plain HTTP: put a TLS reverse proxy in front
# origins = ["https://pincer.example.org"]   # a reverse proxy's address; the first is advertised
"#;

/// `[gateway]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayConfig {
    pub bind: SocketAddr,
    pub allow_public: bool,
    /// As `--origin`, in order.
    pub origins: Vec<String>,
}

impl GatewayConfig {
    /// The table, when the file has one (the service is on).
    pub fn of(settings: &Settings) -> Option<GatewayConfig> {
        settings
            .front_end(SECTION.name)
            .and_then(|v| serde_json::from_value::<Option<GatewayConfig>>(v.clone()).ok())
            .flatten()
    }
}

#[derive(Deserialize)]
struct Doc {
    gateway: Option<Spanned<RawGateway>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGateway {
    bind: Option<Spanned<String>>,
    #[serde(default)]
    allow_public: bool,
    origins: Option<Spanned<Vec<String>>>,
}

/// Validates `[gateway]`: `None` when the file has no such table.
pub fn parse(src: &Source<'_>) -> Result<Option<GatewayConfig>, ConfigError> {
    let doc: Doc = src.raw()?;
    let Some(raw) = doc.gateway else {
        return Ok(None);
    };
    let span = raw.span();
    let raw = raw.into_inner();
    let (bind, bind_span) = match raw.bind {
        None => (
            DEFAULT_BIND
                .parse()
                .map_err(|_| src.invalid(span.clone(), "gateway.bind", "bad default"))?,
            span.clone(),
        ),
        Some(v) => (
            v.get_ref().parse::<SocketAddr>().map_err(|_| {
                src.invalid(
                    v.span(),
                    "gateway.bind",
                    format!(
                        "is `{}`; it must be an IP address and port, like {DEFAULT_BIND}",
                        v.get_ref().escape_debug()
                    ),
                )
            })?,
            v.span(),
        ),
    };
    if !bind.ip().is_loopback() && !raw.allow_public {
        return Err(src.invalid(
            bind_span,
            "gateway.bind",
            format!(
                "is {bind}, not a loopback address: the gateway would be reachable from the network over plain HTTP; set allow_public = true if you mean it (and put a TLS reverse proxy in front)"
            ),
        ));
    }
    let mut origins = Vec::new();
    if let Some(list) = raw.origins {
        for o in list.get_ref() {
            parse_origin(o).map_err(|e| {
                src.invalid(
                    list.span(),
                    "gateway.origins",
                    e.to_string().replace("--origin ", ""),
                )
            })?;
            origins.push(o.to_string());
        }
    }
    Ok(Some(GatewayConfig {
        bind,
        allow_public: raw.allow_public,
        origins,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn load(text: &str) -> Result<Settings, ConfigError> {
        Settings::parse_with(text, Path::new("/h/config.toml"), &[SECTION])
    }

    fn refused(text: &str, needles: &[&str]) {
        let e = load(text).expect_err("refused").to_string();
        for n in needles {
            assert!(e.contains(n), "`{e}` lacks `{n}`");
        }
    }

    #[test]
    fn the_table_turns_the_service_on_with_the_flags_defaults() {
        assert_eq!(GatewayConfig::of(&load("").expect("empty")), None);
        let on = GatewayConfig::of(&load("[gateway]\n").expect("parses")).expect("on");
        assert_eq!(on.bind.to_string(), DEFAULT_BIND);
        assert!(!on.allow_public);
        assert!(on.origins.is_empty());
        let s =
            load("[gateway]\nbind = \"[::1]:9000\"\norigins = [\"https://pincer.example.org\"]\n")
                .expect("parses");
        let c = GatewayConfig::of(&s).expect("on");
        assert_eq!(c.bind.to_string(), "[::1]:9000");
        assert_eq!(c.origins, vec!["https://pincer.example.org".to_string()]);
        let public =
            load("[gateway]\nbind = \"0.0.0.0:18789\"\nallow_public = true\n").expect("allowed");
        assert!(GatewayConfig::of(&public).expect("on").allow_public);
    }

    #[test]
    fn the_example_uncommented_parses() {
        let text: String = EXAMPLE_TOML
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(text.starts_with("[gateway]\n"), "{text}");
        let c = GatewayConfig::of(&load(&text).expect("parses")).expect("on");
        assert_eq!(c.bind.to_string(), DEFAULT_BIND);
        assert_eq!(c.origins.len(), 1);
    }

    #[test]
    fn bad_values_are_refused_naming_the_field_and_line() {
        refused(
            "[gateway]\nbind = \"0.0.0.0:18789\"\n",
            &["config.toml:2", "gateway.bind", "allow_public = true"],
        );
        refused(
            "[gateway]\nallow_public = false\nbind = \"[::]:1\"\n",
            &["config.toml:3", "gateway.bind", "not a loopback"],
        );
        refused(
            "[gateway]\nbind = \"localhost:80\"\n",
            &["config.toml:2", "gateway.bind", "IP address and port"],
        );
        refused(
            "[gateway]\norigins = [\"pincer.example.org\"]\n",
            &["config.toml:2", "gateway.origins", "https://"],
        );
        refused(
            "[gateway]\norigins = [\"https://a/b\"]\n",
            &["gateway.origins", "no path"],
        );
        refused(
            "[gateway]\nbnid = \"127.0.0.1:1\"\n",
            &["config.toml", "bnid"],
        );
    }
}
