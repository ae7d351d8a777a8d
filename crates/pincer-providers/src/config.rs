//! The `[providers.NAME]` tables of `config.toml`, owned and validated
//! here, and every vendor default (base URLs, model names, the local ports
//! zero-config looks at): nothing outside this crate names a vendor's URL.

use pincer_core::config::{ConfigError, Source, is_env_name, is_plain_name};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

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

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Scripted => "scripted",
        }
    }
}

/// One configured provider (`[providers.NAME]`), as data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    /// E.g. `https://api.openai.com/v1`, `http://127.0.0.1:8080/v1`,
    /// `https://api.anthropic.com`; no trailing `/`.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key; the key itself is
    /// never in the config file.
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request.
    pub headers: BTreeMap<String, String>,
    pub context_window: usize,
    pub timeout_secs: u64,
    /// Retries on this provider before the router moves to the next.
    pub max_retries: u32,
    /// The script file of a `scripted` provider.
    pub script: Option<PathBuf>,
    /// The model takes images (`vision = true`): photos from a chat and
    /// camera frames are sent to it as image content. Off, a message's
    /// images are left out with a note the model sees.
    pub vision: bool,
}

/// Vendor defaults, in one place.
pub mod defaults {
    pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
    /// The model a zero-config OpenAI provider uses when `PINCER_MODEL` is
    /// not set.
    pub const OPENAI_MODEL: &str = "gpt-4o-mini";
    pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
    /// The Anthropic API version pincer speaks.
    pub const ANTHROPIC_VERSION: &str = "2023-06-01";
    pub const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
    /// The local servers zero-config looks for: Ollama, then llama-server.
    pub const LOCAL_CANDIDATES: [&str; 2] =
        ["http://127.0.0.1:11434/v1", "http://127.0.0.1:8080/v1"];
    pub const TIMEOUT_SECS: u64 = 120;
    pub const MAX_RETRIES: u32 = 2;
}

impl ProviderConfig {
    /// A provider with this crate's defaults for `kind`: the vendor's URL,
    /// the default timeout and retries.
    pub fn with_defaults(
        name: impl Into<String>,
        kind: ProviderKind,
        model: impl Into<String>,
        context_window: usize,
    ) -> Self {
        Self {
            name: name.into(),
            kind,
            base_url: default_base_url(kind).to_string(),
            model: model.into(),
            api_key_env: None,
            headers: BTreeMap::new(),
            context_window,
            timeout_secs: defaults::TIMEOUT_SECS,
            max_retries: defaults::MAX_RETRIES,
            script: None,
            vision: false,
        }
    }
}

fn default_base_url(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => defaults::OPENAI_BASE_URL,
        ProviderKind::Anthropic => defaults::ANTHROPIC_BASE_URL,
        ProviderKind::Scripted => "",
    }
}

/// What the providers section needs from `[context]` (the core's section):
/// the window a provider gets when it names none, and the output reserve
/// its window must exceed.
#[derive(Debug, Clone, Copy)]
pub struct ContextDefaults {
    pub context_window: usize,
    pub output_reserve: usize,
}

#[derive(Deserialize, Default)]
struct RawDoc {
    #[serde(default)]
    providers: BTreeMap<String, Spanned<RawProvider>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProvider {
    kind: ProviderKind,
    base_url: Option<Spanned<String>>,
    model: Option<String>,
    api_key_env: Option<Spanned<String>>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    context_window: Option<Spanned<usize>>,
    timeout_secs: Option<Spanned<u64>>,
    max_retries: Option<Spanned<u32>>,
    script: Option<PathBuf>,
    #[serde(default)]
    vision: bool,
}

/// The providers section as `pincer init` writes it (commented examples).
pub const EXAMPLE_TOML: &str = r#"# A provider. kind = "openai" covers OpenAI, llama.cpp llama-server, Ollama,
# vLLM and OpenRouter; "anthropic" is the Messages API; "scripted" replays a
# JSON script. The API key is read from the environment variable named by
# api_key_env, never from this file.
#
# [providers.local]
# kind = "openai"
# base_url = "http://127.0.0.1:8080/v1"
# model = "local"
# context_window = 8192
# timeout_secs = 120
# max_retries = 2
# vision = false         # true: the model takes images (chat photos, camera frames)
#
# [providers.claude]
# kind = "anthropic"
# model = "claude-sonnet-4-5"
# api_key_env = "ANTHROPIC_API_KEY"
# headers = { "anthropic-beta" = "..." }

"#;

/// The top-level table this module reads.
pub const SECTION: &str = "providers";

/// Checks a base URL: `http` or `https`, a host, nothing a request could
/// not be sent to. The reason is in the user's words.
pub fn check_base_url(url: &str) -> Result<String, String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("is {}", crate::url_error(url, &e)))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "is `{url}`; it must start with http:// or https://"
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("is `{url}`, which names no host"));
    }
    if !crate::http::TLS && parsed.scheme() == "https" {
        return Err(format!("is `{url}`, but {}", crate::http::NO_TLS));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!(
            "is `{url}`; a base URL has no `?query` or `#fragment`"
        ));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// Parses and validates every `[providers.NAME]` table of `src`, sorted by
/// name. A relative `script` path is relative to the config file.
pub fn parse_section(
    src: &Source<'_>,
    context: ContextDefaults,
) -> Result<Vec<ProviderConfig>, ConfigError> {
    let raw: RawDoc = src.raw()?;
    let mut out = Vec::with_capacity(raw.providers.len());
    for (name, spanned) in &raw.providers {
        out.push(parse_one(src, name, spanned, context)?);
    }
    Ok(out)
}

fn parse_one(
    src: &Source<'_>,
    name: &str,
    spanned: &Spanned<RawProvider>,
    context: ContextDefaults,
) -> Result<ProviderConfig, ConfigError> {
    let span = spanned.span();
    let rp = spanned.get_ref();
    let key = |k: &str| format!("providers.{name}.{k}");
    if !is_plain_name(name) {
        return Err(src.invalid(
            span,
            &format!("providers.{name}"),
            "is not a valid provider name (ASCII letters, digits, `-`, `_`, at most 64)",
        ));
    }
    let base_url = match &rp.base_url {
        Some(u) => {
            check_base_url(u.get_ref()).map_err(|r| src.invalid(u.span(), &key("base_url"), r))?
        }
        None => default_base_url(rp.kind).to_string(),
    };
    let model = match (&rp.model, rp.kind) {
        (Some(m), _) if m.trim().is_empty() => {
            return Err(src.invalid(span, &key("model"), "is empty; name the model"));
        }
        (Some(m), _) => m.clone(),
        (None, ProviderKind::Scripted) => "scripted".to_string(),
        (None, _) => {
            return Err(src.invalid(span, &key("model"), "is required for this kind"));
        }
    };
    if rp.kind == ProviderKind::Scripted && rp.script.is_none() {
        return Err(src.invalid(span, &key("script"), "is required for a scripted provider"));
    }
    if let Some(env) = &rp.api_key_env
        && !is_env_name(env.get_ref())
    {
        return Err(src.invalid(
            env.span(),
            &key("api_key_env"),
            format!(
                "is `{}`; it names an environment variable (like OPENAI_API_KEY), the key itself never goes in this file",
                env.get_ref()
            ),
        ));
    }
    let context_window = match &rp.context_window {
        Some(v) if *v.get_ref() <= context.output_reserve => {
            return Err(src.invalid(
                v.span(),
                &key("context_window"),
                format!(
                    "is {}, not more than the output reserve ({})",
                    v.get_ref(),
                    context.output_reserve
                ),
            ));
        }
        Some(v) => *v.get_ref(),
        None => context.context_window,
    };
    let timeout_secs = match &rp.timeout_secs {
        Some(v) if *v.get_ref() == 0 || *v.get_ref() > 3600 => {
            return Err(src.invalid(
                v.span(),
                &key("timeout_secs"),
                format!("is {}; it must be between 1 and 3600", v.get_ref()),
            ));
        }
        Some(v) => *v.get_ref(),
        None => defaults::TIMEOUT_SECS,
    };
    let max_retries = match &rp.max_retries {
        Some(v) if *v.get_ref() > 10 => {
            return Err(src.invalid(
                v.span(),
                &key("max_retries"),
                format!("is {}; at most 10", v.get_ref()),
            ));
        }
        Some(v) => *v.get_ref(),
        None => defaults::MAX_RETRIES,
    };
    let script = rp.script.as_ref().map(|s| {
        if s.is_absolute() {
            s.clone()
        } else {
            src.path.parent().unwrap_or(Path::new(".")).join(s)
        }
    });
    if rp.kind == ProviderKind::Anthropic && !cfg!(feature = "anthropic") {
        return Err(src.invalid(span, &key("kind"), crate::NO_ANTHROPIC));
    }
    // Last, so that the table's other mistakes are named first.
    if rp.base_url.is_none() && !crate::http::TLS && base_url.starts_with("https://") {
        return Err(src.invalid(
            span,
            &key("base_url"),
            format!(
                "is not set, and this kind's default is `{base_url}`, but {}",
                crate::http::NO_TLS
            ),
        ));
    }
    Ok(ProviderConfig {
        name: name.to_string(),
        kind: rp.kind,
        base_url,
        model,
        api_key_env: rp.api_key_env.as_ref().map(|e| e.get_ref().clone()),
        headers: rp.headers.clone(),
        context_window,
        timeout_secs,
        max_retries,
        script,
        vision: rp.vision || rp.kind == ProviderKind::Scripted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CX: ContextDefaults = ContextDefaults {
        context_window: 8192,
        output_reserve: 1024,
    };

    fn check(text: &str, expected: Result<(), &[&str]>) {
        let got = parse_section(&Source::new(text, Path::new("/h/config.toml")), CX);
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
    fn errors_name_key_and_line() {
        check(
            "[providers.x]\nkind = \"openai\"\n",
            Err(&["providers.x.model", "required"]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\napi_key = \"sk-123\"\n",
            Err(&["line 4", "api_key"]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\napi_key_env = \"sk-live-123\"\n",
            Err(&[
                "config.toml:4",
                "providers.x.api_key_env",
                "never goes in this file",
            ]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"localhost:8080\"\n",
            Err(&["config.toml:4", "providers.x.base_url"]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"http://\"\n",
            Err(&["config.toml:4", "providers.x.base_url", "http://"]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"http://exa mple:80/v1\"\n",
            Err(&["config.toml:4", "providers.x.base_url", "not a URL"]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"ftp://h/v1\"\n",
            Err(&["config.toml:4", "providers.x.base_url", "http://"]),
        );
        check(
            "[providers.s]\nkind = \"scripted\"\n",
            Err(&["providers.s.script"]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\ncontext_window = 1000\n",
            Err(&["config.toml:4", "providers.x.context_window", "1024"]),
        );
    }

    /// A build without TLS refuses an https:// base URL, set or defaulted,
    /// at parse time: the field, the line and the missing feature are
    /// named, and a plain http:// one is still fine.
    #[cfg(not(feature = "tls"))]
    #[test]
    fn without_tls_an_https_base_url_is_refused_by_name() {
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"https://api.openai.com/v1\"\n",
            Err(&["config.toml:4", "providers.x.base_url", "`tls` feature"]),
        );
        check(
            "[providers.c]\nkind = \"openai\"\nmodel = \"m\"\n",
            Err(&[
                "providers.c.base_url",
                "is not set",
                "api.openai.com",
                "`tls` feature",
            ]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n",
            Ok(()),
        );
    }

    /// Without the Anthropic client its kind is refused naming the field
    /// and the feature, before any other mistake of the table.
    #[cfg(not(feature = "anthropic"))]
    #[test]
    fn without_anthropic_its_kind_is_refused_by_name() {
        check(
            "[providers.c]\nkind = \"anthropic\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/\"\n",
            Err(&["config.toml:1", "providers.c.kind", "`anthropic` feature"]),
        );
    }

    #[cfg(all(feature = "tls", feature = "anthropic"))]
    #[test]
    fn providers_are_data() {
        let got = parse_section(
            &Source::new(
                "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1/\"\nmodel = \"m\"\n\
                 [providers.claude]\nkind = \"anthropic\"\nmodel = \"c\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n\
                 headers = { \"x-extra\" = \"1\" }\n",
                Path::new("/h/config.toml"),
            ),
            CX,
        )
        .expect("valid");
        let local = got.iter().find(|p| p.name == "local").expect("local");
        assert_eq!(local.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(local.context_window, 8192);
        let claude = got.iter().find(|p| p.name == "claude").expect("claude");
        assert_eq!(claude.base_url, defaults::ANTHROPIC_BASE_URL);
        assert_eq!(claude.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert_eq!(claude.headers.get("x-extra").map(String::as_str), Some("1"));
    }
}
