//! The agent's workspace and tools: one assembly for every front-end, so
//! `pincer agent`, `policy explain`, `doctor`, the demo and a gateway can
//! never disagree about what a tool may touch.

use crate::{Env, RuntimeError, Settings};
use pincer_core::home::Home;
use pincer_core::tool::Tool;
use pincer_hw::{DetectSource, Hardware};
use pincer_sandbox::Layer;
use pincer_tools::{
    NetworkMode, SandboxMode, ShellChoice, ShellProgram, ShellSandbox, ShellTool, ToolLimits,
    Workspace, file_tools,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the workspace came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkspaceFrom {
    Flag,
    EnvVar,
    Config,
    Default,
}

impl WorkspaceFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceFrom::Flag => "--workspace",
            WorkspaceFrom::EnvVar => "PINCER_WORKSPACE",
            WorkspaceFrom::Config => "[agent] workspace",
            WorkspaceFrom::Default => "the default",
        }
    }
}

/// The workspace directory: `--workspace`, `PINCER_WORKSPACE`, `[agent]
/// workspace`, else the default beside the home
/// ([`Home::default_workspace`]). Only the default is created: a
/// named directory must exist, so a typo is an error, not a new empty
/// workspace (and nothing is created before the overlap check).
pub fn workspace_dir(
    home: &Home,
    settings: &Settings,
    env: &Env,
    flag: Option<&Path>,
) -> Result<PathBuf, RuntimeError> {
    let named = [
        (flag.map(Path::to_path_buf), WorkspaceFrom::Flag),
        (env.workspace.clone(), WorkspaceFrom::EnvVar),
        (settings.core.agent.workspace.clone(), WorkspaceFrom::Config),
    ]
    .into_iter()
    .find_map(|(dir, from)| dir.map(|d| (d, from)));
    match named {
        Some((dir, from)) => {
            if !dir.is_dir() {
                return Err(RuntimeError::NoWorkspace {
                    from: from.as_str(),
                    dir,
                });
            }
            Ok(dir)
        }
        None => default_workspace(home),
    }
}

/// Creates (if missing) and returns the default workspace beside the home.
fn default_workspace(home: &Home) -> Result<PathBuf, RuntimeError> {
    let dir = home.default_workspace();
    pincer_core::fsutil::create_private_dir(&dir).map_err(|source| {
        RuntimeError::DefaultWorkspace {
            dir: dir.clone(),
            source,
        }
    })?;
    Ok(dir)
}

/// A warning when `PINCER_HOME/workspace`, where the default workspace was
/// before it moved beside the home, still exists and is not the workspace
/// in use: files there are not lost, but the agent no longer sees them.
pub fn old_workspace_warning(home: &Home, in_use: &Path) -> Option<String> {
    let old = home.old_workspace();
    (old.is_dir() && old != in_use).then(|| {
        format!(
            "workspace: {} was the default workspace before it moved out of PINCER_HOME; \
             the agent now uses {}. Move what you keep there, then remove it",
            old.display(),
            in_use.display()
        )
    })
}

/// Opens the workspace at `dir` with every protected path of the home
/// (pincer's own state), refusing one that overlaps them.
pub fn open_workspace(home: &Home, dir: &Path) -> Result<Arc<Workspace>, RuntimeError> {
    Ok(Arc::new(Workspace::open(dir, home.protected())?))
}

/// The board (`PINCER_BOARD`, else `[hardware] board`, else the device
/// tree; none is the simulated board) and its buses, opened lazily.
pub fn hardware(settings: &Settings, env: &Env) -> Result<Arc<Hardware>, RuntimeError> {
    let tree = env
        .device_tree
        .as_deref()
        .unwrap_or(Path::new(pincer_hw::DEVICE_TREE_COMPATIBLE));
    let detection = pincer_hw::detect(env.board.as_deref(), &settings.hardware.board, tree)?;
    Ok(Arc::new(Hardware::open(&settings.hardware, detection)?))
}

/// Whether the agent is offered the hardware tools on `hw`: not when the
/// board is only the fallback for a machine with no device tree we know (a
/// server, a laptop): a model must not take simulated sensors for the
/// room's. `PINCER_BOARD=sim` or `[hardware] board = "sim"` offers the
/// simulated board on purpose.
pub fn offers_hardware(hw: &Hardware) -> bool {
    !matches!(
        hw.detection().source,
        DetectSource::NoDeviceTree | DetectSource::UnknownDeviceTree { .. }
    )
}

/// The sandbox the agent's shell runs its commands in (and `pincer exec`
/// runs one command in): pincer's own binary as the helper, the limits and
/// degradable layers of `[shell]`, and all of `PINCER_HOME` hidden when the
/// workspace is outside it (inside it, each protected path is hidden on
/// its own, and Landlock denies the rest).
pub fn shell_sandbox(home: &Home, settings: &Settings, ws: &Workspace) -> ShellSandbox {
    let cfg = &settings.shell;
    let mut hide = Vec::new();
    if !ws.root().starts_with(home.root()) {
        hide.push(home.root().to_path_buf());
    }
    ShellSandbox {
        limits: cfg.limits.clone(),
        degrade: cfg.degrade.clone(),
        hide,
        ..ShellSandbox::default()
    }
}

/// The agent's shell tool on this machine, and what a person must be told
/// about it at every start.
#[derive(Debug)]
pub struct Shell {
    /// The tool as configured (the assessment tools hold it even when the
    /// agent is not offered it: judging a call needs the tool).
    pub tool: ShellTool,
    /// Whether the agent gets it.
    pub offered: bool,
    /// Said at every start, in `doctor` and in `status`.
    pub warnings: Vec<String>,
}

/// The layers `sandbox` cannot apply on this machine that a run with the
/// network on (`network`) requires, and that `degrade` does not allow to
/// be missing: each with the probe's reason.
pub fn missing_layers(
    probe: &pincer_sandbox::Probe,
    degrade: &std::collections::BTreeSet<Layer>,
    network: bool,
) -> Vec<(Layer, String)> {
    let mut spec = pincer_sandbox::Spec::new(vec!["true".into()], "/", "pincer");
    spec.network = network;
    probe
        .layers
        .iter()
        .filter(|l| !l.available && l.layer.required(&spec, probe.root))
        .filter(|l| !degrade.contains(&l.layer))
        .map(|l| (l.layer, l.detail.clone()))
        .collect()
}

/// Builds the shell tool from `[shell]`: the program (a configured one
/// must exist; the default dash, when missing, only leaves the agent
/// without a shell), the sandbox or the explicit unsandboxed opt-in, and
/// whether the agent is offered it — not when a layer it needs is missing
/// here and the config does not let that layer degrade. Nothing here falls
/// back to running unsandboxed.
pub fn shell(
    home: &Home,
    settings: &Settings,
    env: &Env,
    ws: Arc<Workspace>,
) -> Result<Shell, RuntimeError> {
    shell_on(home, settings, env, ws, |sb| sb.probe())
}

/// [`shell`] on the machine `probe` describes.
fn shell_on(
    home: &Home,
    settings: &Settings,
    env: &Env,
    ws: Arc<Workspace>,
    probe: impl FnOnce(&pincer_sandbox::Sandbox) -> pincer_sandbox::Probe,
) -> Result<Shell, RuntimeError> {
    let cfg = &settings.shell;
    let program = match cfg.program {
        Some(ShellChoice::Bash) => ShellProgram::bash(),
        Some(ShellChoice::Dash) | None => ShellProgram::dash(),
    };
    let mut warnings = Vec::new();
    let mut offered = true;
    if !program.path().is_file() {
        if cfg.program.is_some() {
            return Err(RuntimeError::ShellProgram {
                path: program.path().to_path_buf(),
            });
        }
        offered = false;
        warnings.push(format!(
            "shell: not offered to the agent: {} is missing on this machine (install dash, or set [shell] program = \"bash\")",
            program.path().display()
        ));
    }
    let sandbox = shell_sandbox(home, settings, &ws);
    let base = ShellTool::new(
        ws.clone(),
        &ToolLimits::default(),
        &settings.core.agent.agent_id,
        env.shell.clone(),
    )
    .with_shell(program)
    .with_deny_commands(settings.core.policy.deny_commands.clone());
    let tool = match cfg.sandbox {
        SandboxMode::Off => {
            warnings.push(
                "shell: commands run WITHOUT the OS sandbox ([shell] sandbox = \"off\"), with pincer's own access to this machine: its config, audit trail, approvals and keys"
                    .to_string(),
            );
            base.unsandboxed()
        }
        SandboxMode::On => {
            // A spec the sandbox would refuse (pincer's state inside a
            // read-only system directory, a workspace of `/`) would refuse
            // every command: say so now, not at the first call.
            let check = sandbox
                .spec(
                    &ws,
                    "true",
                    &[],
                    &settings.core.agent.agent_id,
                    &env.shell,
                    false,
                )
                .map_err(|e| e.to_string())
                .and_then(|spec| spec.validate().map_err(|e| e.to_string()));
            if let Err(e) = check {
                offered = false;
                warnings.push(format!(
                    "shell: not offered to the agent: the OS sandbox cannot be set up for this workspace and PINCER_HOME: {e}"
                ));
            }
            let probe = probe(&sandbox.sandbox);
            let missing = missing_layers(&probe, &cfg.degrade, false);
            if !missing.is_empty() {
                offered = false;
                let list: Vec<String> = missing
                    .iter()
                    .map(|(l, why)| format!("{l} ({why})"))
                    .collect();
                warnings.push(format!(
                    "shell: not offered to the agent: the OS sandbox cannot be built here, missing {}. \
                     Run `pincer sandbox check`; allow a layer to be missing with [shell] degrade, or \
                     run commands unsandboxed with [shell] sandbox = \"off\" (not recommended)",
                    list.join(", ")
                ));
            }
            for l in probe
                .layers
                .iter()
                .filter(|l| !l.available && cfg.degrade.contains(&l.layer))
            {
                warnings.push(format!(
                    "shell: sandbox layer {} is missing on this machine ({}) and degrades ([shell] degrade): commands run without it",
                    l.layer, l.detail
                ));
            }
            if cfg.network == NetworkMode::Ask && missing.is_empty() {
                let net = missing_layers(&probe, &cfg.degrade, true);
                if !net.is_empty() {
                    let list: Vec<String> = net.iter().map(|(l, _)| l.to_string()).collect();
                    warnings.push(format!(
                        "shell: a call asking for the network will not run here: missing {}",
                        list.join(", ")
                    ));
                }
            }
            base.with_sandbox(sandbox).with_network(cfg.network)
        }
    };
    Ok(Shell {
        tool,
        offered,
        warnings,
    })
}

/// The agent's tools, and what a person must be told about them.
pub struct Tools {
    pub tools: Vec<Arc<dyn Tool>>,
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("Tools")
            .field("tools", &names)
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// The agent's tools over `ws`: file tools, shell (when offered), memory,
/// `web_fetch` when `[web_fetch] allow_domains` names a domain, and the
/// hardware tools when `hw` is given.
pub fn agent_tools(
    home: &Home,
    settings: &Settings,
    env: &Env,
    ws: Arc<Workspace>,
    hw: Option<Arc<Hardware>>,
) -> Result<Tools, RuntimeError> {
    let shell = shell(home, settings, env, ws.clone())?;
    let offered = shell.offered.then_some(shell.tool);
    Ok(Tools {
        tools: assemble(home, settings, ws, offered, hw),
        warnings: shell.warnings,
    })
}

/// The file tools, the shell when given, memory, `web_fetch` when on, the
/// hardware tools when given: in the order the model sees them.
fn assemble(
    home: &Home,
    settings: &Settings,
    ws: Arc<Workspace>,
    shell: Option<ShellTool>,
    hw: Option<Arc<Hardware>>,
) -> Vec<Arc<dyn Tool>> {
    let agent = &settings.core.agent;
    let mut tools = file_tools(ws, &ToolLimits::default());
    if let Some(shell) = shell {
        tools.push(Arc::new(shell));
    }
    let memory: pincer_tools::SharedMemory =
        Arc::new(pincer_tools::LazyMemory::new(home.memory_dir()));
    tools.push(Arc::new(pincer_tools::MemorySearch::new(memory.clone())));
    tools.push(Arc::new(pincer_tools::MemoryWrite::new(
        memory,
        &agent.agent_id,
    )));
    // Off (not offered, not even described to the model) with no domain.
    #[cfg(feature = "web")]
    if settings.web_fetch.enabled() {
        tools.push(Arc::new(pincer_tools::WebFetch::new(
            settings.web_fetch.clone(),
        )));
    }
    if let Some(hw) = hw {
        tools.extend(pincer_tools::hw::hardware_tools(hw, home.camera_dir()));
    }
    tools
}

/// The tools as the agent would get them, for judging calls without
/// running them (`pincer policy explain`, `doctor`): the same protected
/// paths, over the real workspace when it opens, else over the home's
/// default one (a misconfigured workspace must not stop an explanation);
/// the hardware tools whichever board was found, the shell whether or
/// not this machine can sandbox it (judging a call needs the tool), and
/// the MCP tools the config names exactly.
pub fn assessment_tools(
    home: &Home,
    settings: &Settings,
    env: &Env,
) -> Result<Vec<Arc<dyn Tool>>, RuntimeError> {
    let ws =
        match workspace_dir(home, settings, env, None).and_then(|dir| open_workspace(home, &dir)) {
            Ok(ws) => ws,
            Err(_) => open_workspace(home, &default_workspace(home)?)?,
        };
    let hw = hardware(settings, env)?;
    let shell = shell(home, settings, env, ws.clone())?;
    let mut tools = assemble(home, settings, ws, Some(shell.tool), Some(hw));
    // MCP tools the config names exactly, judged without starting servers.
    tools.extend(crate::mcp::planned_tools(settings));
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// This machine's probe with `layer` made unavailable.
    fn without(layer: Layer) -> pincer_sandbox::Probe {
        let mut p = pincer_sandbox::Sandbox::current_exe().probe();
        for l in &mut p.layers {
            if l.layer == layer {
                l.available = false;
                l.detail = "not in this kernel".into();
            }
        }
        p
    }

    #[test]
    fn a_missing_required_layer_keeps_the_shell_from_the_agent_unless_it_may_degrade() {
        let none = BTreeSet::new();
        let missing = missing_layers(&without(Layer::LandlockFs), &none, false);
        assert_eq!(
            missing,
            [(Layer::LandlockFs, "not in this kernel".to_string())]
        );
        let may = BTreeSet::from([Layer::LandlockFs]);
        assert!(missing_layers(&without(Layer::LandlockFs), &may, false).is_empty());
        // A second line of defence is not required.
        assert!(missing_layers(&without(Layer::LandlockNet), &none, false).is_empty());
        // The scope is required only with the network on.
        assert!(missing_layers(&without(Layer::LandlockScope), &none, false).is_empty());
        assert_eq!(
            missing_layers(&without(Layer::LandlockScope), &none, true).len(),
            1
        );
    }

    /// The runtime's decision on such a machine: no shell for the agent,
    /// and a warning naming the layer and the ways out; allowed to degrade,
    /// the shell is offered and the warning says it runs without the layer.
    #[test]
    fn on_a_machine_without_landlock_the_agent_gets_no_shell() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = Home::new(tmp.path().join("home"));
        let mut settings = Settings::defaults(&home.config_path());
        let ws = open_workspace(&home, &default_workspace(&home).expect("ws")).expect("open");
        let env = Env::default();
        let s = shell_on(&home, &settings, &env, ws.clone(), |_| {
            without(Layer::LandlockFs)
        })
        .expect("shell");
        assert!(!s.offered);
        let w = s.warnings.join("\n");
        assert!(
            w.contains("not offered") && w.contains("landlock-fs"),
            "{w}"
        );
        assert!(
            w.contains("degrade") && w.contains("sandbox = \"off\""),
            "{w}"
        );
        let tools = assemble(
            &home,
            &settings,
            ws.clone(),
            s.offered.then_some(s.tool),
            None,
        );
        assert!(tools.iter().all(|t| t.name() != "shell"));
        settings.shell.degrade.insert(Layer::LandlockFs);
        let s =
            shell_on(&home, &settings, &env, ws, |_| without(Layer::LandlockFs)).expect("shell");
        assert!(s.offered && s.tool.is_sandboxed());
        let w = s.warnings.join("\n");
        assert!(w.contains("landlock-fs") && w.contains("degrades"), "{w}");
    }

    /// `web_fetch` is not offered (not even described to the model) until
    /// `[web_fetch] allow_domains` names a domain.
    #[test]
    #[cfg(feature = "web")]
    fn web_fetch_is_offered_only_with_an_allowed_domain() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = Home::new(tmp.path().join("home"));
        let ws = open_workspace(&home, &default_workspace(&home).expect("ws")).expect("open");
        let off = Settings::defaults(&home.config_path());
        let names = |s: &Settings| -> Vec<String> {
            assemble(&home, s, ws.clone(), None, None)
                .iter()
                .map(|t| t.name().to_string())
                .collect()
        };
        assert!(!names(&off).iter().any(|n| n == "web_fetch"));
        let on = Settings::parse(
            "[web_fetch]\nallow_domains = [\"example.com\"]\n",
            &home.config_path(),
        )
        .expect("config");
        assert!(names(&on).iter().any(|n| n == "web_fetch"));
    }

    /// A workspace the sandbox cannot use (under `/dev`, which it replaces)
    /// keeps the shell from the agent with the reason, at start.
    #[test]
    fn a_workspace_the_sandbox_refuses_is_said_at_start() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = Home::new(tmp.path().join("home"));
        let settings = Settings::defaults(&home.config_path());
        let shm = tempfile::tempdir_in("/dev/shm").expect("a directory in /dev/shm");
        let ws = open_workspace(&home, shm.path()).expect("the file tools can use it");
        let s = shell(&home, &settings, &Env::default(), ws).expect("shell");
        assert!(!s.offered);
        let w = s.warnings.join("\n");
        assert!(w.contains("not offered") && w.contains("workspace"), "{w}");
    }
}
