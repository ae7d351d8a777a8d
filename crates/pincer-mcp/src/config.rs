//! The `[mcp]` table of `config.toml`, owned and validated here: one
//! `[mcp.servers.NAME]` table per MCP server, with how to reach it
//! (`command` for stdio inside the OS sandbox, or `url` for streamable
//! HTTP), which of its tools the agent may use, their risk, and the
//! sandbox a stdio server runs in. No table: no MCP at all. Every error
//! names the key and its line.

use pincer_core::config::{ConfigError, Source, is_env_name};
use pincer_core::glob::check_pattern;
use pincer_core::policy::Risk;
use pincer_sandbox::{Layer, Limits, MIN_MEMORY_BYTES, MIN_PIDS};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// The top-level key this module owns.
pub const SECTION: &str = "mcp";

/// The `[mcp]` section as `pincer init` writes it (commented).
pub const EXAMPLE_TOML: &str = r#"
# MCP servers (see docs/mcp.md): their tools reach the agent as
# SERVER__TOOL, each call through the same gate and audit trail as pincer's
# own tools. Nothing is started until a server is configured here.
#
# [mcp.servers.everything]
# command = ["node", "/opt/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]
#                              # stdio: runs inside the OS sandbox, like the
#                              # shell (no network, private /tmp and HOME,
#                              # pincer's state hidden)
# # url = "https://mcp.example.com/mcp"   # or streamable HTTP (instead of command)
# tools = ["echo", "get-sum"]  # required: the tools the agent may use (globs;
#                              # ["*"] = every tool the server lists at start).
#                              # `pincer mcp tools everything` lists them.
# risk = "medium"              # low | medium | high, for every tool...
# tool_risk = { echo = "low" } # ...unless named here
# timeout_secs = 60            # a call without an answer by then fails
# startup_timeout_secs = 30    # start, handshake and tool list
# read_only = ["/opt/mcp"]     # stdio: host directories it may read, besides
#                              # the system ones (/usr, /etc, ...)
# workspace = "none"           # stdio: none | read | write: the agent's
#                              # workspace, as its working directory
#                              # ("none": an empty scratch directory)
# env = []                     # stdio: names of pincer's environment
#                              # variables it gets (PATH and the locale always)
# network = false              # stdio: true lets it reach the network
#                              # (recorded in every call's audit entry)
# memory_mb = 1024             # stdio: sandbox limits, as in [shell]
# pids = 512
# cpu_secs = 3600
# degrade = []                 # stdio: sandbox layers allowed to be missing
# # bearer_token_env = "MCP_TOKEN"  # http: Authorization: Bearer $MCP_TOKEN
"#;

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum Transport {
    /// A program speaking JSON-RPC on stdin/stdout, inside the OS sandbox.
    Stdio(StdioConfig),
    /// A streamable HTTP endpoint.
    Http(HttpConfig),
}

impl Transport {
    pub fn as_str(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::Http(_) => "http",
        }
    }
}

/// What the agent's workspace is to a stdio server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceAccess {
    /// Not visible; the server's working directory is an empty scratch
    /// directory, removed when it stops.
    #[default]
    None,
    /// Readable (its working directory is still the scratch directory).
    Read,
    /// Readable and writable, and its working directory.
    Write,
}

impl WorkspaceAccess {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceAccess::None => "none",
            WorkspaceAccess::Read => "read",
            WorkspaceAccess::Write => "write",
        }
    }
}

/// A stdio server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StdioConfig {
    /// The program and its arguments (no shell).
    pub command: Vec<String>,
    /// Names of pincer's environment variables the server gets.
    pub env: Vec<String>,
    pub network: bool,
    pub workspace: WorkspaceAccess,
    /// Host directories it may read besides the system ones.
    pub read_only: Vec<PathBuf>,
    pub limits: Limits,
    pub degrade: BTreeSet<Layer>,
}

/// A streamable HTTP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpConfig {
    pub url: String,
    /// The variable holding a bearer token (never the token).
    pub bearer_token_env: Option<String>,
}

/// One `[mcp.servers.NAME]` table, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerConfig {
    pub name: String,
    #[serde(flatten)]
    pub transport: Transport,
    /// Tool-name globs the agent may use.
    pub tools: Vec<String>,
    /// The risk of every tool but those in `tool_risk`.
    pub risk: Risk,
    pub tool_risk: BTreeMap<String, Risk>,
    #[serde(with = "secs")]
    pub timeout: Duration,
    #[serde(with = "secs")]
    pub startup_timeout: Duration,
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
}

impl ServerConfig {
    /// Whether the agent may use the server's tool `tool`.
    pub fn allows(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|p| pincer_core::glob::glob_match(p, tool))
    }

    /// The risk of the server's tool `tool`.
    pub fn risk_of(&self, tool: &str) -> Risk {
        self.tool_risk.get(tool).copied().unwrap_or(self.risk)
    }
}

/// `[mcp]`, validated: the servers, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct McpConfig {
    pub servers: Vec<ServerConfig>,
}

impl McpConfig {
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// The separator between a server's name and its tool's in the name the
/// model sees (`everything__echo`). Server names cannot contain it.
pub const SEPARATOR: &str = "__";

/// The longest server name: the model-facing name (server, separator,
/// tool) must fit the 64 characters providers accept for a tool name.
pub const MAX_SERVER_NAME: usize = 24;

/// A server's name: lowercase letters, digits and `-`, starting with a
/// letter (it prefixes tool names and appears in actors and messages).
pub fn is_server_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_lowercase())
        && s.len() <= MAX_SERVER_NAME
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
}

#[derive(Deserialize, Default)]
struct RawDoc {
    #[serde(default)]
    mcp: Option<Spanned<RawMcp>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    #[serde(default)]
    servers: BTreeMap<String, Spanned<RawServer>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<Spanned<Vec<Spanned<String>>>>,
    url: Option<Spanned<String>>,
    tools: Option<Spanned<Vec<Spanned<String>>>>,
    risk: Option<Risk>,
    #[serde(default)]
    tool_risk: BTreeMap<String, Risk>,
    timeout_secs: Option<Spanned<u64>>,
    startup_timeout_secs: Option<Spanned<u64>>,
    env: Option<Spanned<Vec<Spanned<String>>>>,
    network: Option<Spanned<bool>>,
    workspace: Option<Spanned<WorkspaceAccess>>,
    read_only: Option<Spanned<Vec<Spanned<String>>>>,
    memory_mb: Option<Spanned<u64>>,
    pids: Option<Spanned<u64>>,
    cpu_secs: Option<Spanned<u64>>,
    degrade: Option<Spanned<Vec<Spanned<String>>>>,
    bearer_token_env: Option<Spanned<String>>,
}

/// Per-call timeout when the config names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Start, handshake and tool list, when the config names none.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// CPU seconds per process of a stdio server: it lives as long as pincer,
/// so more than a shell command's default.
pub const DEFAULT_CPU_SECS: u64 = 3600;
/// The longest timeout accepted (a day: anything longer is a typo).
const MAX_SECS: u64 = 86_400;

const MIB: u64 = 1 << 20;

/// Parses and validates `[mcp]` of `src` (absent: no servers).
pub fn parse_section(src: &Source<'_>) -> Result<McpConfig, ConfigError> {
    let raw: RawDoc = src.raw()?;
    let Some(raw) = raw.mcp else {
        return Ok(McpConfig::default());
    };
    let mut servers = Vec::new();
    for (name, server) in raw.into_inner().servers {
        let key = format!("mcp.servers.{name}");
        if !is_server_name(&name) {
            return Err(src.invalid(
                server.span(),
                &key,
                format!(
                    "is not a usable server name: lowercase letters, digits and `-`, starting with a letter, at most {MAX_SERVER_NAME} characters (it prefixes its tools' names: {name}{SEPARATOR}TOOL)"
                ),
            ));
        }
        servers.push(server_config(src, &key, name, server)?);
    }
    Ok(McpConfig { servers })
}

fn server_config(
    src: &Source<'_>,
    key: &str,
    name: String,
    server: Spanned<RawServer>,
) -> Result<ServerConfig, ConfigError> {
    let span = server.span();
    let raw = server.into_inner();
    let at = |field: &str| format!("{key}.{field}");
    let transport = match (&raw.command, &raw.url) {
        (Some(_), Some(url)) => {
            return Err(src.invalid(
                url.span(),
                &at("url"),
                "and `command` are both set: a server is either a program (stdio) or a URL (http)",
            ));
        }
        (None, None) => {
            return Err(src.invalid(
                span,
                key,
                "needs `command` (a program speaking MCP on stdio, as an argv list) or `url` (a streamable HTTP endpoint)",
            ));
        }
        (Some(_), None) => Transport::Stdio(stdio(src, key, &raw)?),
        (None, Some(url)) => Transport::Http(http(src, key, &raw, url)?),
    };
    let Some(tools) = &raw.tools else {
        return Err(src.invalid(
            span,
            &at("tools"),
            format!(
                "is required: list the tools the agent may use (globs; [\"*\"] for every tool the server lists at start); `pincer mcp tools {name}` shows them"
            ),
        ));
    };
    let mut allow = Vec::new();
    for t in tools.get_ref() {
        check_pattern(t.get_ref()).map_err(|reason| src.invalid(t.span(), &at("tools"), reason))?;
        allow.push(t.get_ref().clone());
    }
    for tool in raw.tool_risk.keys() {
        if tool.is_empty() || tool.chars().any(char::is_control) {
            return Err(src.invalid_at(
                &at("tool_risk"),
                format!("names the tool {tool:?}, which is not a tool name"),
            ));
        }
    }
    let secs = |field: &str, v: &Option<Spanned<u64>>, default: Duration| match v {
        None => Ok(default),
        Some(v) if *v.get_ref() == 0 || *v.get_ref() > MAX_SECS => Err(src.invalid(
            v.span(),
            &at(field),
            format!("is {}; it must be from 1 to {MAX_SECS}", v.get_ref()),
        )),
        Some(v) => Ok(Duration::from_secs(*v.get_ref())),
    };
    Ok(ServerConfig {
        timeout: secs("timeout_secs", &raw.timeout_secs, DEFAULT_TIMEOUT)?,
        startup_timeout: secs(
            "startup_timeout_secs",
            &raw.startup_timeout_secs,
            DEFAULT_STARTUP_TIMEOUT,
        )?,
        name,
        transport,
        tools: allow,
        risk: raw.risk.unwrap_or(Risk::Medium),
        tool_risk: raw.tool_risk,
    })
}

/// Keys that mean something only for the other transport.
fn only_for<T>(
    src: &Source<'_>,
    key: &str,
    field: &str,
    value: &Option<Spanned<T>>,
    transport: &str,
) -> Result<(), ConfigError> {
    match value {
        Some(v) => Err(src.invalid(
            v.span(),
            &format!("{key}.{field}"),
            format!("applies only to a {transport} server"),
        )),
        None => Ok(()),
    }
}

fn stdio(src: &Source<'_>, key: &str, raw: &RawServer) -> Result<StdioConfig, ConfigError> {
    only_for(
        src,
        key,
        "bearer_token_env",
        &raw.bearer_token_env,
        "http (`url`)",
    )?;
    let at = |field: &str| format!("{key}.{field}");
    let mut command = Vec::new();
    if let Some(c) = &raw.command {
        for (i, a) in c.get_ref().iter().enumerate() {
            if a.get_ref().contains('\0') {
                return Err(src.invalid(
                    a.span(),
                    &format!("{key}.command[{i}]"),
                    "contains a NUL byte",
                ));
            }
            command.push(a.get_ref().clone());
        }
        match command.first() {
            None => {
                return Err(src.invalid(
                    c.span(),
                    &at("command"),
                    "is empty: give the program and its arguments",
                ));
            }
            Some(p) if p.is_empty() => {
                return Err(src.invalid(c.span(), &format!("{key}.command[0]"), "is empty"));
            }
            Some(_) => {}
        }
    }
    let mut env = Vec::new();
    if let Some(list) = &raw.env {
        for v in list.get_ref() {
            let n = v.get_ref();
            if !is_env_name(n) {
                return Err(src.invalid(
                    v.span(),
                    &at("env"),
                    format!("names `{n}`, which is not an environment variable name (A-Z, 0-9, _)"),
                ));
            }
            if matches!(n.as_str(), "HOME" | "PINCER_AGENT" | "PATH") {
                return Err(src.invalid(
                    v.span(),
                    &at("env"),
                    format!("names `{n}`, which the sandbox sets itself"),
                ));
            }
            env.push(n.clone());
        }
    }
    let mut read_only = Vec::new();
    if let Some(list) = &raw.read_only {
        for p in list.get_ref() {
            let path = PathBuf::from(p.get_ref());
            if !path.is_absolute()
                || path == Path::new("/")
                || path
                    .components()
                    .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
            {
                return Err(src.invalid(
                    p.span(),
                    &at("read_only"),
                    format!("names {:?}: give an absolute directory other than `/`, without `.` or `..`", p.get_ref()),
                ));
            }
            read_only.push(path);
        }
    }
    let mut degrade = BTreeSet::new();
    if let Some(list) = &raw.degrade {
        for name in list.get_ref() {
            let layer = name
                .get_ref()
                .parse::<Layer>()
                .map_err(|reason| src.invalid(name.span(), &at("degrade"), reason))?;
            degrade.insert(layer);
        }
    }
    let mut limits = Limits {
        cpu_secs: DEFAULT_CPU_SECS,
        ..Limits::default()
    };
    let checks = [
        (
            "memory_mb",
            &raw.memory_mb,
            MIN_MEMORY_BYTES / MIB,
            u64::MAX / MIB,
        ),
        ("pids", &raw.pids, MIN_PIDS, u64::MAX),
        ("cpu_secs", &raw.cpu_secs, 1, u64::MAX),
    ];
    for (field, value, min, max) in checks {
        let Some(v) = value else { continue };
        let n = *v.get_ref();
        if n < min || n > max {
            return Err(src.invalid(
                v.span(),
                &at(field),
                format!(
                    "is {n}; it must be at least {min}{}",
                    if n > max { " and fit a byte count" } else { "" }
                ),
            ));
        }
        match field {
            "memory_mb" => limits.memory_bytes = n * MIB,
            "pids" => limits.pids = n,
            _ => limits.cpu_secs = n,
        }
    }
    Ok(StdioConfig {
        command,
        env,
        network: raw.network.as_ref().is_some_and(|n| *n.get_ref()),
        workspace: raw
            .workspace
            .as_ref()
            .map(|w| *w.get_ref())
            .unwrap_or_default(),
        read_only,
        limits,
        degrade,
    })
}

fn http(
    src: &Source<'_>,
    key: &str,
    raw: &RawServer,
    url: &Spanned<String>,
) -> Result<HttpConfig, ConfigError> {
    let transport = "stdio (`command`)";
    only_for(src, key, "env", &raw.env, transport)?;
    only_for(src, key, "network", &raw.network, transport)?;
    only_for(src, key, "workspace", &raw.workspace, transport)?;
    only_for(src, key, "read_only", &raw.read_only, transport)?;
    only_for(src, key, "memory_mb", &raw.memory_mb, transport)?;
    only_for(src, key, "pids", &raw.pids, transport)?;
    only_for(src, key, "cpu_secs", &raw.cpu_secs, transport)?;
    only_for(src, key, "degrade", &raw.degrade, transport)?;
    let at = format!("{key}.url");
    let text = url.get_ref();
    let parsed = reqwest::Url::parse(text)
        .map_err(|e| src.invalid(url.span(), &at, format!("is not a URL: {e}")))?;
    match parsed.scheme() {
        "https" => {}
        "http" if is_loopback(&parsed) => {}
        "http" => {
            return Err(src.invalid(
                url.span(),
                &at,
                "is plain http to a host that is not this machine: calls (and a token) would cross the network in the clear; use https",
            ));
        }
        other => {
            return Err(src.invalid(
                url.span(),
                &at,
                format!("has the scheme `{other}`; use http (loopback only) or https"),
            ));
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(src.invalid(
            url.span(),
            &at,
            "carries credentials: a secret does not belong in config.toml; use bearer_token_env",
        ));
    }
    let bearer_token_env = match &raw.bearer_token_env {
        Some(v) if !is_env_name(v.get_ref()) => {
            return Err(src.invalid(
                v.span(),
                &format!("{key}.bearer_token_env"),
                format!(
                    "names `{}`, which is not an environment variable name (A-Z, 0-9, _)",
                    v.get_ref()
                ),
            ));
        }
        Some(v) => Some(v.get_ref().clone()),
        None => None,
    };
    Ok(HttpConfig {
        url: text.clone(),
        bearer_token_env,
    })
}

fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpConfig, String> {
        parse_section(&Source::new(text, Path::new("/h/config.toml"))).map_err(|e| e.to_string())
    }

    #[test]
    fn absent_is_no_server() {
        assert_eq!(parse("").expect("parses"), McpConfig::default());
        assert_eq!(parse("[mcp]\n").expect("parses"), McpConfig::default());
    }

    #[test]
    fn every_key_is_read() {
        let c = parse(
            "[mcp.servers.fs]\ncommand = [\"node\", \"fs.js\", \".\"]\ntools = [\"read_*\", \"list\"]\n\
             risk = \"high\"\ntool_risk = { list = \"low\" }\ntimeout_secs = 5\nstartup_timeout_secs = 7\n\
             env = [\"FS_TOKEN\"]\nnetwork = true\nworkspace = \"write\"\nread_only = [\"/opt/mcp\"]\n\
             memory_mb = 64\npids = 32\ncpu_secs = 9\ndegrade = [\"cgroup-memory\"]\n\n\
             [mcp.servers.web]\nurl = \"https://mcp.example.com/mcp\"\ntools = [\"*\"]\nbearer_token_env = \"WEB_TOKEN\"\n",
        )
        .expect("parses");
        assert_eq!(c.servers.len(), 2);
        let fs = c.server("fs").expect("fs");
        assert_eq!(fs.risk, Risk::High);
        assert_eq!(fs.risk_of("list"), Risk::Low);
        assert_eq!(fs.risk_of("read_file"), Risk::High);
        assert!(fs.allows("read_file") && fs.allows("list") && !fs.allows("write_file"));
        assert_eq!(fs.timeout, Duration::from_secs(5));
        assert_eq!(fs.startup_timeout, Duration::from_secs(7));
        let Transport::Stdio(s) = &fs.transport else {
            panic!("stdio")
        };
        assert_eq!(s.command, ["node", "fs.js", "."]);
        assert_eq!(s.env, ["FS_TOKEN"]);
        assert!(s.network);
        assert_eq!(s.workspace, WorkspaceAccess::Write);
        assert_eq!(s.read_only, [PathBuf::from("/opt/mcp")]);
        assert_eq!(s.limits.memory_bytes, 64 << 20);
        assert_eq!(s.limits.pids, 32);
        assert_eq!(s.limits.cpu_secs, 9);
        assert_eq!(s.degrade, BTreeSet::from([Layer::CgroupMemory]));
        let web = c.server("web").expect("web");
        assert_eq!(web.risk, Risk::Medium, "medium by default");
        assert_eq!(web.timeout, DEFAULT_TIMEOUT);
        let Transport::Http(h) = &web.transport else {
            panic!("http")
        };
        assert_eq!(h.bearer_token_env.as_deref(), Some("WEB_TOKEN"));
        // Defaults of a stdio server: nothing but what it needs.
        let c = parse("[mcp.servers.a]\ncommand = [\"x\"]\ntools = []\n").expect("parses");
        let Transport::Stdio(s) = &c.servers[0].transport else {
            panic!("stdio")
        };
        assert!(!s.network && s.env.is_empty() && s.read_only.is_empty() && s.degrade.is_empty());
        assert_eq!(s.workspace, WorkspaceAccess::None);
        assert_eq!(s.limits.cpu_secs, DEFAULT_CPU_SECS);
        assert!(!c.servers[0].allows("anything"));
    }

    #[test]
    fn every_bad_value_names_the_key_and_line() {
        let srv = "[mcp.servers.s]\n";
        let cmd = "command = [\"x\"]\ntools = [\"*\"]\n";
        let url = "url = \"https://h/mcp\"\ntools = [\"*\"]\n";
        let cases: Vec<(String, &[&str])> = vec![
            (
                format!("{srv}tools = []\n"),
                &["config.toml:1", "mcp.servers.s", "command", "url"],
            ),
            (
                format!("{srv}command = [\"x\"]\n"),
                &[
                    "config.toml:1",
                    "mcp.servers.s.tools",
                    "required",
                    "pincer mcp tools s",
                ],
            ),
            (
                format!("{srv}command = [\"x\"]\nurl = \"https://h\"\ntools = []\n"),
                &["config.toml:3", "mcp.servers.s.url", "both"],
            ),
            (
                format!("{srv}command = []\ntools = []\n"),
                &["config.toml:2", "mcp.servers.s.command", "empty"],
            ),
            (
                format!("{srv}command = [\"\"]\ntools = []\n"),
                &["config.toml:2", "mcp.servers.s.command[0]"],
            ),
            (
                "[mcp.servers.Bad_Name]\ncommand = [\"x\"]\ntools = []\n".into(),
                &["config.toml:1", "mcp.servers.Bad_Name", "lowercase"],
            ),
            (
                format!(
                    "[mcp.servers.{}]\ncommand = [\"x\"]\ntools = []\n",
                    "a".repeat(30)
                ),
                &["at most 24"],
            ),
            (format!("{srv}{cmd}tools2 = 1\n"), &["tools2"]),
            (format!("{srv}{cmd}risk = \"severe\"\n"), &["severe"]),
            (
                format!("{srv}{cmd}tool_risk = {{ x = \"nope\" }}\n"),
                &["nope"],
            ),
            (
                format!("{srv}{cmd}timeout_secs = 0\n"),
                &["config.toml:4", "mcp.servers.s.timeout_secs", "from 1"],
            ),
            (
                format!("{srv}{cmd}startup_timeout_secs = 100000\n"),
                &["config.toml:4", "startup_timeout_secs"],
            ),
            (
                format!("{srv}{cmd}env = [\"lower\"]\n"),
                &["config.toml:4", "mcp.servers.s.env", "lower"],
            ),
            (
                format!("{srv}{cmd}env = [\"HOME\"]\n"),
                &["config.toml:4", "mcp.servers.s.env", "sets itself"],
            ),
            (
                format!("{srv}{cmd}read_only = [\"rel/dir\"]\n"),
                &["config.toml:4", "mcp.servers.s.read_only", "absolute"],
            ),
            (
                format!("{srv}{cmd}read_only = [\"/\"]\n"),
                &["config.toml:4", "read_only"],
            ),
            (
                format!("{srv}{cmd}read_only = [\"/opt/../etc\"]\n"),
                &["config.toml:4", "read_only"],
            ),
            (format!("{srv}{cmd}workspace = \"all\"\n"), &["all"]),
            (
                format!("{srv}{cmd}memory_mb = 1\n"),
                &["config.toml:4", "mcp.servers.s.memory_mb", "at least 16"],
            ),
            (
                format!("{srv}{cmd}pids = 1\n"),
                &["config.toml:4", "mcp.servers.s.pids", "at least 8"],
            ),
            (
                format!("{srv}{cmd}degrade = [\"landlok\"]\n"),
                &["config.toml:4", "mcp.servers.s.degrade", "landlock-fs"],
            ),
            (format!("{srv}{cmd}tools = [\"[\"]\n"), &["tools"]),
            (
                format!("{srv}{cmd}bearer_token_env = \"T\"\n"),
                &["config.toml:4", "mcp.servers.s.bearer_token_env", "http"],
            ),
            (
                format!("{srv}{url}env = [\"A\"]\n"),
                &["config.toml:4", "mcp.servers.s.env", "stdio"],
            ),
            (
                format!("{srv}{url}network = true\n"),
                &["config.toml:4", "mcp.servers.s.network", "stdio"],
            ),
            (
                format!("{srv}{url}workspace = \"read\"\n"),
                &["config.toml:4", "mcp.servers.s.workspace", "stdio"],
            ),
            (
                format!("{srv}url = \"ftp://h/mcp\"\ntools = []\n"),
                &["config.toml:2", "mcp.servers.s.url", "ftp"],
            ),
            (
                format!("{srv}url = \"not a url\"\ntools = []\n"),
                &["config.toml:2", "mcp.servers.s.url", "not a URL"],
            ),
            (
                format!("{srv}url = \"http://example.com/mcp\"\ntools = []\n"),
                &["config.toml:2", "mcp.servers.s.url", "https"],
            ),
            (
                format!("{srv}url = \"https://u:p@h/mcp\"\ntools = []\n"),
                &["config.toml:2", "credentials"],
            ),
            (
                format!("{srv}{url}bearer_token_env = \"lower\"\n"),
                &["config.toml:4", "bearer_token_env"],
            ),
            ("[mcp]\nserver = {}\n".into(), &["server"]),
        ];
        for (text, needles) in cases {
            let e = parse(&text).expect_err(&text);
            for n in needles {
                assert!(e.contains(n), "{text:?}: `{e}` should contain `{n}`");
            }
        }
        // Loopback over plain http is fine.
        for ok in [
            "http://127.0.0.1:9/mcp",
            "http://localhost:9/mcp",
            "http://[::1]:9/mcp",
        ] {
            parse(&format!("{srv}url = \"{ok}\"\ntools = []\n")).expect(ok);
        }
    }

    #[test]
    fn the_example_parses_once_uncommented() {
        let uncommented: String = EXAMPLE_TOML
            .lines()
            .filter(|l| l.starts_with("# ") && !l.starts_with("#  ") && !l.starts_with("# #"))
            .map(|l| {
                let l = &l[2..];
                let l = l.split(" #").next().unwrap_or(l).trim_end();
                format!("{l}\n")
            })
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .collect();
        let c = parse(&uncommented).expect(&uncommented);
        let s = c.server("everything").expect("the example server");
        assert_eq!(s.risk_of("echo"), Risk::Low);
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
        assert_eq!(s.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        let Transport::Stdio(st) = &s.transport else {
            panic!("stdio")
        };
        assert_eq!(st.limits.cpu_secs, DEFAULT_CPU_SECS);
        assert_eq!(st.limits.memory_bytes, Limits::default().memory_bytes);
    }
}
