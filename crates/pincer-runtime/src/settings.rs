//! `config.toml`, read once and validated whole when pincer starts: each
//! section by the crate that owns it (`[session]`, `[context]`, `[agent]`,
//! `[policy]`, `[[hooks]]` by pincer-core; `[providers.NAME]` by
//! pincer-providers; `[shell]` by pincer-tools; `[hardware]` by pincer-hw;
//! `[mcp]` by pincer-mcp; a front-end's own section, such as the Claude
//! Code adapter's `[claude_code]`, by that front-end, which the binary
//! passes in as a [`FrontEndSection`]), every error naming the file, the
//! line and the key. A top-level key no crate owns is an error too.

use pincer_core::canonical::sha256_hex;
use pincer_core::config::{Config, ConfigError, Source};
use pincer_hw::{HardwareConfig, HwError};
use pincer_providers::config::{self as providers, ContextDefaults, ProviderConfig};
use pincer_tools::ShellConfig;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A top-level section owned by a crate above the runtime: a front-end such
/// as the Claude Code adapter (`[claude_code]`), which depends on the
/// runtime and so cannot be called by it. The binary that includes the
/// front-end passes its section to [`Settings::load_with`], so the file is
/// still validated whole when pincer starts; a build without that
/// front-end does not know the section and says so.
#[derive(Debug, Clone, Copy)]
pub struct FrontEndSection {
    /// The top-level key (`claude_code`).
    pub name: &'static str,
    /// Validates the section in the file (absent means its defaults) and
    /// returns its value, which the owner reads back from
    /// [`Settings::front_end`].
    pub parse: fn(&Source<'_>) -> Result<serde_json::Value, ConfigError>,
    /// Its commented text in `pincer init`'s file.
    pub example_toml: &'static str,
}

/// The whole validated configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Where it was read from (or would have been).
    pub path: PathBuf,
    /// False when there is no file and the defaults apply.
    pub found: bool,
    /// SHA-256 of the file's bytes, recorded in `config.load` entries.
    pub sha256: Option<String>,
    #[serde(flatten)]
    pub core: Config,
    /// `[providers.NAME]` tables, sorted by name.
    pub providers: Vec<ProviderConfig>,
    pub shell: ShellConfig,
    /// `[web_fetch]`: off unless it names a domain.
    pub web_fetch: pincer_tools::WebFetchConfig,
    #[serde(skip)]
    pub hardware: HardwareConfig,
    /// The validated value of each [`FrontEndSection`] the binary passed.
    #[serde(skip)]
    pub front_ends: BTreeMap<&'static str, serde_json::Value>,
    /// `[mcp.servers.NAME]` tables (feature `mcp`).
    pub mcp: crate::mcp::McpSettings,
}

/// Every top-level table pincer reads, and who owns it: the runtime's
/// crates, then the front-ends the binary includes.
fn sections(front_ends: &[FrontEndSection]) -> Vec<&'static str> {
    let mut all: Vec<&str> = pincer_core::config::SECTIONS.to_vec();
    all.push(providers::SECTION);
    all.push(pincer_tools::config::SECTION);
    all.push(pincer_tools::web::SECTION);
    all.push("hardware");
    all.push(crate::mcp::SECTION);
    all.extend(front_ends.iter().map(|f| f.name));
    all
}

impl Settings {
    /// The defaults: no file at `path`.
    pub fn defaults(path: &Path) -> Settings {
        Settings {
            path: path.to_path_buf(),
            found: false,
            sha256: None,
            core: Config::default(),
            providers: Vec::new(),
            shell: ShellConfig::default(),
            web_fetch: Default::default(),
            hardware: HardwareConfig::default(),
            front_ends: BTreeMap::new(),
            mcp: Default::default(),
        }
    }

    /// Loads `path`; a missing file is the default configuration.
    pub fn load(path: &Path) -> Result<Settings, ConfigError> {
        Settings::load_with(path, &[])
    }

    /// [`Settings::load`], with the sections of the front-ends the binary
    /// includes; each is parsed (from the file, or its defaults when there
    /// is no file) and kept in [`Settings::front_ends`].
    pub fn load_with(path: &Path, front_ends: &[FrontEndSection]) -> Result<Settings, ConfigError> {
        match std::fs::read(path) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes).map_err(|_| ConfigError::Io {
                    path: path.to_path_buf(),
                    message: "is not UTF-8 text".into(),
                })?;
                let mut s = Settings::parse_with(&text, path, front_ends)?;
                s.sha256 = Some(sha256_hex(text.as_bytes()));
                Ok(s)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut s = Settings::defaults(path);
                s.front_ends = parse_front_ends(&Source::new("", path), front_ends)?;
                Ok(s)
            }
            Err(e) => Err(ConfigError::Io {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
        }
    }

    /// Parses and validates TOML text; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Settings, ConfigError> {
        Settings::parse_with(text, path, &[])
    }

    /// [`Settings::parse`] with the sections of the front-ends the binary
    /// includes.
    pub fn parse_with(
        text: &str,
        path: &Path,
        front_ends: &[FrontEndSection],
    ) -> Result<Settings, ConfigError> {
        let src = Source::new(text, path);
        check_top_level(&src, front_ends)?;
        let core = Config::parse(&src)?;
        let providers = providers::parse_section(
            &src,
            ContextDefaults {
                context_window: core.context.context_window,
                output_reserve: core.context.output_reserve,
            },
        )?;
        for name in &core.agent.fallback_chain {
            if !providers.iter().any(|p| &p.name == name) {
                return Err(src.invalid_at(
                    "agent.fallback_chain",
                    format!("names `{name}`, which has no [providers.{name}] table"),
                ));
            }
        }
        let shell = pincer_tools::config::parse_section(&src)?;
        let web_fetch = pincer_tools::web::parse_section(&src)?;
        let hardware = parse_hardware(&src)?;
        let mcp = crate::mcp::parse_section(&src)?;
        Ok(Settings {
            path: path.to_path_buf(),
            found: true,
            sha256: None,
            core,
            providers,
            shell,
            web_fetch,
            hardware,
            front_ends: parse_front_ends(&src, front_ends)?,
            mcp,
        })
    }

    /// The provider named `name`.
    pub fn provider(&self, name: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// The validated value of the front-end section `name`, if the binary
    /// passed that section when it loaded the file.
    pub fn front_end(&self, name: &str) -> Option<&serde_json::Value> {
        self.front_ends.get(name)
    }
}

fn parse_front_ends(
    src: &Source<'_>,
    front_ends: &[FrontEndSection],
) -> Result<BTreeMap<&'static str, serde_json::Value>, ConfigError> {
    front_ends
        .iter()
        .map(|f| Ok((f.name, (f.parse)(src)?)))
        .collect()
}

fn check_top_level(src: &Source<'_>, front_ends: &[FrontEndSection]) -> Result<(), ConfigError> {
    let doc = toml::de::DeTable::parse(src.text).map_err(|e| src.parse_error(e))?;
    let known = sections(front_ends);
    for (key, _) in doc.get_ref().iter() {
        let name: &str = key.get_ref();
        if !known.contains(&name) {
            return Err(src.invalid(
                key.span(),
                name,
                format!(
                    "is not a section pincer knows; the sections are {}",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// `[hardware]`, validated by pincer-hw; its errors name a dotted field,
/// which is found in the file for the line.
fn parse_hardware(src: &Source<'_>) -> Result<HardwareConfig, ConfigError> {
    #[derive(serde::Deserialize)]
    struct Doc {
        hardware: Option<toml::Value>,
    }
    let doc: Doc = src.raw()?;
    HardwareConfig::from_toml(doc.hardware.as_ref()).map_err(|e| match e {
        HwError::Config { field, message } => src.invalid_at(&field, message),
        other => src.invalid_at("hardware", other.to_string()),
    })
}

/// The file `pincer init` writes: every key, commented, at its default,
/// each section's text from the crate that owns it.
pub fn default_config_toml() -> String {
    default_config_toml_with(&[])
}

/// [`default_config_toml`] with the sections of the front-ends the binary
/// includes.
pub fn default_config_toml_with(front_ends: &[FrontEndSection]) -> String {
    let mut text = [
        pincer_core::config::DEFAULT_TOML,
        providers::EXAMPLE_TOML,
        pincer_tools::config::EXAMPLE_TOML,
        pincer_tools::web::EXAMPLE_TOML,
        pincer_hw::config::EXAMPLE_TOML,
        crate::mcp::EXAMPLE_TOML,
    ]
    .concat();
    for f in front_ends {
        text.push_str(f.example_toml);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Result<(), &[&str]>) {
        let got = Settings::parse(text, Path::new("/h/config.toml"));
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
        let s = Settings::parse(&default_config_toml(), Path::new("x")).expect("parses");
        assert_eq!(s.core, Config::default());
        assert!(s.providers.is_empty());
        assert_eq!(s.shell, ShellConfig::default());
    }

    fn parse_demo(src: &Source<'_>) -> Result<serde_json::Value, ConfigError> {
        #[derive(serde::Deserialize)]
        struct Doc {
            demo: Option<toml::Value>,
        }
        let doc: Doc = src.raw()?;
        match doc.demo.as_ref().and_then(|d| d.get("level")) {
            None => Ok(serde_json::json!({"level": 1})),
            Some(toml::Value::Integer(n)) if *n > 0 => Ok(serde_json::json!({"level": n})),
            Some(_) => Err(src.invalid_at("demo.level", "must be a whole number above 0")),
        }
    }

    const DEMO: FrontEndSection = FrontEndSection {
        name: "demo",
        parse: parse_demo,
        example_toml: "\n# [demo]\n# level = 1\n",
    };

    #[test]
    fn a_front_end_section_is_validated_by_its_owner_with_its_line() {
        let p = Path::new("/h/config.toml");
        let s = Settings::parse_with("[demo]\nlevel = 3\n", p, &[DEMO]).expect("parses");
        assert_eq!(s.front_end("demo"), Some(&serde_json::json!({"level": 3})));
        let e = Settings::parse_with("[session]\n\n[demo]\nlevel = 0\n", p, &[DEMO])
            .expect_err("refused");
        assert!(e.to_string().contains("config.toml:4"), "{e}");
        assert!(e.to_string().contains("demo.level"), "{e}");
        // A build without the front-end does not know the section.
        let e = Settings::parse("[demo]\nlevel = 3\n", p).expect_err("unknown");
        assert!(e.to_string().contains("not a section"), "{e}");
        // No file: the owner's defaults.
        let dir = tempfile::tempdir().expect("tempdir");
        let s = Settings::load_with(&dir.path().join("none.toml"), &[DEMO]).expect("defaults");
        assert_eq!(s.front_end("demo"), Some(&serde_json::json!({"level": 1})));
        assert!(default_config_toml_with(&[DEMO]).ends_with("# level = 1\n"));
        let s = Settings::parse(&default_config_toml_with(&[DEMO]), p).expect("commented");
        assert!(s.front_end("demo").is_none());
    }

    #[test]
    fn every_section_is_checked_with_its_line() {
        check(
            "[sesion]\nfsync = \"turn\"\n",
            Err(&["config.toml:1", "sesion", "not a section"]),
        );
        check(
            "[agent]\nfallback_chain = [\"nope\"]\n",
            Err(&["config.toml:2", "agent.fallback_chain", "nope"]),
        );
        check(
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"http://\"\n",
            Err(&["config.toml:4", "providers.x.base_url"]),
        );
        check(
            "[hardware]\nboard = \"sim\"\n\n[hardware.sim]\ndevices = [\n  { address = \"0x48\", kind = \"tmp102\", celsius = 20.0 },\n  { address = \"0x99\", kind = \"tmp102\", celsius = 20.0 },\n]\n",
            Err(&["config.toml:7", "hardware.sim.devices[1].address"]),
        );
        check(
            "[shell]\nnetwork = \"on\"\n",
            Err(&["config.toml", "on", "ask"]),
        );
        check(
            "[shell]\ndegrade = [\"nope\"]\n",
            Err(&["config.toml:2", "shell.degrade", "nope"]),
        );
        check(
            "[hardware]\nbored = \"sim\"\n",
            Err(&["config.toml:2", "hardware.bored"]),
        );
        check(
            "[session]\nfsync = \"always\"\n[hardware]\nboard = \"sim\"\n",
            Ok(()),
        );
    }
}
