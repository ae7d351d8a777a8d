//! What pincer would use, what is wrong and what is degraded, as one
//! [`Report`]: `pincer doctor` renders all of it, `pincer status` its
//! first screen, and every other front-end that reports status (the
//! gateway) reads the same function. Errors (the agent cannot start, the
//! trail is damaged, the workspace is unusable…) and warnings (a degraded
//! layer, a deny pattern that matches nothing) are kept apart, each a
//! sentence a person can act on.
//!
//! The JSON shape is pincer's own: a part that could not be read is
//! `{"error": "…"}` in place of its fields, never a language's `Ok`/`Err`.

use crate::{Env, Settings};
use pincer_core::home::Home;
use pincer_providers::config::ProviderKind;
use pincer_providers::{Check, ProbeReport};
use pincer_sandbox::Layer;
use pincer_tools::{NetworkMode, SandboxMode};
use serde::Serialize;
use std::time::Duration;

/// A part of the report, or why it could not be read.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Part<T> {
    Ok(T),
    Err { error: String },
}

impl<T> Part<T> {
    fn of<E: std::fmt::Display>(r: Result<T, E>) -> Part<T> {
        match r {
            Ok(v) => Part::Ok(v),
            Err(e) => Part::Err {
                error: e.to_string(),
            },
        }
    }

    pub fn ok(&self) -> Option<&T> {
        match self {
            Part::Ok(v) => Some(v),
            Part::Err { .. } => None,
        }
    }
}

/// How much the report asks of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// No request leaves the machine but the zero-config probe of local
    /// ports (`pincer status`).
    Quick,
    /// Configured providers are probed too (`pincer doctor`).
    Full,
}

#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub path: String,
    pub found: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Workspace {
    pub path: String,
    /// How paths are resolved beneath it (`openat2` or the component walk).
    pub resolution: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct HookStatus {
    pub name: String,
    pub kind: String,
    pub program: String,
    /// The program exists and may be executed (an absolute path, or a bare
    /// name found in the hooks' PATH).
    pub runnable: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Policy {
    pub autonomy: &'static str,
    pub fsync: &'static str,
    pub approval_timeout_secs: u64,
    pub deny_tools: Vec<String>,
    pub deny_commands: Vec<String>,
    pub hooks: Vec<HookStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AuditState {
    /// True when the chain verifies.
    pub intact: bool,
    pub entries: u64,
    /// The first defect, in words, with its seq.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defect: Option<String>,
    /// Bytes of an interrupted append the next one repairs.
    pub torn_tail_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    /// `fts5`, or `scan` in a build without the index.
    pub search: &'static str,
    pub pages: usize,
    pub pinned: usize,
    pub unreadable: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Hardware {
    pub board: String,
    /// `env`, `config`, `device_tree`, `unknown_device_tree` or
    /// `no_device_tree`.
    pub detected_from: String,
    /// Whether the agent is offered the hardware tools.
    pub agent_tools: bool,
}

/// The `web_fetch` tool as configured.
#[derive(Debug, Clone, Serialize)]
pub struct WebFetch {
    /// Offered to the agent: `[web_fetch] allow_domains` names a domain.
    pub offered: bool,
    pub allow_domains: Vec<String>,
    /// Addresses let through the SSRF refusals.
    pub allow_addresses: Vec<String>,
}

impl WebFetch {
    fn of(settings: &Settings, warnings: &mut Vec<String>) -> WebFetch {
        let cfg = &settings.web_fetch;
        let allow_addresses: Vec<String> =
            cfg.allow_addresses.iter().map(|c| c.to_string()).collect();
        if cfg.enabled() && !allow_addresses.is_empty() {
            warnings.push(format!(
                "web_fetch: [web_fetch] allow_addresses lets the agent reach {} on allowed domains, \
                 addresses refused by default (loopback, private, link-local)",
                allow_addresses.join(", ")
            ));
        }
        WebFetch {
            offered: cfg.enabled(),
            allow_domains: cfg.allow_domains.clone(),
            allow_addresses,
        }
    }
}

/// One layer of the OS sandbox on this machine.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxLayer {
    pub layer: Layer,
    /// The machine offers it (static checks: nothing is run).
    pub available: bool,
    /// `[shell] degrade` lets it be missing.
    pub may_degrade: bool,
    pub detail: String,
}

/// The shell tool and its sandbox.
#[derive(Debug, Clone, Serialize)]
pub struct Sandbox {
    /// `[shell] sandbox`: on, or off (commands unsandboxed).
    pub mode: SandboxMode,
    /// The shell a `command` runs with.
    pub program: String,
    /// Whether the agent is offered the shell tool.
    pub offered: bool,
    /// `[shell] network`.
    pub network: NetworkMode,
    /// pincer runs as root (no user namespace needed).
    pub root: bool,
    /// The Landlock ABI the kernel offers (static probe).
    pub landlock_abi: Option<u32>,
    /// The cgroup hierarchies used: v1, v2, v1+v2 or none.
    pub cgroup: &'static str,
    pub layers: Vec<SandboxLayer>,
    /// `doctor` only: `true` run in the sandbox over the workspace, and what
    /// every layer was in that run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Part<Vec<pincer_sandbox::LayerStatus>>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProviderStatus {
    pub name: String,
    pub kind: &'static str,
    pub base_url: String,
    pub model: String,
    /// The variable named by `api_key_env`, and whether it is set (never
    /// its value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_set: Option<bool>,
    /// A local OpenAI-compatible server's `/health` and `/models`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeReport>,
    /// An Anthropic endpoint's `/v1/models` with the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reach: Option<Check>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentProvider {
    /// How the providers were chosen, in words.
    pub how: String,
    /// What zero-config detection found on this machine, if it probed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detected: Option<ProbeReport>,
}

/// A part of the report that a front-end above the runtime adds (the
/// Claude Code adapter's hook points): the binary that includes the
/// front-end asks it and calls [`Report::add_front_end`], so every
/// renderer of the report (`doctor`, `status`, a gateway) shows the same.
#[derive(Debug, Clone, Serialize)]
pub struct FrontEnd {
    /// Its name (`claude_code`).
    pub name: &'static str,
    /// One line for the text report.
    pub summary: String,
    /// Its own fields, for `--json`.
    pub detail: serde_json::Value,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub version: &'static str,
    /// No errors.
    pub ok: bool,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    pub home: String,
    pub config: Config,
    pub workspace: Part<Workspace>,
    pub policy: Policy,
    pub sessions: Part<usize>,
    pub approvals_waiting: Part<usize>,
    pub audit: Part<AuditState>,
    pub memory: Part<Memory>,
    pub hardware: Part<Hardware>,
    pub web_fetch: WebFetch,
    /// The shell tool and the OS sandbox it runs commands in.
    pub sandbox: Part<Sandbox>,
    /// What `pincer agent` would use now.
    pub agent_provider: Part<AgentProvider>,
    pub providers: Vec<ProviderStatus>,
    pub skills: Vec<String>,
    /// What the front-ends built into this binary report.
    pub front_ends: Vec<FrontEnd>,
    /// Each configured MCP server: as configured (`status`), or started,
    /// with its tools (`doctor`).
    pub mcp: Vec<crate::mcp::ServerStatus>,
}

impl Report {
    /// Adds a front-end's part with its errors and warnings.
    pub fn add_front_end(&mut self, part: FrontEnd, errors: Vec<String>, warnings: Vec<String>) {
        self.errors.extend(errors);
        self.warnings.extend(warnings);
        self.ok = self.errors.is_empty();
        self.front_ends.push(part);
    }

    /// The first screen (`pincer status`): the same values, fewer parts.
    pub fn status(&self) -> serde_json::Value {
        serde_json::json!({
            "version": self.version,
            "ok": self.ok,
            "errors": self.errors,
            "warnings": self.warnings,
            "agent_provider": self.agent_provider,
            "policy": {"autonomy": self.policy.autonomy},
            "workspace": self.workspace,
            "sessions": self.sessions,
            "approvals_waiting": self.approvals_waiting,
            "audit": self.audit,
            "memory": self.memory,
            "hardware": self.hardware,
            "web_fetch": self.web_fetch,
            "sandbox": self.sandbox,
            "front_ends": self.front_ends,
            "mcp": self.mcp,
        })
    }
}

fn is_local(url: &str) -> bool {
    url.starts_with("http://127.")
        || url.starts_with("http://localhost")
        || url.starts_with("http://[::1]")
}

/// Builds the report. Nothing here writes anything.
pub async fn report(home: &Home, settings: &Settings, env: &Env, depth: Depth) -> Report {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    // The same choice `pincer agent` makes, built the same way, so a
    // missing key shows here as it would there.
    let choice = crate::providers::choose(settings, env, None).await;
    let agent_provider = Part::of(choice.and_then(|c| {
        crate::providers::build(&c, env).map(|_| AgentProvider {
            how: c.how,
            detected: c.probe,
        })
    }));
    if let Part::Err { error } = &agent_provider {
        errors.push(format!("the agent cannot start: {error}"));
    }
    let providers = providers(settings, env, depth, &mut errors).await;
    if !pincer_providers::TLS {
        warnings.push(format!("providers: {}", pincer_providers::NO_TLS));
    }
    let workspace = workspace(home, settings, env, &mut errors, &mut warnings);
    let policy = policy(settings, env, &mut errors);
    deny_patterns(home, settings, env, &mut warnings);
    let audit = audit(home, &mut errors);
    let approvals_waiting = Part::of(
        pincer_core::approvals::ApprovalQueue::open(&home.approvals_dir())
            .and_then(|q| q.list())
            .map(|l| l.pending.len()),
    );
    if let Part::Err { error } = &approvals_waiting {
        errors.push(format!("approvals: {error}"));
    }
    let sessions = Part::of(
        pincer_core::session::SessionStore::open(home.sessions_dir(), settings.core.session.fsync)
            .and_then(|s| s.list())
            .map(|l| l.len()),
    );
    let sandbox = sandbox(home, settings, env, depth, &mut errors, &mut warnings).await;
    let memory = memory(home, &mut errors, &mut warnings);
    let hardware = hardware(settings, env, &mut errors, &mut warnings);
    let web_fetch = WebFetch::of(settings, &mut warnings);
    let mcp = crate::mcp::report(
        home,
        settings,
        env,
        depth == Depth::Full,
        &mut errors,
        &mut warnings,
    )
    .await;
    let skills = match pincer_core::skills::load(&home.skills_dir()) {
        Ok((skills, problems)) => {
            for p in problems {
                warnings.push(format!(
                    "skill {} not loaded: {}",
                    p.path.display(),
                    p.reason
                ));
            }
            skills.into_iter().map(|s| s.name).collect()
        }
        Err(e) => {
            errors.push(format!("skills: {}: {e}", home.skills_dir().display()));
            Vec::new()
        }
    };
    Report {
        version: env!("CARGO_PKG_VERSION"),
        ok: errors.is_empty(),
        errors,
        warnings,
        home: home.root().display().to_string(),
        config: Config {
            path: settings.path.display().to_string(),
            found: settings.found,
        },
        workspace,
        policy,
        sessions,
        approvals_waiting,
        audit,
        memory,
        hardware,
        web_fetch,
        sandbox,
        agent_provider,
        providers,
        skills,
        front_ends: Vec::new(),
        mcp,
    }
}

async fn providers(
    settings: &Settings,
    env: &Env,
    depth: Depth,
    errors: &mut Vec<String>,
) -> Vec<ProviderStatus> {
    let mut out = Vec::new();
    for p in &settings.providers {
        let key = p.api_key_env.as_deref().and_then(|k| env.var(k));
        let (probe, reach) = match (depth, p.kind) {
            (Depth::Full, ProviderKind::Openai) if is_local(&p.base_url) => (
                Some(pincer_providers::probe(&p.base_url, Duration::from_secs(2)).await),
                None,
            ),
            (Depth::Full, ProviderKind::Anthropic) => match key {
                Some(k) => (
                    None,
                    Some(
                        pincer_providers::probe_anthropic(&p.base_url, k, Duration::from_secs(5))
                            .await,
                    ),
                ),
                None => (None, None),
            },
            _ => (None, None),
        };
        if let Some(c) = &reach
            && !c.ok
        {
            errors.push(format!(
                "provider `{}` does not answer at {}: {}",
                p.name,
                c.url,
                c.error.as_deref().unwrap_or("no answer")
            ));
        }
        out.push(ProviderStatus {
            name: p.name.clone(),
            kind: p.kind.as_str(),
            base_url: p.base_url.clone(),
            model: p.model.clone(),
            api_key_env: p.api_key_env.clone(),
            api_key_set: p.api_key_env.as_ref().map(|_| key.is_some()),
            probe,
            reach,
        });
    }
    out
}

fn workspace(
    home: &Home,
    settings: &Settings,
    env: &Env,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Part<Workspace> {
    let ws = crate::tools::workspace_dir(home, settings, env, None)
        .and_then(|d| crate::tools::open_workspace(home, &d));
    match ws {
        Ok(ws) => {
            warnings.extend(crate::tools::old_workspace_warning(home, ws.root()));
            if ws.resolution_mode() != pincer_tools::ResolutionMode::Openat2 {
                warnings.push(format!("file tools: {}", ws.resolution_mode().as_str()));
            }
            Part::Ok(Workspace {
                path: ws.root().display().to_string(),
                resolution: ws.resolution_mode().as_str().to_string(),
            })
        }
        Err(e) => {
            errors.push(format!("workspace: {e}"));
            Part::of(Err(e))
        }
    }
}

/// The configured hooks, each checked for a program that can run: a hook
/// whose command does not exist would otherwise fail only when a tool is
/// called.
fn policy(settings: &Settings, env: &Env, errors: &mut Vec<String>) -> Policy {
    let p = &settings.core.policy;
    let hooks = settings
        .core
        .hooks
        .iter()
        .map(|h| {
            let program = h.command.first().cloned().unwrap_or_default();
            let runnable = crate::gate::hook_program(&program, env).is_some();
            if !runnable {
                errors.push(format!(
                    "hook `{}`: its program `{program}` is not an executable file (nor in the hooks' PATH)",
                    h.name
                ));
            }
            HookStatus {
                name: h.name.clone(),
                kind: h.kind.as_str().to_string(),
                program,
                runnable,
            }
        })
        .collect();
    Policy {
        autonomy: p.autonomy.as_str(),
        fsync: settings.core.session.fsync.as_str(),
        approval_timeout_secs: p.approval_timeout_secs,
        deny_tools: p.deny_tools.clone(),
        deny_commands: p.deny_commands.clone(),
        hooks,
    }
}

/// A deny pattern that matches no tool is most likely a typo that protects
/// nothing.
fn deny_patterns(home: &Home, settings: &Settings, env: &Env, warnings: &mut Vec<String>) {
    let Ok(tools) = crate::tools::assessment_tools(home, settings, env) else {
        return;
    };
    for p in &settings.core.policy.deny_tools {
        if !tools
            .iter()
            .any(|t| pincer_core::glob::glob_match(p, t.name()))
        {
            warnings.push(format!(
                "policy: deny_tools pattern `{p}` matches no tool (a typo protects nothing)"
            ));
        }
    }
}

fn audit(home: &Home, errors: &mut Vec<String>) -> Part<AuditState> {
    let r = pincer_core::audit::Audit::open(&home.audit_dir()).and_then(|a| a.verify());
    match r {
        Ok(v) => {
            let defect = v
                .defect
                .as_ref()
                .map(|d| format!("{} at seq {}: {}", d.kind.as_str(), d.seq, d.detail));
            if let Some(d) = &defect {
                errors.push(format!(
                    "audit trail: {d}; run `pincer audit verify` (audited commands refuse to append)"
                ));
            }
            Part::Ok(AuditState {
                intact: v.defect.is_none(),
                entries: v.entries,
                defect,
                torn_tail_bytes: v.torn_tail_bytes,
            })
        }
        Err(e) => {
            errors.push(format!("audit trail: {e}"));
            Part::of(Err(e))
        }
    }
}

fn memory(home: &Home, errors: &mut Vec<String>, warnings: &mut Vec<String>) -> Part<Memory> {
    let search = if pincer_memory::fts5_available() {
        "fts5"
    } else {
        warnings.push(
            "memory: built without the SQLite FTS5 index (feature `fts5`); every search scans the page files"
                .to_string(),
        );
        "scan"
    };
    let r = pincer_memory::PageStore::open(home.memory_dir()).and_then(|s| s.list());
    match r {
        Ok((pages, problems)) => {
            if !problems.is_empty() {
                warnings.push(format!(
                    "memory: {} page(s) cannot be read: see `pincer memory list`",
                    problems.len()
                ));
            }
            Part::Ok(Memory {
                search,
                pinned: pages.iter().filter(|p| p.pinned).count(),
                pages: pages.len(),
                unreadable: problems.len(),
            })
        }
        Err(e) => {
            errors.push(format!("memory: {e}"));
            Part::of(Err(e))
        }
    }
}

fn hardware(
    settings: &Settings,
    env: &Env,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Part<Hardware> {
    use pincer_hw::DetectSource;
    match crate::tools::hardware(settings, env) {
        Ok(hw) => {
            let d = hw.detection();
            let from = match &d.source {
                DetectSource::Env { .. } => "env",
                DetectSource::Config { .. } => "config",
                DetectSource::DeviceTree { .. } => "device_tree",
                DetectSource::UnknownDeviceTree { .. } => "unknown_device_tree",
                DetectSource::NoDeviceTree => "no_device_tree",
            };
            if let DetectSource::UnknownDeviceTree { compatible } = &d.source {
                errors.push(format!(
                    "hardware: this board's device tree ({}) is not one pincer knows; its buses are not used. \
                     Set [hardware] board = \"sim\" for no hardware, or \"jetson\" / \"rpi\"",
                    compatible.join(", ")
                ));
            } else if let Some(w) = &d.warning {
                warnings.push(format!("hardware: {w}"));
            }
            let agent_tools = crate::tools::offers_hardware(&hw);
            if !agent_tools && matches!(d.source, DetectSource::NoDeviceTree) {
                warnings.push(
                    "hardware: no board detected, so the agent gets no hardware tools (set PINCER_BOARD=sim to try the simulated one)"
                        .to_string(),
                );
            }
            Part::Ok(Hardware {
                board: d.board.name.to_string(),
                detected_from: from.to_string(),
                agent_tools,
            })
        }
        Err(e) => {
            errors.push(format!("hardware: {e}"));
            Part::of(Err(e))
        }
    }
}

/// The shell tool as the agent would get it, the sandbox's layers on this
/// machine, and (`doctor`) a live run of `true` in that sandbox: a layer
/// that fails there means every command would be refused.
async fn sandbox(
    home: &Home,
    settings: &Settings,
    env: &Env,
    depth: Depth,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Part<Sandbox> {
    // A workspace that does not open is reported under `workspace`.
    let ws = match crate::tools::workspace_dir(home, settings, env, None)
        .and_then(|d| crate::tools::open_workspace(home, &d))
    {
        Ok(ws) => ws,
        Err(e) => return Part::of(Err(e)),
    };
    let shell = match crate::tools::shell(home, settings, env, ws.clone()) {
        Ok(s) => s,
        Err(e) => {
            errors.push(e.to_string());
            return Part::of(Err(e));
        }
    };
    warnings.extend(shell.warnings.iter().cloned());
    let cfg = &settings.shell;
    let sb = crate::tools::shell_sandbox(home, settings, &ws);
    let probe = sb.sandbox.probe();
    let live = match (depth, cfg.sandbox) {
        (Depth::Full, SandboxMode::On) if shell.offered => {
            let agent = &settings.core.agent.agent_id;
            let r = match sb.spec(&ws, "true", &[], agent, &env.shell, false) {
                Ok(spec) => {
                    let run = tokio::task::spawn_blocking(move || {
                        sb.sandbox
                            .run(&spec, &pincer_sandbox::RunOptions::default())
                    })
                    .await;
                    match run {
                        Ok(r) => r
                            .map(|c| c.finished.layers().to_vec())
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(format!("the check panicked: {e}")),
                    }
                }
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = &r {
                errors.push(format!(
                    "shell: the OS sandbox cannot run a command on this machine, so every shell call will be refused: {e}"
                ));
            }
            Some(Part::of(r))
        }
        _ => None,
    };
    Part::Ok(Sandbox {
        mode: cfg.sandbox,
        program: shell.tool.shell().path().display().to_string(),
        offered: shell.offered,
        network: cfg.network,
        root: probe.root,
        landlock_abi: probe.landlock_abi,
        cgroup: probe.cgroup_version,
        layers: probe
            .layers
            .iter()
            .map(|l| SandboxLayer {
                layer: l.layer,
                available: l.available,
                may_degrade: cfg.degrade.contains(&l.layer),
                detail: l.detail.clone(),
            })
            .collect(),
        live,
    })
}
