//! MCP servers for every front-end (feature `mcp`): the `[mcp]` section
//! (validated by `pincer-mcp`), the sandbox a stdio server gets (the
//! shell's helper, with pincer's state hidden the same way), the servers
//! started with the runtime and their tools added to the agent's, what
//! `doctor` reports of each server, and a person's `pincer mcp call`,
//! recorded as `mcp.call` / `mcp.result` under the person's actor.
//!
//! Built without the feature, a config with an `[mcp]` table is refused
//! (naming the feature), never silently ignored.

use crate::{Env, Settings};
use pincer_core::config::{ConfigError, Source};
use pincer_core::home::Home;
use pincer_core::tool::Tool;
use pincer_tools::Workspace;
use serde::Serialize;
use std::sync::Arc;

/// The top-level key of the section.
pub const SECTION: &str = "mcp";

/// What the servers add to a runtime: their tools, and what a person must
/// be told at start (a server that did not start, a tool that is not
/// offered although the config names it).
#[derive(Default)]
pub struct Started {
    pub tools: Vec<Arc<dyn Tool>>,
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("Started")
            .field("tools", &names)
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// One server in `doctor`'s report.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub transport: &'static str,
    /// The program (stdio) or the URL (http).
    pub target: String,
    /// `configured` (status: not started), `ok` or `error` (doctor).
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The allowlist.
    pub tools: Vec<String>,
    pub risk: &'static str,
    /// stdio: the network on; workspace access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<&'static str>,
    /// doctor: what the server said it is, the protocol, the start time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<u64>,
    /// doctor: the tools offered to the agent, and those listed but not.
    pub offered: Vec<String>,
    pub not_offered: Vec<NotOffered>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NotOffered {
    pub tool: String,
    pub why: String,
}

#[cfg(feature = "mcp")]
pub use on::*;

#[cfg(not(feature = "mcp"))]
pub use off::*;

#[cfg(feature = "mcp")]
mod on {
    use super::*;
    use crate::RuntimeError;
    use pincer_core::audit::Audit;
    use pincer_core::audit::schema::{CallStatus, McpCall, McpResult, Outcome};
    use pincer_core::text::one_line;
    use pincer_mcp::{Launch, ListedTool, McpConfig, Server, ServerConfig, Transport};
    use serde_json::Value;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    /// `[mcp]`, validated.
    pub type McpSettings = McpConfig;

    /// The `[mcp]` text `pincer init` writes.
    pub const EXAMPLE_TOML: &str = pincer_mcp::config::EXAMPLE_TOML;

    pub fn parse_section(src: &Source<'_>) -> Result<McpSettings, ConfigError> {
        pincer_mcp::config::parse_section(src)
    }

    /// Whether any server is configured.
    pub fn configured(settings: &Settings) -> bool {
        !settings.mcp.servers.is_empty()
    }

    /// What a stdio server gets from this runtime: pincer's own binary as
    /// the sandbox helper, the agent's id, the workspace, pincer's state
    /// hidden as from the shell, PATH and the locale, and the values of
    /// the variables the config names.
    pub fn launch(home: &Home, settings: &Settings, env: &Env, ws: &Workspace) -> Launch {
        let shell = crate::tools::shell_sandbox(home, settings, ws);
        let mut hide: Vec<PathBuf> = ws
            .protected_paths()
            .into_iter()
            .map(PathBuf::from)
            .collect();
        hide.extend(shell.hide);
        let text = |v: &std::ffi::OsStr| v.to_str().map(str::to_string);
        let mut base_env = BTreeMap::new();
        for (k, v) in [
            ("PATH", Some(&env.shell.path)),
            ("LANG", env.shell.lang.as_ref()),
            ("LC_ALL", env.shell.lc_all.as_ref()),
        ] {
            if let Some(v) = v.and_then(|v| text(v)) {
                base_env.insert(k.to_string(), v);
            }
        }
        let mut vars = BTreeMap::new();
        for s in &settings.mcp.servers {
            let names: Vec<&String> = match &s.transport {
                Transport::Stdio(c) => c.env.iter().collect(),
                Transport::Http(h) => h.bearer_token_env.iter().collect(),
            };
            for n in names {
                if let Some(v) = env.var(n) {
                    vars.insert(n.clone(), v.to_string());
                }
            }
        }
        Launch {
            sandbox: shell.sandbox,
            agent: settings.core.agent.agent_id.clone(),
            workspace: ws.root().to_path_buf(),
            hide,
            base_env,
            vars,
            // Scratch directories of servers without the workspace: the
            // system's temporary directory (the sandbox keeps them visible
            // under its private /tmp).
            scratch_root: PathBuf::from("/tmp"),
        }
    }

    /// Starts every configured server at once; the tools of those that
    /// started, and a warning for each that did not (the agent starts
    /// anyway, without them).
    pub async fn start(
        home: &Home,
        settings: &Settings,
        env: &Env,
        ws: &Workspace,
        audit: Arc<Audit>,
    ) -> Started {
        let mut out = Started::default();
        if !configured(settings) {
            return out;
        }
        let launch = Arc::new(launch(home, settings, env, ws));
        for (cfg, started) in start_all(&settings.mcp, &launch, Some(audit)).await {
            match started {
                Ok(server) => {
                    out.warnings
                        .extend(allowlist_warnings(&cfg, server.listed()));
                    if let Some(t) = &server.facts().truncated {
                        out.warnings
                            .push(format!("mcp: server `{}`: {t}", cfg.name));
                    }
                    out.tools.extend(pincer_mcp::tools_of(&server));
                }
                Err(e) => out
                    .warnings
                    .push(format!("mcp: {e}; its tools are not offered")),
            }
        }
        out
    }

    async fn start_all(
        cfg: &McpConfig,
        launch: &Arc<Launch>,
        audit: Option<Arc<Audit>>,
    ) -> Vec<(ServerConfig, Result<Arc<Server>, pincer_mcp::McpError>)> {
        let mut set = tokio::task::JoinSet::new();
        for (i, s) in cfg.servers.iter().enumerate() {
            let (s, launch, audit) = (s.clone(), launch.clone(), audit.clone());
            set.spawn(async move { (i, s.clone(), Server::start(s, launch, audit).await) });
        }
        let mut done = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok(v) => done.push(v),
                Err(e) => tracing::warn!("an mcp server's start panicked: {e}"),
            }
        }
        done.sort_by_key(|(i, _, _)| *i);
        done.into_iter().map(|(_, c, r)| (c, r)).collect()
    }

    /// An allowlist entry naming a tool exactly that is not offered: the
    /// server does not list it, or pincer cannot use it.
    fn allowlist_warnings(cfg: &ServerConfig, listed: &[ListedTool]) -> Vec<String> {
        let mut out = Vec::new();
        for pattern in cfg.tools.iter().filter(|p| !p.contains(['*', '?'])) {
            match listed.iter().find(|t| &t.name == pattern) {
                None => out.push(format!(
                    "mcp: server `{}` does not list the tool `{pattern}` that [mcp.servers.{}] tools names",
                    cfg.name, cfg.name
                )),
                Some(t) if !t.offered => out.push(format!(
                    "mcp: server `{}`: tool `{pattern}` is not offered: {}",
                    cfg.name,
                    t.not_offered.as_deref().unwrap_or("unusable")
                )),
                Some(_) => {}
            }
        }
        out
    }

    fn base_status(s: &ServerConfig) -> ServerStatus {
        let (target, network, workspace) = match &s.transport {
            Transport::Stdio(c) => (
                c.command.first().cloned().unwrap_or_default(),
                Some(c.network),
                Some(c.workspace.as_str()),
            ),
            Transport::Http(h) => (h.url.clone(), None, None),
        };
        ServerStatus {
            name: s.name.clone(),
            transport: s.transport.as_str(),
            target,
            state: "configured",
            error: None,
            tools: s.tools.clone(),
            risk: s.risk.as_str(),
            network,
            workspace,
            server: None,
            protocol: None,
            start_ms: None,
            offered: Vec::new(),
            not_offered: Vec::new(),
        }
    }

    fn status_of(s: &ServerConfig, server: &Server) -> ServerStatus {
        let facts = server.facts();
        let mut st = base_status(s);
        st.state = "ok";
        st.server = Some(facts.server.clone());
        st.protocol = Some(facts.protocol.clone());
        st.start_ms = Some(facts.start_ms);
        for t in server.listed() {
            match (&t.exposed, t.offered) {
                (Some(name), true) => st.offered.push(name.clone()),
                _ => st.not_offered.push(NotOffered {
                    tool: one_line(&t.name, 80),
                    why: t.not_offered.clone().unwrap_or_default(),
                }),
            }
        }
        st
    }

    /// Each configured server for `doctor` (`start`: started, listed and
    /// stopped again; otherwise the config only). A server that does not
    /// start is an error; an allowlisted tool it does not offer, a
    /// warning.
    pub async fn report(
        home: &Home,
        settings: &Settings,
        env: &Env,
        start: bool,
        errors: &mut Vec<String>,
        warnings: &mut Vec<String>,
    ) -> Vec<ServerStatus> {
        if !start || !configured(settings) {
            return settings.mcp.servers.iter().map(base_status).collect();
        }
        let ws = match crate::tools::workspace_dir(home, settings, env, None)
            .and_then(|d| crate::tools::open_workspace(home, &d))
        {
            Ok(ws) => ws,
            // Reported under `workspace`.
            Err(_) => return settings.mcp.servers.iter().map(base_status).collect(),
        };
        let launch = Arc::new(launch(home, settings, env, &ws));
        let mut out = Vec::new();
        for (cfg, started) in start_all(&settings.mcp, &launch, None).await {
            match started {
                Ok(server) => {
                    warnings.extend(allowlist_warnings(&cfg, server.listed()));
                    out.push(status_of(&cfg, &server));
                    server.shutdown().await;
                }
                Err(e) => {
                    errors.push(e.to_string());
                    let mut st = base_status(&cfg);
                    st.state = "error";
                    st.error = Some(e.to_string());
                    out.push(st);
                }
            }
        }
        out
    }

    /// A server started for a person (`pincer mcp tools|call`).
    pub async fn start_one(
        home: &Home,
        settings: &Settings,
        env: &Env,
        name: &str,
    ) -> Result<Arc<Server>, RuntimeError> {
        let Some(cfg) = settings.mcp.server(name) else {
            let names: Vec<&str> = settings
                .mcp
                .servers
                .iter()
                .map(|s| s.name.as_str())
                .collect();
            return Err(RuntimeError::Mcp(format!(
                "no [mcp.servers.{name}] in the config (configured: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        let dir = crate::tools::workspace_dir(home, settings, env, None)?;
        let ws = crate::tools::open_workspace(home, &dir)?;
        let launch = Arc::new(launch(home, settings, env, &ws));
        Server::start(cfg.clone(), launch, None)
            .await
            .map_err(|e| RuntimeError::Mcp(e.to_string()))
    }

    /// Every configured server, started: its status (for `pincer mcp list`).
    pub async fn list(home: &Home, settings: &Settings, env: &Env) -> Vec<ServerStatus> {
        let (mut errors, mut warnings) = (Vec::new(), Vec::new());
        report(home, settings, env, true, &mut errors, &mut warnings).await
    }

    /// What a person's call produced.
    #[derive(Debug)]
    pub struct PersonCall {
        /// The result as the model would read it, or the error.
        pub outcome: Result<String, String>,
        /// The arguments were refused (nothing was sent).
        pub invalid: bool,
        /// The audit seq of the `mcp.call` entry.
        pub seq: u64,
    }

    /// Records a person's call that was refused before anything was sent
    /// (`mcp.call`, decision `invalid`): arguments that are not JSON, a
    /// tool the server does not list, arguments that do not fit.
    pub fn record_invalid(
        audit: &Audit,
        settings: &Settings,
        principal: &str,
        server: &str,
        tool: &str,
        arguments: Value,
        error: &str,
    ) -> Result<u64, RuntimeError> {
        let cfg = settings.mcp.server(server);
        let entry = McpCall {
            server: server.to_string(),
            tool: tool.to_string(),
            arguments,
            risk: cfg.map_or(pincer_core::policy::Risk::Medium, |c| c.risk_of(tool)),
            offered: false,
            decision: Outcome::Invalid,
            error: Some(error.to_string()),
        };
        Ok(audit.record(principal, &entry)?.seq)
    }

    /// A person calls `tool` of `server` with `args`: checked against the
    /// tool's input schema (bad arguments are recorded as `invalid` and
    /// nothing is sent), recorded (`mcp.call`) before it is sent, its
    /// outcome recorded (`mcp.result`). Not gated: a person at the command
    /// line is recorded, not asked; any tool the server lists may be
    /// called. The outer error is the trail's or the server's start.
    pub async fn person_call(
        audit: &Audit,
        server: &Server,
        principal: &str,
        tool: &str,
        args: &Value,
    ) -> Result<PersonCall, RuntimeError> {
        let listed = server.tool(tool);
        let mut entry = McpCall {
            server: server.name().to_string(),
            tool: tool.to_string(),
            arguments: args.clone(),
            risk: server.config().risk_of(tool),
            offered: listed.is_some_and(|t| t.offered),
            decision: Outcome::Allowed,
            error: None,
        };
        let problem = match (listed, server.schema(tool)) {
            (None, _) => Some(format!(
                "mcp server `{}` lists no tool `{}` (see `pincer mcp tools {}`)",
                server.name(),
                one_line(tool, 80),
                server.name()
            )),
            (Some(t), None) => Some(format!(
                "the tool cannot be called: {}",
                t.not_offered
                    .as_deref()
                    .unwrap_or("its input schema is unusable")
            )),
            (Some(_), Some(schema)) => schema.check(args).err(),
        };
        if let Some(p) = problem {
            entry.decision = Outcome::Invalid;
            entry.error = Some(p.clone());
            let r = audit.record(principal, &entry)?;
            return Ok(PersonCall {
                outcome: Err(p),
                invalid: true,
                seq: r.seq,
            });
        }
        let receipt = audit.record(principal, &entry)?;
        let result = server.call(tool, args.clone()).await;
        let (status, outcome, notes) = match result {
            Ok(out) if out.is_error => (
                CallStatus::Error,
                Err(format!("the server says the call failed: {}", out.text)),
                out.notes,
            ),
            Ok(out) => (CallStatus::Ok, Ok(out.text), out.notes),
            Err(e) => (CallStatus::Error, Err(e.to_string()), Vec::new()),
        };
        audit.record(
            principal,
            &McpResult {
                server: server.name().to_string(),
                tool: tool.to_string(),
                status,
                result_bytes: outcome.as_ref().ok().map(String::len),
                error: outcome
                    .as_ref()
                    .err()
                    .map(|e| pincer_core::text::cut(e, 400)),
                notes,
            },
        )?;
        Ok(PersonCall {
            outcome,
            invalid: false,
            seq: receipt.seq,
        })
    }

    /// Tools as `policy explain` judges them without starting anything:
    /// one for every tool an allowlist names exactly, with its configured
    /// risk (its arguments are checked against the server's schema only
    /// once the server runs).
    pub fn planned_tools(settings: &Settings) -> Vec<Arc<dyn Tool>> {
        pincer_mcp::planned_tools(&settings.mcp)
    }
}

#[cfg(not(feature = "mcp"))]
mod off {
    use super::*;

    /// `[mcp]` in a build without MCP: nothing.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
    pub struct McpSettings {}

    pub const EXAMPLE_TOML: &str = "";

    /// An `[mcp]` table is refused: this build would ignore it.
    pub fn parse_section(src: &Source<'_>) -> Result<McpSettings, ConfigError> {
        if pincer_core::config::locate(src.text, SECTION).is_some() {
            return Err(src.invalid_at(
                SECTION,
                "configures MCP servers, but this pincer was built without MCP (cargo feature `mcp`)",
            ));
        }
        Ok(McpSettings {})
    }

    pub fn configured(_: &Settings) -> bool {
        false
    }

    pub async fn start(
        _: &Home,
        _: &Settings,
        _: &Env,
        _: &Workspace,
        _: Arc<pincer_core::audit::Audit>,
    ) -> Started {
        Started::default()
    }

    pub async fn report(
        _: &Home,
        _: &Settings,
        _: &Env,
        _: bool,
        _: &mut Vec<String>,
        _: &mut Vec<String>,
    ) -> Vec<ServerStatus> {
        Vec::new()
    }

    pub fn planned_tools(_: &Settings) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use crate::Settings;
    use std::path::Path;

    const ONE: &str = "[mcp.servers.s]\ncommand = [\"/bin/true\"]\ntools = [\"echo\"]\n";

    #[cfg(feature = "mcp")]
    #[test]
    fn the_section_is_read_and_checked_with_its_line() {
        let s = Settings::parse(ONE, Path::new("/h/config.toml")).expect("parses");
        assert_eq!(s.mcp.servers.len(), 1);
        let e = Settings::parse(
            "[session]\nfsync = \"turn\"\n[mcp.servers.s]\ncommand = [\"x\"]\n",
            Path::new("/h/config.toml"),
        )
        .expect_err("no tools");
        let e = e.to_string();
        assert!(
            e.contains("config.toml:3") && e.contains("mcp.servers.s.tools"),
            "{e}"
        );
        // `policy explain` judges an allowlisted tool without starting it.
        let planned = super::planned_tools(&s);
        assert_eq!(
            planned.iter().map(|t| t.name()).collect::<Vec<_>>(),
            ["s__echo"]
        );
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn a_server_is_launched_with_pincers_state_hidden() {
        let tmp = tempfile::tempdir().expect("tmp");
        let home = pincer_core::home::Home::new(tmp.path().join("home"));
        home.ensure().expect("home");
        let ws_dir = tmp.path().join("ws");
        std::fs::create_dir_all(&ws_dir).expect("ws");
        let ws = crate::tools::open_workspace(&home, &ws_dir).expect("workspace");
        let settings = Settings::parse(ONE, Path::new("x")).expect("parses");
        let env = crate::Env::from_vars([("PATH", "/usr/bin:/bin"), ("SECRET_KEY", "k")]);
        let l = super::launch(&home, &settings, &env, &ws);
        assert!(l.hide.iter().any(|h| h == home.root()), "{:?}", l.hide);
        assert_eq!(
            l.base_env.get("PATH").map(String::as_str),
            Some("/usr/bin:/bin")
        );
        assert!(
            l.vars.is_empty(),
            "only the variables a server names: {:?}",
            l.vars
        );
        assert_eq!(l.workspace, ws.root());
    }

    #[cfg(not(feature = "mcp"))]
    #[test]
    fn without_the_feature_an_mcp_table_is_refused() {
        let e = Settings::parse(ONE, Path::new("/h/config.toml")).expect_err("refused");
        let e = e.to_string();
        assert!(
            e.contains("config.toml:1") && e.contains("feature `mcp`"),
            "{e}"
        );
        Settings::parse("[session]\nfsync = \"turn\"\n", Path::new("x")).expect("no [mcp]: fine");
    }
}
