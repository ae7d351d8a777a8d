//! `[claude_code]` in `config.toml`, owned here and validated when pincer
//! loads the file (the binary passes [`SECTION`] to
//! `pincer_runtime::Settings::load_with`), every error naming the file, the
//! line and the key.

use pincer_core::config::{ConfigError, Source};
use pincer_runtime::{FrontEndSection, Settings};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use toml::Spanned;

/// The section's top-level key.
pub const SECTION_NAME: &str = "claude_code";

/// The section, for `Settings::load_with`.
pub const SECTION: FrontEndSection = FrontEndSection {
    name: SECTION_NAME,
    parse: parse_section,
    example_toml: EXAMPLE_TOML,
};

/// Its commented text in `pincer init`'s file.
pub const EXAMPLE_TOML: &str = r#"
# Claude Code governed by pincer through its hooks
# (`pincer hook claude-code install`; see docs/claude-code.md).
# [claude_code]
# What a tool pincer does not know gets, at every autonomy level:
# "allow", "ask" (Claude Code asks its user) or "deny".
# unknown_tools = "ask"
# The directory Claude Code may write in. Default: the project Claude Code
# runs in ($CLAUDE_PROJECT_DIR, else the hook's `cwd`).
# workspace = "/home/me/project"
"#;

/// The answer for a tool pincer does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownTools {
    Allow,
    #[default]
    Ask,
    Deny,
}

impl UnknownTools {
    pub fn as_str(self) -> &'static str {
        match self {
            UnknownTools::Allow => "allow",
            UnknownTools::Ask => "ask",
            UnknownTools::Deny => "deny",
        }
    }
}

/// The validated section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaudeCodeConfig {
    pub unknown_tools: UnknownTools,
    /// An absolute directory; its existence is checked when a hook uses it
    /// (a missing directory makes PreToolUse answer `ask`, saying so).
    pub workspace: Option<PathBuf>,
}

impl ClaudeCodeConfig {
    /// The section as `settings` holds it (its defaults when the binary
    /// did not pass [`SECTION`], which only a test does).
    pub fn of(settings: &Settings) -> ClaudeCodeConfig {
        settings
            .front_end(SECTION_NAME)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }
}

#[derive(Deserialize)]
struct Doc {
    claude_code: Option<RawSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSection {
    unknown_tools: Option<Spanned<String>>,
    workspace: Option<Spanned<String>>,
}

/// Validates `[claude_code]` in `src` and returns it as JSON.
pub fn parse_section(src: &Source<'_>) -> Result<serde_json::Value, ConfigError> {
    let cfg = parse(src)?;
    serde_json::to_value(&cfg).map_err(|e| src.invalid_at(SECTION_NAME, e.to_string()))
}

/// Validates `[claude_code]` in `src`.
pub fn parse(src: &Source<'_>) -> Result<ClaudeCodeConfig, ConfigError> {
    let doc: Doc = src.raw()?;
    let mut cfg = ClaudeCodeConfig::default();
    let Some(raw) = doc.claude_code else {
        return Ok(cfg);
    };
    if let Some(v) = &raw.unknown_tools {
        cfg.unknown_tools = match v.get_ref().as_str() {
            "allow" => UnknownTools::Allow,
            "ask" => UnknownTools::Ask,
            "deny" => UnknownTools::Deny,
            other => {
                return Err(src.invalid(
                    v.span(),
                    "claude_code.unknown_tools",
                    format!("is `{other}`; it must be \"allow\", \"ask\" or \"deny\""),
                ));
            }
        };
    }
    if let Some(v) = &raw.workspace {
        let p = PathBuf::from(v.get_ref());
        if v.get_ref().is_empty() || !p.is_absolute() {
            return Err(src.invalid(
                v.span(),
                "claude_code.workspace",
                format!(
                    "is `{}`; it must be an absolute directory path",
                    v.get_ref()
                ),
            ));
        }
        cfg.workspace = Some(p);
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn check(text: &str, want: Result<ClaudeCodeConfig, &[&str]>) {
        let got = parse(&Source::new(text, Path::new("/h/config.toml")));
        match (got, want) {
            (Ok(g), Ok(w)) => assert_eq!(g, w),
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
    fn values_and_errors_with_their_line() {
        check("", Ok(ClaudeCodeConfig::default()));
        check(
            "[claude_code]\nunknown_tools = \"deny\"\nworkspace = \"/p\"\n",
            Ok(ClaudeCodeConfig {
                unknown_tools: UnknownTools::Deny,
                workspace: Some(PathBuf::from("/p")),
            }),
        );
        check(
            "[session]\n\n[claude_code]\nunknown_tools = \"maybe\"\n",
            Err(&["config.toml:4", "claude_code.unknown_tools", "maybe"]),
        );
        check(
            "[claude_code]\nworkspace = \"rel/dir\"\n",
            Err(&["config.toml:2", "claude_code.workspace", "absolute"]),
        );
        check(
            "[claude_code]\nunknown_tool = \"ask\"\n",
            Err(&["unknown_tool"]),
        );
        check("[claude_code]\nunknown_tools = 3\n", Err(&["config.toml"]));
    }

    #[test]
    fn the_example_is_valid_once_uncommented() {
        let text: String = EXAMPLE_TOML
            .lines()
            .map(|l| l.strip_prefix("# ").unwrap_or(l))
            .filter(|l| !l.starts_with('#') && !l.starts_with("Claude") && !l.starts_with('('))
            .filter(|l| l.starts_with('[') || l.contains(" = ") || l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let got = parse(&Source::new(&text, Path::new("x"))).expect("valid");
        assert_eq!(got.unknown_tools, UnknownTools::Ask);
        assert_eq!(got.workspace, Some(PathBuf::from("/home/me/project")));
    }
}
