//! The `[shell]` table of `config.toml`, owned and validated here: which
//! shell runs a `command`, whether commands run in the OS sandbox, whether a
//! call may ask for the network, the sandbox's limits and which of its
//! layers may degrade on this machine. Every error names the key and line.

use pincer_core::config::{ConfigError, Source};
use pincer_sandbox::{Layer, Limits, MIN_MEMORY_BYTES, MIN_PIDS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use toml::Spanned;

/// The top-level key this module owns.
pub const SECTION: &str = "shell";

/// The `[shell]` section as `pincer init` writes it (commented).
pub const EXAMPLE_TOML: &str = r#"
# The shell tool. Every command runs in an OS sandbox (namespaces, Landlock,
# cgroups, rlimits): only the workspace is writable, /tmp and HOME are
# private and empty, the network is off, pincer's own state and every host
# process are out of reach. If a layer cannot be applied the command does
# not run; if this machine cannot build the sandbox at all the agent gets no
# shell tool, and `pincer doctor` / `pincer sandbox check` say why.
#
# [shell]
# program = "dash"             # dash | bash (/bin/bash --noprofile --norc)
# network = "off"              # off | ask: a call may ask for the network
#                              # (argument `network: true`); such a call is
#                              # high risk, so it needs approval unless
#                              # autonomy is "full"
# memory_mb = 1024             # memory of the whole sandbox (cgroup)
# pids = 512                   # processes and threads at once (cgroup)
# cpu_secs = 600               # CPU seconds per process
# tmp_mb = 256                 # size of the private /tmp and HOME
# degrade = []                 # layers allowed to be missing on this machine
#                              # instead of refusing to run, e.g.
#                              # ["cgroup-memory", "cgroup-pids"]; every
#                              # result, audit entry and `doctor` says so
# sandbox = "on"               # "off" runs commands WITHOUT the sandbox, with
#                              # pincer's own access to the machine: warned
#                              # at every start and recorded in the audit
#                              # trail. Not recommended.
"#;

/// Which shell runs a `command`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShellChoice {
    Dash,
    Bash,
}

/// Whether commands run in the OS sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    #[default]
    On,
    /// The explicit opt-in to run commands with pincer's own access.
    Off,
}

/// Whether a call may have the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// No command has the network.
    #[default]
    Off,
    /// A call may ask for it (`network: true`), and is then high risk.
    Ask,
}

impl NetworkMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Off => "off",
            NetworkMode::Ask => "ask",
        }
    }
}

/// `[shell]`, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShellConfig {
    /// `program`, when the file names one (`None`: dash, the default).
    pub program: Option<ShellChoice>,
    pub sandbox: SandboxMode,
    pub network: NetworkMode,
    /// Layers that may degrade instead of stopping a run.
    pub degrade: BTreeSet<Layer>,
    pub limits: Limits,
}

impl Default for ShellConfig {
    fn default() -> ShellConfig {
        ShellConfig {
            program: None,
            sandbox: SandboxMode::On,
            network: NetworkMode::Off,
            degrade: BTreeSet::new(),
            limits: Limits::default(),
        }
    }
}

#[derive(Deserialize, Default)]
struct RawDoc {
    #[serde(default)]
    shell: Option<Spanned<RawShell>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawShell {
    program: Option<ShellChoice>,
    sandbox: Option<Spanned<SandboxMode>>,
    network: Option<Spanned<NetworkMode>>,
    degrade: Option<Spanned<Vec<Spanned<String>>>>,
    memory_mb: Option<Spanned<u64>>,
    pids: Option<Spanned<u64>>,
    cpu_secs: Option<Spanned<u64>>,
    tmp_mb: Option<Spanned<u64>>,
}

const MIB: u64 = 1 << 20;

/// Parses and validates `[shell]` of `src` (absent: the defaults).
pub fn parse_section(src: &Source<'_>) -> Result<ShellConfig, ConfigError> {
    let raw: RawDoc = src.raw()?;
    let mut out = ShellConfig::default();
    let Some(raw) = raw.shell else {
        return Ok(out);
    };
    let raw = raw.get_ref();
    out.program = raw.program;
    if let Some(s) = &raw.sandbox {
        out.sandbox = *s.get_ref();
    }
    if let Some(n) = &raw.network {
        out.network = *n.get_ref();
        if out.sandbox == SandboxMode::Off && out.network != NetworkMode::Off {
            return Err(src.invalid(
                n.span(),
                "shell.network",
                "has no effect with sandbox = \"off\": unsandboxed commands have pincer's own network",
            ));
        }
    }
    if let Some(list) = &raw.degrade {
        if out.sandbox == SandboxMode::Off && !list.get_ref().is_empty() {
            return Err(src.invalid(
                list.span(),
                "shell.degrade",
                "has no effect with sandbox = \"off\": there is no sandbox to degrade",
            ));
        }
        for name in list.get_ref() {
            let layer = name
                .get_ref()
                .parse::<Layer>()
                .map_err(|reason| src.invalid(name.span(), "shell.degrade", reason))?;
            out.degrade.insert(layer);
        }
    }
    let min_mb = MIN_MEMORY_BYTES / MIB;
    let limits = [
        ("shell.memory_mb", &raw.memory_mb, min_mb),
        ("shell.pids", &raw.pids, MIN_PIDS),
        ("shell.cpu_secs", &raw.cpu_secs, 1),
        ("shell.tmp_mb", &raw.tmp_mb, 1),
    ];
    for (key, value, min) in limits {
        let Some(v) = value else { continue };
        let n = *v.get_ref();
        // Megabytes beyond this would overflow a byte count: nobody means it.
        let max = if key.ends_with("_mb") {
            u64::MAX / MIB
        } else {
            u64::MAX
        };
        if n < min {
            return Err(src.invalid(v.span(), key, format!("is {n}; it must be at least {min}")));
        }
        if n > max {
            return Err(src.invalid(
                v.span(),
                key,
                format!("is {n}, more megabytes than a byte count can hold"),
            ));
        }
        match key {
            "shell.memory_mb" => out.limits.memory_bytes = n * MIB,
            "shell.pids" => out.limits.pids = n,
            "shell.cpu_secs" => out.limits.cpu_secs = n,
            _ => out.limits.tmp_bytes = n * MIB,
        }
    }
    Ok(out)
}

/// A commented config example with its `# key = value` lines (and section
/// headers) uncommented and trailing comments cut: what a person gets by
/// uncommenting it. Tests check that each example parses.
#[cfg(test)]
pub(crate) fn uncommented(example: &str) -> String {
    example
        .lines()
        .filter(|l| l.starts_with("# ") && !l.starts_with("#  "))
        .map(|l| {
            let l = &l[2..];
            let l = l.split(" #").next().unwrap_or(l).trim_end();
            format!("{l}\n")
        })
        .filter(|l| l.starts_with('[') || l.contains(" = "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<ShellConfig, String> {
        parse_section(&Source::new(text, Path::new("/h/config.toml"))).map_err(|e| e.to_string())
    }

    #[test]
    fn absent_is_the_strict_default() {
        let c = parse("").expect("parses");
        assert_eq!(c, ShellConfig::default());
        assert_eq!(c.sandbox, SandboxMode::On);
        assert_eq!(c.network, NetworkMode::Off);
        assert!(c.degrade.is_empty());
    }

    #[test]
    fn every_key_is_read() {
        let c = parse(
            "[shell]\nprogram = \"bash\"\nnetwork = \"ask\"\ndegrade = [\"cgroup-memory\"]\nmemory_mb = 64\npids = 20\ncpu_secs = 5\ntmp_mb = 8\n",
        )
        .expect("parses");
        assert_eq!(c.program, Some(ShellChoice::Bash));
        assert_eq!(c.network, NetworkMode::Ask);
        assert_eq!(c.degrade, BTreeSet::from([Layer::CgroupMemory]));
        assert_eq!(c.limits.memory_bytes, 64 << 20);
        assert_eq!(c.limits.pids, 20);
        assert_eq!(c.limits.cpu_secs, 5);
        assert_eq!(c.limits.tmp_bytes, 8 << 20);
        let off = parse("[shell]\nsandbox = \"off\"\n").expect("parses");
        assert_eq!(off.sandbox, SandboxMode::Off);
    }

    #[test]
    fn bad_values_name_the_key_and_line() {
        for (text, needles) in [
            (
                "[shell]\nprogram = \"zsh\"\n",
                &["config.toml", "zsh", "dash"][..],
            ),
            (
                "[shell]\nsandbox = \"maybe\"\n",
                &["maybe", "on", "off"][..],
            ),
            (
                "[shell]\ndegrade = [\"landlok-fs\"]\n",
                &[
                    "config.toml:2",
                    "shell.degrade",
                    "landlok-fs",
                    "landlock-fs",
                ][..],
            ),
            (
                "[shell]\nmemory_mb = 1\n",
                &["config.toml:2", "shell.memory_mb", "at least 16"][..],
            ),
            (
                "[shell]\npids = 2\n",
                &["config.toml:2", "shell.pids", "at least 8"][..],
            ),
            (
                "[shell]\ncpu_secs = 0\n",
                &["config.toml:2", "shell.cpu_secs"][..],
            ),
            (
                "[shell]\nmemory_mb = 18446744073709551615\n",
                &["shell.memory_mb"][..],
            ),
            (
                "[shell]\nsandbox = \"off\"\nnetwork = \"ask\"\n",
                &["config.toml:3", "shell.network", "no effect"][..],
            ),
            (
                "[shell]\nsandbox = \"off\"\ndegrade = [\"proc\"]\n",
                &["config.toml:3", "shell.degrade", "no effect"][..],
            ),
            ("[shell]\nnetwrok = \"ask\"\n", &["netwrok"][..]),
        ] {
            let e = parse(text).expect_err(text);
            for n in needles {
                assert!(e.contains(n), "{text:?}: `{e}` should contain `{n}`");
            }
        }
    }

    #[test]
    fn the_example_parses_to_the_default_once_uncommented() {
        let uncommented = crate::config::uncommented(EXAMPLE_TOML);
        let c = parse(&uncommented).expect(&uncommented);
        assert_eq!(c.program, Some(ShellChoice::Dash));
        assert_eq!(ShellConfig { program: None, ..c }, ShellConfig::default());
    }
}
