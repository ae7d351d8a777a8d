//! pincer-tools: the things the agent can do, as [`pincer_core::tool::Tool`]s.
//!
//! Owns the [`Workspace`] (the one directory the file tools may touch, with
//! `..`, symlink escapes and pincer's own state refused — TL1), the
//! file tools (`file_read`, `file_list`, `file_write`, `file_edit`) and the
//! `shell` tool (TL2; every command in the OS sandbox of `pincer-sandbox`, see [`shell`]), the memory tools
//! `web_fetch` (see [`web`]: a domain allowlist, SSRF refusals, size and time caps)
//! and, with the `hw` feature, the hardware tools (`hw`, over `pincer-hw`).
//!
//! It does not decide policy: each tool only *declares* the risk of a call
//! ([`pincer_core::tool::Tool::assess`]; the shell tool asks the
//! `pincer-shell` classifier) and the gate decides. A tool runs only with the gate's
//! [`pincer_core::gate::Permit`], and keeps its workspace in a
//! [`pincer_core::gate::Gated`] that only the permit opens. It never reads
//! environment variables: the binary passes what it needs ([`ShellEnv`]).

mod args;
mod child;
pub mod config;
pub mod files;
#[cfg(feature = "hw")]
pub mod hw;
pub mod memory;
pub mod shell;
mod shell_sandbox;
pub mod web;
pub mod workspace;

pub use config::{NetworkMode, SandboxMode, ShellChoice, ShellConfig};
pub use files::{FileEdit, FileList, FileRead, FileWrite};
pub use memory::{LazyMemory, MemorySearch, MemoryWrite, SharedMemory};
pub use pincer_shell::Shell as ShellDialect;
pub use shell::{ShellEnv, ShellProgram, ShellProgramError, ShellTool};
pub use shell_sandbox::ShellSandbox;
#[cfg(feature = "web")]
pub use web::WebFetch;
pub use web::WebFetchConfig;
pub use workspace::{ResolutionMode, Workspace, WorkspaceError};

use pincer_core::tool::Tool;
use std::sync::Arc;
use std::time::Duration;

/// Caps on what one tool call may read, write, list or run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLimits {
    /// Bytes `file_read` returns per call.
    pub read_cap: usize,
    /// Bytes `file_write` may write, and the largest file `file_edit` edits.
    pub write_cap: usize,
    /// Entries `file_list` returns (the default and the maximum).
    pub list_max: usize,
    /// `shell` timeout when the call gives none (whole seconds are shown).
    pub shell_timeout_default: Duration,
    /// Largest `timeout_secs` a call may ask for.
    pub shell_timeout_max: Duration,
    /// Bytes of combined stdout + stderr kept per `shell` call.
    pub shell_output_cap: usize,
}

impl Default for ToolLimits {
    fn default() -> ToolLimits {
        ToolLimits {
            read_cap: 256 * 1024,
            write_cap: 1024 * 1024,
            list_max: 500,
            shell_timeout_default: Duration::from_secs(30),
            shell_timeout_max: Duration::from_secs(300),
            shell_output_cap: 64 * 1024,
        }
    }
}

/// The four file tools over `ws`.
pub fn file_tools(ws: Arc<Workspace>, limits: &ToolLimits) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(FileRead::new(ws.clone(), limits.read_cap)),
        Arc::new(FileList::new(ws.clone(), limits.list_max)),
        Arc::new(FileWrite::new(ws.clone(), limits.write_cap)),
        Arc::new(FileEdit::new(ws, limits.write_cap)),
    ]
}

/// The built-in tools: the four file tools and `shell` (sandboxed with
/// [`ShellSandbox::default`], [`ShellEnv::default`]: a standard `PATH`,
/// `LANG=C.UTF-8`). pincer itself assembles its tools from the config in
/// pincer-runtime.
pub fn kernel_tools(ws: Arc<Workspace>, limits: &ToolLimits, agent_id: &str) -> Vec<Arc<dyn Tool>> {
    let mut tools = file_tools(ws.clone(), limits);
    tools.push(Arc::new(ShellTool::new(
        ws,
        limits,
        agent_id,
        ShellEnv::default(),
    )));
    tools
}
