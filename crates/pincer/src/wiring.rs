//! Turning config + environment into live parts: the provider (with
//! zero-config detection), the workspace and the tools. Shared by `agent`,
//! `doctor` and the demo so they can never disagree (one fact, one source).

use crate::Ctx;
use anyhow::{Context, Result, bail};
use pincer_core::audit::Audit;
use pincer_core::config::{ProviderConfig, ProviderKind};
use pincer_core::gate::{Approver, Gate, GatePolicy};
use pincer_core::hooks::{ExternalHook, HookEnv, HookKind, HookSpec};
use pincer_core::provider::Provider;
use pincer_providers::{ProbeReport, detect_local};
use pincer_tools::{ShellEnv, ToolLimits, Workspace, kernel_tools_with_shell_env};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Environment read once at start-up and passed down. Its `Debug` never
/// prints a key.
#[derive(Clone, Default)]
pub struct Env {
    pub workspace: Option<PathBuf>,
    pub openai_key: Option<String>,
    pub openai_base_url: Option<String>,
    pub anthropic_key: Option<String>,
    pub anthropic_base_url: Option<String>,
    /// `PINCER_MODEL`: the model for a zero-config provider.
    pub model: Option<String>,
    /// Every variable a configured provider's `api_key_env` names.
    pub keys: Vec<(String, String)>,
    /// PATH and locale for the shell tool's cleared environment.
    pub shell: ShellEnv,
    /// PATH, HOME and LANG for external hooks' cleared environment.
    pub hooks: HookEnv,
    /// `PINCER_BOARD`: `sim`, `jetson`, `rpi` or `auto` (HW3).
    pub board: Option<String>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |k: &Option<String>| if k.is_some() { "<set>" } else { "<unset>" };
        f.debug_struct("Env")
            .field("workspace", &self.workspace)
            .field("openai_key", &set(&self.openai_key))
            .field("openai_base_url", &self.openai_base_url)
            .field("anthropic_key", &set(&self.anthropic_key))
            .field("anthropic_base_url", &self.anthropic_base_url)
            .field("model", &self.model)
            .field(
                "keys",
                &self.keys.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Env {
    pub fn read(ctx: &Ctx) -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let keys = ctx
            .config
            .providers
            .iter()
            .filter_map(|p| p.api_key_env.as_ref())
            .filter_map(|k| var(k).map(|v| (k.clone(), v)))
            .collect();
        Env {
            workspace: std::env::var_os("PINCER_WORKSPACE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            openai_key: var("OPENAI_API_KEY"),
            openai_base_url: var("OPENAI_BASE_URL"),
            anthropic_key: var("ANTHROPIC_API_KEY"),
            anthropic_base_url: var("ANTHROPIC_BASE_URL"),
            model: var("PINCER_MODEL"),
            keys,
            shell: ShellEnv::from_vars(std::env::vars_os()),
            hooks: HookEnv::from_vars(std::env::vars_os()),
            board: std::env::var("PINCER_BOARD").ok(),
        }
    }

    fn key_for(&self, cfg: &ProviderConfig) -> Option<String> {
        let name = cfg.api_key_env.as_ref()?;
        self.keys
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

/// The local servers zero-config looks for: Ollama, then llama-server.
pub const LOCAL_CANDIDATES: [&str; 2] = ["http://127.0.0.1:11434/v1", "http://127.0.0.1:8080/v1"];

/// Which provider(s) an agent will use and how that was decided.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderChoice {
    /// The providers in fallback order.
    pub chain: Vec<ProviderConfig>,
    /// How they were chosen, in words (printed by `agent` and `doctor`).
    pub how: String,
    /// The local server probe, when zero-config probed one.
    pub probe: Option<ProbeReport>,
}

const HOW_TO: &str = "no model provider is configured or detected. Either:
  - set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server),
  - set ANTHROPIC_API_KEY,
  - run a local server: Ollama (port 11434) or llama.cpp's llama-server (port 8080),
  - add [providers.NAME] tables and [agent] fallback_chain to config.toml (see `pincer init`),
  - or try `pincer demo`, which needs none of these.";

fn zero_config(
    name: &str,
    kind: ProviderKind,
    base_url: String,
    model: String,
    key_env: Option<&str>,
) -> ProviderConfig {
    ProviderConfig {
        name: name.to_string(),
        kind,
        base_url,
        model,
        api_key_env: key_env.map(str::to_string),
        headers: Default::default(),
        context_window: 8192,
        timeout_secs: 120,
        max_retries: 2,
        script: None,
    }
}

/// Decides the providers: `--provider NAME`, else `[agent] fallback_chain`,
/// else the only configured provider, else zero-config detection.
pub async fn choose_provider(ctx: &Ctx, env: &Env, only: Option<&str>) -> Result<ProviderChoice> {
    let cfg = &ctx.config;
    if let Some(name) = only {
        let p = cfg.provider(name).with_context(|| {
            let names: Vec<&str> = cfg.providers.iter().map(|p| p.name.as_str()).collect();
            format!(
                "--provider {name}: no [providers.{name}] in the config (configured: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )
        })?;
        return Ok(ProviderChoice {
            chain: vec![p.clone()],
            how: format!("--provider {name}"),
            probe: None,
        });
    }
    if !cfg.agent.fallback_chain.is_empty() {
        let chain = cfg
            .agent
            .fallback_chain
            .iter()
            .filter_map(|n| cfg.provider(n).cloned())
            .collect();
        return Ok(ProviderChoice {
            chain,
            how: format!("[agent] fallback_chain = {:?}", cfg.agent.fallback_chain),
            probe: None,
        });
    }
    if let [only] = cfg.providers.as_slice() {
        return Ok(ProviderChoice {
            chain: vec![only.clone()],
            how: format!("the only configured provider, `{}`", only.name),
            probe: None,
        });
    }
    if cfg.providers.len() > 1 {
        bail!(
            "several providers are configured but [agent] fallback_chain is empty: list them there in the order to try, or pass --provider NAME"
        );
    }
    let context_window = cfg.context.context_window;
    let choose = |mut p: ProviderConfig, how: String, probe| {
        p.context_window = context_window;
        Ok(ProviderChoice {
            chain: vec![p],
            how,
            probe,
        })
    };
    if env.openai_key.is_some() {
        let url = env
            .openai_base_url
            .clone()
            .unwrap_or_else(|| "https://api.openai.com/v1".into());
        let model = env.model.clone().unwrap_or_else(|| "gpt-4o-mini".into());
        let how = format!("OPENAI_API_KEY is set: OpenAI-compatible {url}, model {model}");
        return choose(
            zero_config(
                "openai",
                ProviderKind::Openai,
                url,
                model,
                Some("OPENAI_API_KEY"),
            ),
            how,
            None,
        );
    }
    if env.anthropic_key.is_some() {
        let url = env
            .anthropic_base_url
            .clone()
            .unwrap_or_else(|| "https://api.anthropic.com".into());
        let model = env
            .model
            .clone()
            .unwrap_or_else(|| "claude-sonnet-4-5".into());
        let how = format!("ANTHROPIC_API_KEY is set: Anthropic {url}, model {model}");
        return choose(
            zero_config(
                "anthropic",
                ProviderKind::Anthropic,
                url,
                model,
                Some("ANTHROPIC_API_KEY"),
            ),
            how,
            None,
        );
    }
    if let Some((url, report)) = detect_local(&LOCAL_CANDIDATES, Duration::from_millis(500)).await {
        let model = env
            .model
            .clone()
            .or_else(|| report.model_ids.first().cloned())
            .unwrap_or_else(|| "local".into());
        let how = format!("a local server answers at {url}: model {model}");
        return choose(
            zero_config("local", ProviderKind::Openai, url, model, None),
            how,
            Some(report),
        );
    }
    bail!("{HOW_TO}")
}

/// Builds the chosen providers (a router when there are several).
pub fn build_provider(choice: &ProviderChoice, env: &Env) -> Result<Arc<dyn Provider>> {
    let with_keys = |p: &ProviderConfig| {
        let key = match p.api_key_env.as_deref() {
            Some("OPENAI_API_KEY") if env.key_for(p).is_none() => env.openai_key.clone(),
            Some("ANTHROPIC_API_KEY") if env.key_for(p).is_none() => env.anthropic_key.clone(),
            _ => env.key_for(p),
        };
        if p.api_key_env.is_some() && key.is_none() {
            bail!(
                "provider `{}` reads its API key from ${}, which is not set",
                p.name,
                p.api_key_env.as_deref().unwrap_or_default()
            );
        }
        Ok(key)
    };
    // Even one provider goes through the router: it is what retries with
    // backoff and honours Retry-After (PR2).
    let parts = choice
        .chain
        .iter()
        .map(|p| Ok((p, with_keys(p)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(pincer_providers::build_router("fallback", parts)?))
}

/// The workspace directory: `--workspace`, `PINCER_WORKSPACE`, `[agent]
/// workspace`, else `PINCER_HOME/workspace`. Only the default is created: a
/// named directory must exist, so a typo is an error, not a new empty
/// workspace (and nothing is created before the overlap check).
pub fn workspace_dir(ctx: &Ctx, env: &Env, flag: Option<PathBuf>) -> Result<PathBuf> {
    let named = [
        (flag, "--workspace"),
        (env.workspace.clone(), "PINCER_WORKSPACE"),
        (ctx.config.agent.workspace.clone(), "[agent] workspace"),
    ]
    .into_iter()
    .find_map(|(dir, from)| dir.map(|d| (d, from)));
    match named {
        Some((dir, from)) => {
            if !dir.is_dir() {
                bail!(
                    "{from} names {}, which is not an existing directory",
                    dir.display()
                );
            }
            Ok(dir)
        }
        None => {
            let dir = ctx.home.root().join("workspace");
            pincer_core::fsutil::create_private_dir(&dir)
                .with_context(|| format!("cannot create the workspace {}", dir.display()))?;
            Ok(dir)
        }
    }
}

/// Opens the workspace, refusing one that overlaps pincer's own state.
pub fn open_workspace(ctx: &Ctx, dir: &std::path::Path) -> Result<Arc<Workspace>> {
    let home = ctx.home.root();
    // approvals/ above all: a tool that could write there could approve
    // its own calls.
    let protected = [
        "sessions",
        "audit",
        "approvals",
        "memory",
        "keys",
        "skills",
        "config.toml",
    ]
    .iter()
    .map(|p| home.join(p))
    .collect();
    Ok(Arc::new(Workspace::open(dir, protected)?))
}

/// The agent's tools over the workspace (`flag`, `PINCER_WORKSPACE`, the
/// config, or the default), with the configured shell deny list.
pub fn tools_for(
    ctx: &Ctx,
    env: &Env,
    flag: Option<PathBuf>,
) -> Result<Vec<Arc<dyn pincer_core::tool::Tool>>> {
    let dir = workspace_dir(ctx, env, flag)?;
    let ws = open_workspace(ctx, &dir)?;
    every_tool(ctx, env, ws, false)
}

/// The kernel, memory and hardware tools over `ws`. `fallback_board`: offer
/// the hardware tools even when the board is only the no-device-tree
/// fallback (to judge calls, never to run them for an agent).
fn every_tool(
    ctx: &Ctx,
    env: &Env,
    ws: Arc<Workspace>,
    fallback_board: bool,
) -> Result<Vec<Arc<dyn pincer_core::tool::Tool>>> {
    let mut tools = kernel_tools_with_shell_env(
        ws,
        &ToolLimits::default(),
        &ctx.config.agent.agent_id,
        env.shell.clone(),
        &ctx.config.policy.deny_commands,
    );
    tools.extend(memory_tools(ctx));
    tools.extend(hardware_tools(ctx, env, fallback_board)?);
    Ok(tools)
}

/// The board (HW3: `PINCER_BOARD`, else `[hardware] board`, else the
/// device tree; no device tree is the simulated board) and its buses,
/// opened lazily. A bad `[hardware]` table is an error naming the field.
pub fn hardware(ctx: &Ctx, env: &Env) -> Result<Arc<pincer_hw::Hardware>> {
    let cfg = pincer_hw::HardwareConfig::from_toml(ctx.config.hardware.as_ref())
        .with_context(|| format!("{}", ctx.home.config_path().display()))?;
    let detection = pincer_hw::detect(
        env.board.as_deref(),
        &cfg.board,
        std::path::Path::new(pincer_hw::DEVICE_TREE_COMPATIBLE),
    )?;
    Ok(Arc::new(pincer_hw::Hardware::open(&cfg, detection)?))
}

/// The seven hardware tools (HW4) over [`hardware`]; pictures go to
/// PINCER_HOME/camera. A board chosen only because there is no device tree
/// we know (a server, a laptop) gives the agent no hardware tools: a model
/// must not take simulated sensors for the room's. `PINCER_BOARD=sim` or
/// `[hardware] board = "sim"` offers the simulated board on purpose.
fn hardware_tools(
    ctx: &Ctx,
    env: &Env,
    fallback_too: bool,
) -> Result<Vec<Arc<dyn pincer_core::tool::Tool>>> {
    let hw = hardware(ctx, env)?;
    if !fallback_too
        && matches!(
            hw.detection().source,
            pincer_hw::DetectSource::NoDeviceTree
                | pincer_hw::DetectSource::UnknownDeviceTree { .. }
        )
    {
        return Ok(Vec::new());
    }
    Ok(pincer_tools::hw::hardware_tools(
        hw,
        ctx.home.root().join("camera"),
    ))
}

/// `memory_search` and `memory_write` over PINCER_HOME/memory.
fn memory_tools(ctx: &Ctx) -> Vec<Arc<dyn pincer_core::tool::Tool>> {
    let shared: pincer_tools::SharedMemory = Arc::new(pincer_tools::LazyMemory::new(
        ctx.home.root().join("memory"),
    ));
    vec![
        Arc::new(pincer_tools::MemorySearch::new(shared.clone())),
        Arc::new(pincer_tools::MemoryWrite::new(
            shared,
            &ctx.config.agent.agent_id,
        )),
    ]
}

/// The agent's tools over a scratch workspace (the system temp directory),
/// for assessing calls without running them (`pincer policy explain`).
pub fn assess_only_tools(ctx: &Ctx, env: &Env) -> Result<Vec<Arc<dyn pincer_core::tool::Tool>>> {
    let ws = Arc::new(Workspace::open(&std::env::temp_dir(), Vec::new())?);
    // Judging a call needs the tool, whichever board was found.
    every_tool(ctx, env, ws, true)
}

/// The audit trail under PINCER_HOME.
pub fn open_audit(ctx: &Ctx) -> Result<Arc<Audit>> {
    let dir = ctx.home.audit_dir();
    let audit = Audit::open(&dir)
        .with_context(|| format!("cannot open the audit trail in {}", dir.display()))?;
    Ok(Arc::new(audit))
}

/// The gate from the config: policy, deny lists, `[[hooks]]`, and
/// `approver` for approvals no approval hook answers. Records the config
/// load (and a policy change since the last load) in the trail first.
pub fn gate(
    ctx: &Ctx,
    env: &Env,
    audit: Arc<Audit>,
    approver: Arc<dyn Approver>,
    actor: &str,
) -> Result<Gate> {
    record_config_load(ctx, &audit)?;
    let cfg = &ctx.config;
    let policy = GatePolicy {
        autonomy: cfg.policy.autonomy,
        approval_timeout: Duration::from_secs(cfg.policy.approval_timeout_secs),
        deny_tools: cfg.policy.deny_tools.clone(),
    };
    let mut gate = Gate::new(policy, actor, audit, approver);
    for h in &cfg.hooks {
        let spec = HookSpec {
            name: h.name.clone(),
            kind: h.kind,
            command: h.command.clone(),
            tools: h.tools.clone(),
            timeout: Duration::from_millis(h.timeout_ms),
        };
        spec.validate()
            .with_context(|| format!("{}: hook `{}`", ctx.home.config_path().display(), h.name))?;
        let hook = Arc::new(ExternalHook::new(spec).with_env(env.hooks.clone()));
        gate = match h.kind {
            HookKind::Interceptor => gate.with_interceptor(hook),
            HookKind::Observer => gate.with_observer(hook),
            HookKind::Approval => gate.with_approval_hook(h.tools.clone(), hook),
        };
    }
    Ok(gate)
}

/// The part of the config that decides what the agent may do.
fn policy_fingerprint(ctx: &Ctx) -> serde_json::Value {
    let cfg = &ctx.config;
    serde_json::json!({
        "autonomy": cfg.policy.autonomy,
        "approval_timeout_secs": cfg.policy.approval_timeout_secs,
        "deny_tools": cfg.policy.deny_tools,
        "deny_commands": cfg.policy.deny_commands,
        "hooks": cfg.hooks,
    })
}

/// A `config.load` entry (file, its hash, the policy in force), and a
/// `policy.change` entry when the policy differs from the last load's.
pub fn record_config_load(ctx: &Ctx, audit: &Audit) -> Result<()> {
    let path = ctx.home.config_path();
    let sha256 = match std::fs::read(&path) {
        Ok(bytes) => Some(pincer_core::canonical::sha256_hex(&bytes)),
        Err(_) => None,
    };
    let policy = policy_fingerprint(ctx);
    let before = audit
        .log(Some(1), Some("config.load"))?
        .pop()
        .map(|e| e.data["policy"].clone());
    audit.append(
        "system",
        "config.load",
        serde_json::json!({
            "path": path.display().to_string(),
            "found": ctx.config_found,
            "sha256": sha256,
            "policy": policy,
        }),
    )?;
    if let Some(before) = before
        && before != policy
    {
        audit.append(
            "system",
            "policy.change",
            serde_json::json!({ "before": before, "after": policy }),
        )?;
    }
    Ok(())
}
