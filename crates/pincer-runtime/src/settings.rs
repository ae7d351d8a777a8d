//! `config.toml`, read once and validated whole when pincer starts: each
//! section by the crate that owns it (`[session]`, `[context]`, `[agent]`,
//! `[policy]`, `[[hooks]]` by pincer-core; `[providers.NAME]` by
//! pincer-providers; `[hardware]` by pincer-hw), every error naming the file,
//! the line and the key. A top-level key no crate owns is an error too.

use pincer_core::canonical::sha256_hex;
use pincer_core::config::{Config, ConfigError, Source};
use pincer_hw::{HardwareConfig, HwError};
use pincer_providers::config::{self as providers, ContextDefaults, ProviderConfig};
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
    #[serde(skip)]
    pub hardware: HardwareConfig,
}

/// Every top-level table pincer reads, and who owns it.
fn sections() -> Vec<&'static str> {
    let mut all: Vec<&str> = pincer_core::config::SECTIONS.to_vec();
    all.push(providers::SECTION);
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
        let hardware = parse_hardware(&src)?;
        Ok(Settings {
            path: path.to_path_buf(),
            found: true,
            sha256: None,
            core,
            providers,
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

[agent]
# Providers to try in order; transport errors, timeouts, 5xx and 429 move to
# the next one. Empty: pincer looks for OPENAI_API_KEY, ANTHROPIC_API_KEY or
# a local server (Ollama on 11434, llama-server on 8080) and says which.
fallback_chain = []
# A turn stops after this many model calls that asked for tools.
max_tool_iterations = 10
# The directory the agent's tools may touch (default: PINCER_HOME/workspace).
# workspace = "/home/me/agent-workspace"
# Which agent acts (the shell tool sees it as PINCER_AGENT).
agent_id = "pincer"
# A new session starts with a resume block of the last one, built from disk
# (session file, audit trail, approvals): see `pincer handoff`.
handoff = true
# system_prompt = "You are pincer, ..."

[policy]
# "readonly" (low-risk operations only), "supervised" (medium and high risk
# need your approval), or "full".
autonomy = "supervised"
# An approval not answered within this many seconds is a denial.
approval_timeout_secs = 60
# Tools blocked at every autonomy level (globs: * and ?).
deny_tools = []
# Shell programs blocked at every level, on top of the built-in deny list
# (mkfs*, shutdown, reboot, rm -rf /, dd to a disk...). Globs on the program
# name, seen through wrappers such as sudo, env and sh -c.
deny_commands = []

# Hooks on tool calls (see docs/hooks.md): an external command given as an
# argv list (no shell), JSON on stdin and stdout. kind = "observer" (told
# after each call, 500 ms), "interceptor" (before the decision: allow, block
# or rewrite the arguments, 5 s) or "approval" (answers approvals for its
# tools, 60 s). A hook that fails or times out fails closed and is audited.
#
# [[hooks]]
# name = "no-secrets"
# kind = "interceptor"
# command = ["/usr/local/bin/check-call"]
# tools = ["shell", "file_*"]
# timeout_ms = 2000

# A provider. kind = "openai" covers OpenAI, llama.cpp llama-server, Ollama,
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
#
# [providers.claude]
# kind = "anthropic"
# model = "claude-sonnet-4-5"
# api_key_env = "ANTHROPIC_API_KEY"
# headers = { "anthropic-beta" = "..." }

# Hardware (I2C, SPI, GPIO, camera). The board is PINCER_BOARD, else `board`
# below, else the device tree (Jetson Orin Nano, Raspberry Pi Zero 2 W); with
# no device tree it is the simulated board, and the agent then gets no
# hardware tools unless the board is named. Every agent call is gated (a
# scan is low risk, a read medium, a write high; readonly blocks all of it)
# and audited; `pincer hw ...` is recorded as human:cli.
#
# [hardware]
# board = "auto"               # auto | sim | jetson | rpi
# i2c_bus = 1                  # /dev/i2c-1 (default: the board's)
# spi_device = "0.0"           # /dev/spidev0.0
# camera_min_interval_ms = 2000
#
# The simulated board; without `devices` it carries a temperature sensor at
# 0x48 (23.5 C), pressure at 0x49 (1013 hPa) and humidity at 0x4A (45 %).
# [hardware.sim]
# devices = [
#   { address = "0x48", kind = "tmp102", celsius = 23.5 },
#   { address = "0x50", kind = "registers", registers = { "0x00" = "0x12" } },
# ]
# gpio = [{ pin = 7, level = 1 }]
"#;

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
        let s = Settings::parse(DEFAULT_CONFIG_TOML, Path::new("x")).expect("parses");
        assert_eq!(s.core, Config::default());
        assert!(s.providers.is_empty());
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
            "[hardware]\nbored = \"sim\"\n",
            Err(&["config.toml:2", "hardware.bored"]),
        );
        check(
            "[session]\nfsync = \"always\"\n[hardware]\nboard = \"sim\"\n",
            Ok(()),
        );
    }
}
