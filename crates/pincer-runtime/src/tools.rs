//! The agent's workspace and tools: one assembly for every front-end, so
//! `pincer agent`, `policy explain`, `doctor`, the demo and a gateway can
//! never disagree about what a tool may touch.

use crate::{Env, RuntimeError, Settings};
use pincer_core::home::Home;
use pincer_core::tool::Tool;
use pincer_hw::{DetectSource, Hardware};
use pincer_tools::{ToolLimits, Workspace, kernel_tools_with_shell_env};
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
/// workspace`, else the home's default. Only the default is created: a
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
        None => {
            let dir = home.default_workspace();
            pincer_core::fsutil::create_private_dir(&dir).map_err(|source| RuntimeError::Io {
                what: "cannot create the workspace",
                path: dir.clone(),
                source,
            })?;
            Ok(dir)
        }
    }
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

/// The agent's tools over `ws`: file tools, shell, memory, and the
/// hardware tools when `hw` is given.
pub fn agent_tools(
    home: &Home,
    settings: &Settings,
    env: &Env,
    ws: Arc<Workspace>,
    hw: Option<Arc<Hardware>>,
) -> Vec<Arc<dyn Tool>> {
    let agent = &settings.core.agent;
    let mut tools = kernel_tools_with_shell_env(
        ws,
        &ToolLimits::default(),
        &agent.agent_id,
        env.shell.clone(),
        &settings.core.policy.deny_commands,
    );
    let memory: pincer_tools::SharedMemory =
        Arc::new(pincer_tools::LazyMemory::new(home.memory_dir()));
    tools.push(Arc::new(pincer_tools::MemorySearch::new(memory.clone())));
    tools.push(Arc::new(pincer_tools::MemoryWrite::new(
        memory,
        &agent.agent_id,
    )));
    if let Some(hw) = hw {
        tools.extend(pincer_tools::hw::hardware_tools(hw, home.camera_dir()));
    }
    tools
}

/// The tools as the agent would get them, for judging calls without
/// running them (`pincer policy explain`, `doctor`): the same protected
/// paths, over the real workspace when it opens, else over the home's
/// default one (a misconfigured workspace must not stop an explanation);
/// the hardware tools whichever board was found (judging a call needs the
/// tool).
pub fn assessment_tools(
    home: &Home,
    settings: &Settings,
    env: &Env,
) -> Result<Vec<Arc<dyn Tool>>, RuntimeError> {
    let ws = match workspace_dir(home, settings, env, None)
        .and_then(|dir| open_workspace(home, &dir))
    {
        Ok(ws) => ws,
        Err(_) => {
            let dir = home.default_workspace();
            pincer_core::fsutil::create_private_dir(&dir).map_err(|source| RuntimeError::Io {
                what: "cannot create the workspace",
                path: dir.clone(),
                source,
            })?;
            open_workspace(home, &dir)?
        }
    };
    let hw = hardware(settings, env)?;
    Ok(agent_tools(home, settings, env, ws, Some(hw)))
}
