//! `config.toml`, read once and validated whole when pincer starts: each
//! section by the crate that owns it (`[session]`, `[context]`, `[agent]`,
//! `[policy]`, `[[hooks]]` by pincer-core; `[providers.NAME]` by
//! pincer-providers; `[shell]` by pincer-tools; `[hardware]` by pincer-hw),
//! every error naming the file,
//! the line and the key. A top-level key no crate owns is an error too.

use pincer_core::canonical::sha256_hex;
use pincer_core::config::{Config, ConfigError, Source};
use pincer_hw::{HardwareConfig, HwError};
use pincer_providers::config::{self as providers, ContextDefaults, ProviderConfig};
use pincer_tools::ShellConfig;
use serde::Serialize;
use std::path::{Path, PathBuf};

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
    #[serde(skip)]
    pub hardware: HardwareConfig,
}

/// Every top-level table pincer reads, and who owns it.
fn sections() -> Vec<&'static str> {
    let mut all: Vec<&str> = pincer_core::config::SECTIONS.to_vec();
    all.push(providers::SECTION);
    all.push(pincer_tools::config::SECTION);
    all.push("hardware");
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
            hardware: HardwareConfig::default(),
        }
    }

    /// Loads `path`; a missing file is the default configuration.
    pub fn load(path: &Path) -> Result<Settings, ConfigError> {
        match std::fs::read(path) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes).map_err(|_| ConfigError::Io {
                    path: path.to_path_buf(),
                    message: "is not UTF-8 text".into(),
                })?;
                let mut s = Settings::parse(&text, path)?;
                s.sha256 = Some(sha256_hex(text.as_bytes()));
                Ok(s)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::defaults(path)),
            Err(e) => Err(ConfigError::Io {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
        }
    }

    /// Parses and validates TOML text; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Settings, ConfigError> {
        let src = Source::new(text, path);
        check_top_level(&src)?;
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
        let hardware = parse_hardware(&src)?;
        Ok(Settings {
            path: path.to_path_buf(),
            found: true,
            sha256: None,
            core,
            providers,
            shell,
            hardware,
        })
    }

    /// The provider named `name`.
    pub fn provider(&self, name: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.name == name)
    }
}

fn check_top_level(src: &Source<'_>) -> Result<(), ConfigError> {
    let doc = toml::de::DeTable::parse(src.text).map_err(|e| src.parse_error(e))?;
    let known = sections();
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
    [
        pincer_core::config::DEFAULT_TOML,
        providers::EXAMPLE_TOML,
        pincer_tools::config::EXAMPLE_TOML,
        pincer_hw::config::EXAMPLE_TOML,
    ]
    .concat()
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
